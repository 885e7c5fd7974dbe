//go:build !cgo

package cpu

// rowsLevel is 0 without cgo: the rows kernels are Go.
func rowsLevel() int { return 0 }

// rowsKernel names the rows kernel, for tests and reports.
func (features) rowsKernel() string { return "go" }

// f32Rows: out[n*ldo+o] = Σ_c x[n*C+c]·w[o*C+c] for n < N, o < len(w)/C;
// without cgo, f32Gemv (gonum's Sdot) per input. C ≥ 1.
func (f features) f32Rows(out []float32, ldo int, x []float32, N, C int, w []float32) {
	rows := len(w) / C
	for n := range N {
		f.f32Gemv(out[n*ldo:n*ldo+rows], x[n*C:(n+1)*C], w, C, C)
	}
}

// bf16Rows is f32Rows with bfloat16 weights; without cgo, bf16GemvGo per
// input.
func (features) bf16Rows(out []float32, ldo int, x []float32, N, C int, w []uint16) {
	rows := len(w) / C
	for n := range N {
		bf16GemvGo(out[n*ldo:n*ldo+rows], x[n*C:(n+1)*C], w[:rows*C], C)
	}
}
