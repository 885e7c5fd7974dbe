package ref

import (
	"math"

	"github.com/hone-rl/hone/kernels"
)

// RowMax returns the largest entry of x that is not NaN; −Inf when there
// is none (math.Max would return NaN for a NaN entry).
func (Backend) RowMax(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

// ExpShift writes dst[i] = e^((x[i]−mu)·scale) (argument formed in
// float32, 0 below −87) and returns their float64 sum.
func (Backend) ExpShift(dst, x []float32, mu, scale float32) float64 {
	if dst != nil {
		kernels.Need("ExpShift", "dst", len(dst), len(x))
	}
	var s float64
	for i, v := range x {
		a := float64((v - mu) * scale)
		e := 0.0
		if a >= -87 {
			e = math.Exp(a)
		}
		if dst != nil {
			dst[i] = float32(e)
		}
		s += e
	}
	return s
}
