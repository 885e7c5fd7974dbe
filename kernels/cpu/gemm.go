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

// sgemmB16Func is an sgemmFunc whose b holds bfloat16 bits.
type sgemmB16Func func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int)

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

// sgemm is the backend's GEMM with quick returns. When the backend splits
// GEMMs (Options.SplitGEMM) and the product is large, C is cut into blocks
// of rows (or of columns, when it is wider than tall), each computed by one
// single-threaded BLAS call on its own worker: every part re-packs the
// shared operand, which costs about 1/(its rows) of its arithmetic.
func (b *Backend) sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, bb []float32, ldb int, beta float32, c []float32, ldc int) {
	b.sgemmParts(b.splitGEMM, tA, tB, m, n, k, lda, ldb, beta, c, ldc, func(m, n, ao, bo, co int) {
		b.gemm(tA, tB, m, n, k, alpha, a[ao:], lda, bb[bo:], ldb, beta, c[co:], ldc)
	})
}

// sgemmB16 is sgemm with a bfloat16 B, for backends whose GEMM reads one
// (gemmB16 not nil).
func (b *Backend) sgemmB16(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, bb []uint16, ldb int, beta float32, c []float32, ldc int) {
	b.sgemmParts(b.splitGEMM, tA, tB, m, n, k, lda, ldb, beta, c, ldc, func(m, n, ao, bo, co int) {
		b.gemmB16(tA, tB, m, n, k, alpha, a[ao:], lda, bb[bo:], ldb, beta, c[co:], ldc)
	})
}

// sgemmParts runs a GEMM of C [m, n] as sgemm describes (splitting only
// when splitOK), calling part for
// the whole product or for each block: its m×n elements of C start at
// element offsets ao in a, bo in b and co in c.
func (b *Backend) sgemmParts(splitOK, tA, tB bool, m, n, k, lda, ldb int, beta float32, c []float32, ldc int, part func(m, n, ao, bo, co int)) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	split, byRows := b.gemmSplit(splitOK, m, n, k)
	if !split {
		part(m, n, 0, 0, 0)
		return
	}
	w := b.pool.workers
	if byRows {
		// Rows of C are rows of op(A): a's row i, or its column i when tA.
		parts := min(2*w, m/gemmSplitMin)
		b.split(m, parts, func(lo, hi int) {
			ao := lo * lda
			if tA {
				ao = lo
			}
			part(hi-lo, n, ao, 0, lo*ldc)
		})
		return
	}
	// Columns of C are columns of op(B): b's column j, or its row j when tB.
	parts := min(2*w, n/gemmSplitMin)
	b.split(n, parts, func(lo, hi int) {
		bo := lo
		if tB {
			bo = lo * ldb
		}
		part(m, hi-lo, 0, bo, lo)
	})
}

// gemmSplit says whether sgemmParts splits a product of C [m, n] over k,
// and whether by rows of C (else by columns); splitOK is whether the GEMM
// may be split at all (Options.SplitGEMM for sgemm).
func (b *Backend) gemmSplit(splitOK bool, m, n, k int) (split, byRows bool) {
	if !splitOK || m*n*k < gemmSplitWork*b.minParallel || max(m, n) < 2*gemmSplitMin {
		return false, false
	}
	return true, m >= n
}

// gemmSplitWork × Options.MinParallel is the product size m·n·k from which
// sgemm splits (2M multiply-adds by default: about 10 µs of one core, well
// above a worker's wake-up); gemmSplitMin is the fewest rows or columns of
// one part.
const (
	gemmSplitWork = 64
	gemmSplitMin  = 16
)
