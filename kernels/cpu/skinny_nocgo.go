//go:build !cgo

package cpu

// skinnyTN: c[r*ldc+w] += Σ_t p[t*ldp+r]·q[t*ldq+w] for r < R, w < W,
// t < T; without cgo, skinnyTNGo.
func (features) skinnyTN(c []float32, ldc int, p []float32, ldp int, q []float32, ldq, R, W, T int) {
	skinnyTNGo(c, ldc, p, ldp, q, ldq, R, W, T)
}

// skinnyNT: o[t*ldo+r] = Σ_c q[t*ldq+c]·p[r*ldp+c] (+ beta·o[t*ldo+r] when
// beta ≠ 0); without cgo, skinnyNTGo.
func (features) skinnyNT(o []float32, ldo int, q []float32, ldq int, p []float32, ldp, T, R, K int, beta float32) {
	skinnyNTGo(o, ldo, q, ldq, p, ldp, T, R, K, beta)
}
