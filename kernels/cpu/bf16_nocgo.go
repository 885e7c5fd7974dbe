//go:build !cgo

package cpu

// bf16Gemv: out[o] = Σ_c x[c]·F32(w[o*C+c]); plain Go without cgo.
func bf16Gemv(out, x []float32, w []uint16, C int) { bf16GemvGo(out, x, w, C) }
