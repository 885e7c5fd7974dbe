// Package constrain is hone-serve's constrained decoding for
// response_format: a byte-level pushdown recogniser of compact JSON, driven
// by a subset of JSON Schema, and JSON, a per-sequence constraint that masks
// every token whose bytes cannot continue a valid document (serve/engine's
// Constraint seam). An end-of-sequence token is allowed exactly when the
// document is complete.
//
// Supported schema keywords: type (object, array, string, number, integer,
// boolean, null), properties (every property is emitted, in the schema's
// order), items, enum, const, maxLength. Keywords that would change which
// documents are valid and are not implemented (anyOf, oneOf, allOf, $ref, …)
// make Compile fail, so the server answers 400 instead of pretending.
// Whitespace is never generated; numbers are capped at 24 bytes.
package constrain
