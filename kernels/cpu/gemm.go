package cpu

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// sgemmFunc computes, for row-major matrices with leading dimensions,
//
//	c[i*ldc+j] = alpha·Σ_p op(a)[i,p]·op(b)[p,j] + beta·c[i*ldc+j]
//
// for i < m, j < n, p < k, where op(a)[i,p] is a[i*lda+p] or, when tA,
// a[p*lda+i]; likewise b. With beta = 0, c's old contents are ignored.
// Callers check sizes and quick-return on m = 0 or n = 0.
type sgemmFunc func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

func gonumSgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if k == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	if tA {
		ta = blas.Trans
	}
	if tB {
		tb = blas.Trans
	}
	gonum.Implementation{}.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// scaleC sets c = beta·c (beta = 0 clears, ignoring NaN).
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// gemm is the backend's sgemm with quick returns.
func (b *Backend) sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, bb []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	b.gemm(tA, tB, m, n, k, alpha, a, lda, bb, ldb, beta, c, ldc)
}
