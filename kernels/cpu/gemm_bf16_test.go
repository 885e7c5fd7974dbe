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
// 0 (NaN in C ignored) and 1, against float64 sums of the rounded operands;
// with the AVX2 conversion and packing (where the CPU has AVX2) and without,
// leading dimensions of B odd (tB then packs word by word) and even.
// The native kernel runs too where the CPU has AVX512-BF16.
func TestBF16GEMMBlocks(t *testing.T) {
	kinds := []bool{false}
	if hasAVX512BF16() {
		kinds = append(kinds, true)
	}
	fasts := []bool{false}
	if bf16GEMMFastOK() {
		fasts = append(fasts, true)
	}
	for _, native := range kinds {
		for _, fast := range fasts {
			g := bf16GEMMWith(native, fast)
			for _, sh := range [][3]int{{1, 1, 1}, {13, 33, 3}, {97, 40, 1025}, {12, 1030, 514}, {100, 1100, 7}, {30, 70, 600}} {
				m, n, k := sh[0], sh[1], sh[2]
				for _, tB := range []bool{false, true} {
					for _, beta := range []float32{0, 1} {
						name := fmt.Sprintf("native=%v,fast=%v,m=%d,n=%d,k=%d,tB=%v,beta=%g", native, fast, m, n, k, tB, beta)
						t.Run(name, func(t *testing.T) { checkBGEMM(t, g, m, n, k, tB, beta) })
					}
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

// TestBF16Round: the GEMM's rounding of A, scalar and AVX2, is kernels.BF16
// bit for bit, ties to even, NaN, infinities, the largest float (to Inf),
// denormals and signed zeros included.
func TestBF16Round(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-40, -3e-39,
		math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000), math.Float32frombits(0x3f80ffff),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xff800001), math.Float32frombits(0x7f7f8000)}
	r := rand.New(rand.NewPCG(1, 2))
	for len(vals) < 45 { // 45: eight-wide blocks and a scalar tail, odd length
		vals = append(vals, math.Float32frombits(r.Uint32()))
	}
	fasts := []bool{false}
	if bf16GEMMFastOK() {
		fasts = append(fasts, true)
	}
	for _, fast := range fasts {
		dst := make([]uint16, len(vals)+1)
		dst[len(vals)] = 0xffff
		bf16RoundRow(dst, vals, fast)
		for i, v := range vals {
			if want := kernels.BF16(v); dst[i] != want {
				t.Errorf("fast=%v: %g (%#08x) rounds to %#04x, want %#04x", fast, v, math.Float32bits(v), dst[i], want)
			}
		}
		if dst[len(vals)] != 0 {
			t.Errorf("fast=%v: padding %#04x, want 0", fast, dst[len(vals)])
		}
	}
}

// TestBF16RowsKernel checks the decode kernel against float64 sums on
// shapes off its 4-row × 6-input tiles and its 32-wide k steps, the output
// rows strided (ldo > rows); the native kernel too where the CPU has it.
func TestBF16RowsKernel(t *testing.T) {
	kinds := []bool{false}
	if hasAVX512BF16() {
		kinds = append(kinds, true)
	}
	for _, native := range kinds {
		k := bf16RowsKernel(native)
		for _, sh := range [][3]int{{1, 1, 1}, {7, 31, 5}, {8, 32, 4}, {13, 33, 9}, {64, 100, 17}, {6, 896, 12}} {
			N, C, rows := sh[0], sh[1], sh[2]
			t.Run(fmt.Sprintf("native=%v,N=%d,C=%d,rows=%d", native, N, C, rows), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(N), uint64(C*rows)))
				x := make([]float32, N*C)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				w := make([]uint16, rows*C)
				for i := range w {
					w[i] = kernels.BF16(float32(r.NormFloat64()))
				}
				a16 := make([]uint16, N*C)
				bf16RoundRows(a16, x, N, C)
				ldo := rows + 3
				out := make([]float32, N*ldo)
				for i := range out {
					out[i] = -7
				}
				k(out, ldo, a16, N, C, w)
				for n := 0; n < N; n++ {
					for o := 0; o < ldo; o++ {
						got := float64(out[n*ldo+o])
						if o >= rows {
							if got != -7 {
								t.Fatalf("out[%d, %d] (past the rows) = %g, want untouched", n, o, got)
							}
							continue
						}
						var want float64
						for c := 0; c < C; c++ {
							want += float64(kernels.F32(kernels.BF16(x[n*C+c]))) * float64(kernels.F32(w[o*C+c]))
						}
						if e := math.Abs(got - want); !(e <= 1e-5*math.Sqrt(float64(C))*(1+math.Abs(want))) {
							t.Fatalf("out[%d, %d] = %g, want %g", n, o, got, want)
						}
					}
				}
			})
		}
	}
}

// The bf16 GEMM's overheads outside the micro-kernel, on the 0.5B MLP
// shape (x [2048, 896], W [4864, 896]): rounding A, packing all of B as a
// linear layer's forward (tB) and backward (!tB) read it. They run on any
// CPU; compare them with the product's 8.9 G multiply-adds.
//
//	go test ./kernels/cpu -run - -bench BF16Overhead
func BenchmarkBF16OverheadRoundA(b *testing.B) {
	const m, k = 2048, 896
	a := make([]float32, m*k)
	for i := range a {
		a[i] = float32(i%97) * 0.01
	}
	dst := make([]uint16, m*k)
	b.SetBytes(4 * m * k)
	for b.Loop() {
		bf16RoundRowsPad(dst, k, a, k, m, k)
	}
}

func BenchmarkBF16OverheadPackB(b *testing.B) {
	const n, k = 4864, 896
	w := make([]uint16, n*k)
	for i := range w {
		w[i] = 0x3f80 + uint16(i%13)
	}
	for _, tB := range []bool{true, false} {
		b.Run(fmt.Sprintf("tB=%v", tB), func(b *testing.B) {
			nn, kk, ldb := n, k, k // forward: op(W) = Wᵀ [896, 4864]: k = 896, n = 4864
			if !tB {
				nn, kk, ldb = k, n, k // backward: op(W) = W [4864, 896]: k = 4864, n = 896
			}
			pre := make([]uint32, bprepackWords(nn, kk))
			panels := (nn + bprepackPanel - 1) / bprepackPanel
			b.SetBytes(2 * n * k)
			for b.Loop() {
				bprepackPanels(pre, w, ldb, tB, nn, kk, 0, panels)
			}
		})
	}
}
