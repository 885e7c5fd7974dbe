//go:build !cgo

package cpu

import "gonum.org/v1/gonum/blas/gonum"

// gemvLevel is 0 without cgo: the matrix-vector kernels are Go.
func gemvLevel() int { return 0 }

// bf16Gemv: out[o] = Σ_c x[c]·F32(w[o*cols+c]); plain Go without cgo.
func (features) bf16Gemv(out, x []float32, w []uint16, cols int) { bf16GemvGo(out, x, w, cols) }

// f32Gemv: out[o] = Σ_c x[c]·w[o*ldw+c]; without cgo each row is gonum's
// Sdot (assembly). The loop it must equal is f32GemvGo.
func (features) f32Gemv(out, x, w []float32, cols, ldw int) {
	if cols == 0 {
		clear(out)
		return
	}
	for o := range out {
		out[o] = gonum.Implementation{}.Sdot(cols, x, 1, w[o*ldw:o*ldw+cols], 1)
	}
}

// f32GemvT: out[c] = Σ_r p[r]·v[r*ldv+c]; without cgo, gonum's Saxpy per row.
func (features) f32GemvT(out, p, v []float32, ldv int) {
	clear(out)
	for r, pr := range p {
		gonum.Implementation{}.Saxpy(len(out), pr, v[r*ldv:r*ldv+len(out)], 1, out, 1)
	}
}
