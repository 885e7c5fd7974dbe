// Package ref is the reference implementation of kernels.Backend: plain
// loops, one op per function, written for reading and never optimized. It is
// the oracle every other backend is checked against (kernels/kerneltest), and
// the loop each optimized routine must equal.
//
// Reductions (dot products, sums of squares, logsumexp, softmax sums)
// accumulate in float64 so that the oracle's own rounding is far below the
// tolerances the suite grants a float32 backend. Formulas and shapes are
// stated on the kernels.Backend methods; this package follows them literally.
package ref
