//go:build !cgo

package cpu

import "gonum.org/v1/gonum/blas/gonum"

// bf16Gemv: out[o] = Σ_c x[c]·F32(w[o*C+c]); plain Go without cgo.
func bf16Gemv(out, x []float32, w []uint16, C int) { bf16GemvGo(out, x, w, C) }

// f32Gemv: out[o] = Σ_c x[c]·w[o*C+c]; without cgo each row is gonum's Sdot
// (assembly), the loop it must equal is f32GemvGo.
func f32Gemv(out, x, w []float32, C int) {
	if C == 0 {
		clear(out)
		return
	}
	for o := range out {
		out[o] = gonum.Implementation{}.Sdot(C, x, 1, w[o*C:(o+1)*C], 1)
	}
}
