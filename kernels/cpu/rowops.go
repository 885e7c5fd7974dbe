package cpu

import (
	"math"

	"github.com/hone-rl/hone/kernels"
)

// Row operations (kernels.Backend's sampling rows): hone-serve's sampler
// turns one logits row per sequence into probabilities every step, over a
// vocabulary of up to 151,936 entries, in its own goroutines. They run on
// the calling goroutine (no workers) and use the AVX-512 code where the CPU
// has it, the Go loops otherwise.

// RowMax returns the largest entry of x that is not NaN; −Inf when there
// is none. (rowMax, the training ops' own, lets a NaN through instead.)
func (b *Backend) RowMax(x []float32) float32 {
	switch {
	case len(x) == 0:
		return float32(math.Inf(-1))
	case b.vec.rowMax != nil:
		return b.vec.rowMax(x)
	}
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m { // never for NaN
			m = v
		}
	}
	return m
}

// ExpShift writes dst[i] = e^((x[i]−mu)·scale) for each i < len(x) and
// returns the sum of the values written, accumulated in float64. It is the
// exponent pass of a softmax at temperature 1/scale: with mu the maximum of
// x and scale > 0 every argument is ≤ 0, the range it is accurate for
// (within a few ulp); arguments below −87, −Inf among them, give 0. dst may
// be x; it must hold len(x) values, or be nil when only the sum is wanted
// (a log-sum-exp, which then costs no stores).
func (b *Backend) ExpShift(dst, x []float32, mu, scale float32) float64 {
	if dst != nil {
		kernels.Need("ExpShift", "dst", len(dst), len(x))
	}
	if len(x) == 0 {
		return 0
	}
	if b.vec.expShift != nil {
		return b.vec.expShift(dst, x, mu, scale)
	}
	return expShiftGo(dst, x, mu, scale)
}

func expShiftGo(dst, x []float32, mu, scale float32) float64 {
	var s float64
	for i, v := range x {
		e := exp32((v - mu) * scale)
		if dst != nil {
			dst[i] = e
		}
		s += float64(e)
	}
	return s
}
