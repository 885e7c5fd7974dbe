// Package constrain is hone-serve's constrained decoding for
// response_format: a byte-level pushdown recogniser of compact JSON, driven
// by a subset of JSON Schema, and JSON, a per-sequence constraint that masks
// every token whose bytes cannot continue a valid document (serve/engine's
// Constraint seam: Mask before each choice, Accept after). An
// end-of-sequence token is allowed exactly when the document is complete,
// so even a random model's finished output parses and fits the schema.
//
// Schema keywords enforced: type (object, array, string, number, integer,
// boolean, null, or a list of them, plus OpenAPI's nullable), properties
// (every property is emitted, in the schema's order, which satisfies
// required and additionalProperties: false), required (must name declared
// properties), additionalProperties as the value schema of an object
// without properties, items, minItems, maxItems, enum and const (any JSON
// values; beside them only type and nullable, which keep the literals of
// the types named, and any other keyword is refused), minLength and maxLength (characters), minimum, maximum,
// exclusiveMinimum and exclusiveMaximum (checked on every prefix: a number
// that cannot end within range is never started or extended; compared as
// exact decimals, as JSON Schema does, so 6.0000000000000003 fails a
// maximum of 6 though its float64 is 6; a bound beyond ±1e30 or nearer 0
// than ±1e-30 acts as that limit, which admits the same numbers of at
// most 24 bytes without exponent). Annotations
// (title, description, default, examples, format, $schema, $defs, …) are
// ignored. Every other keyword (anyOf, oneOf, allOf, $ref, pattern,
// multipleOf, minProperties, …) makes Compile fail with the keyword's
// name and place, so the server answers 400 instead of pretending.
//
// Tagged builds, beside Compile, the one kind of anyOf a forced tool call
// needs: documents that begin with one of several literal prefixes
// ({"name":"f","arguments":), the prefix choosing the schema of the value
// that follows, then a literal suffix.
//
// Output shape: compact JSON only — no whitespace at all, which every
// parser reads and which leaves a model no way to loop in blanks. Objects
// and arrays nest at most 128 deep (an unconstrained value — json_object,
// {} — could otherwise nest until max_tokens, and each token's mask costs
// time in proportion to the depth). Numbers
// are at most 24 bytes with at most two exponent digits (every number fits
// a float64); numbers with a range get no exponent. Strings are valid
// UTF-8 (no overlong forms, no surrogates), and a \u escape of a UTF-16
// surrogate comes only as a high half followed by its low half (one
// character for maxLength), never alone.
//
// Termination: every state knows the fewest bytes that complete the
// document (State.MinBytes; exact, which a property test checks). With
// WithMaxTokens(max_tokens) a token is allowed only if, after it, the
// shortest completion at one byte per token plus the end token still fits,
// so with a byte-level vocabulary the document is always complete and
// ends with "stop" within max_tokens, provided max_tokens exceeds the
// schema's shortest document; below that the output heads straight for
// the end and is cut with finish_reason "length" (not valid JSON). Without
// WithMaxTokens, strings and arrays may grow until max_tokens cuts them.
// When the model gives -Inf to every token that could continue the
// document (the tokenizer holds every byte, so only the model's logits
// can leave none), Mask leaves the whole row -Inf and the engine ends the
// sequence with a NoCandidateError naming the constraint: hone-serve's 500
// of code constraint_no_token.
//
// Speed: Mask tests the 64 most likely tokens first in a vocabulary over
// 8192 tokens and keeps only those that fit (a top-k style truncation of
// the distribution); only when none fits does it test every token. Build
// an Index once per tokenizer and pass it instead of the tokenizer: it
// holds each token's bytes and groups tokens by first byte, so a scan
// skips every token whose first byte cannot come next.
package constrain
