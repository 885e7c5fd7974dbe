//go:build cgo

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestBF16GEMMBlocks checks the bfloat16 GEMM directly on shapes that cross
// every block edge (BMC = 96 rows, BNC = 1024 columns, BKC = 512 k, odd k,
// tiles of 12×32), with leading dimensions wider than the matrices and beta
// 0 (NaN in C ignored) and 1, against float64 sums of the rounded operands.
// The native kernel runs too where the CPU has AVX512-BF16.
func TestBF16GEMMBlocks(t *testing.T) {
	kinds := []bool{false}
	if hasAVX512BF16() {
		kinds = append(kinds, true)
	}
	for _, native := range kinds {
		g := bf16GEMM(native)
		for _, sh := range [][3]int{{1, 1, 1}, {13, 33, 3}, {97, 40, 1025}, {12, 1030, 514}, {100, 1100, 7}} {
			m, n, k := sh[0], sh[1], sh[2]
			for _, tB := range []bool{false, true} {
				for _, beta := range []float32{0, 1} {
					name := fmt.Sprintf("native=%v,m=%d,n=%d,k=%d,tB=%v,beta=%g", native, m, n, k, tB, beta)
					t.Run(name, func(t *testing.T) { checkBGEMM(t, g, m, n, k, tB, beta) })
				}
			}
		}
	}
}

func checkBGEMM(t *testing.T, g bgemmFunc, m, n, k int, tB bool, beta float32) {
	r := rand.New(rand.NewPCG(uint64(m*n), uint64(k)))
	lda, ldc := k+3, n+5
	ldb, rowsB := k+2, n // tB: b [n, k]
	if !tB {
		ldb, rowsB = n+2, k // b [k, n]
	}
	a := make([]float32, m*lda)
	for i := range a {
		a[i] = float32(r.NormFloat64())
	}
	b := make([]uint16, rowsB*ldb)
	for i := range b {
		b[i] = kernels.BF16(float32(r.NormFloat64()))
	}
	c := make([]float32, m*ldc)
	for i := range c {
		c[i] = float32(r.NormFloat64())
		if beta == 0 {
			c[i] = float32(math.NaN())
		}
	}
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				at := p*ldb + j
				if tB {
					at = j*ldb + p
				}
				bv := b[at]
				s += float64(kernels.F32(kernels.BF16(a[i*lda+p]))) * float64(kernels.F32(bv))
			}
			if beta != 0 {
				s += float64(c[i*ldc+j])
			}
			want[i*n+j] = s
		}
	}
	pad := c[m*ldc-ldc+n:] // past the last row's n columns: must stay untouched
	padWas := append([]float32(nil), pad...)
	g(tB, m, n, k, a, lda, b, ldb, beta, c, ldc)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			got, w := float64(c[i*ldc+j]), want[i*n+j]
			if e := math.Abs(got - w); !(e <= 1e-5*math.Sqrt(float64(k))*(1+math.Abs(w))) {
				t.Fatalf("c[%d,%d] = %g, want %g", i, j, got, w)
			}
		}
	}
	for i := range pad {
		if math.Float32bits(pad[i]) != math.Float32bits(padWas[i]) {
			t.Fatalf("wrote past column %d of the last row", n)
		}
	}
}
