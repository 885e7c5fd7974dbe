package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestRows checks the rows kernels the build uses (AVX-512, AVX2 or plain C
// under cgo; Go without) against their plain-Go statement: tile edges (rows
// and inputs not multiples of 4), column tails not multiples of 8 or 16,
// column chunk edges (1024), and an output stride wider than the rows.
func TestRows(t *testing.T) {
	f := detect()
	t.Logf("rows kernel: %s", f.rowsKernel())
	r := rand.New(rand.NewPCG(3, 3))
	for _, C := range []int{1, 7, 8, 15, 16, 17, 33, 100, 1023, 1024, 1025, 2100} {
		for _, N := range []int{1, 2, 3, 4, 5, 8, 9, 33} {
			for _, rows := range []int{1, 3, 4, 5, 7, 9} {
				if C > 1024 && N > 9 {
					continue
				}
				t.Run(fmt.Sprintf("C=%d,N=%d,rows=%d", C, N, rows), func(t *testing.T) {
					ldo := rows + 3
					x := make([]float32, N*C)
					wf := make([]float32, rows*C)
					wh := make([]uint16, rows*C)
					for i := range x {
						x[i] = float32(r.NormFloat64())
					}
					for i := range wh {
						wh[i] = kernels.BF16(float32(r.NormFloat64()))
					}
					kernels.FromBF16(wf, wh)
					// Bound: the rounding of sums of C products of this size.
					tol := func(o, n int) float64 {
						var s float64
						for c := range C {
							s += math.Abs(float64(x[n*C+c] * wf[o*C+c]))
						}
						return 1e-5 * (1 + s)
					}
					check := func(name string, run func(out []float32), ref func(out []float32)) {
						got, want := make([]float32, N*ldo), make([]float32, N*ldo)
						for i := range got {
							got[i], want[i] = -7, -7 // the stride gap must stay untouched
						}
						run(got)
						ref(want)
						for n := range N {
							for o := range ldo {
								g, w := got[n*ldo+o], want[n*ldo+o]
								if o >= rows {
									if g != -7 {
										t.Fatalf("%s: wrote past the rows at n=%d o=%d", name, n, o)
									}
									continue
								}
								if math.Abs(float64(g-w)) > tol(o, n) || math.IsNaN(float64(g)) {
									t.Fatalf("%s n=%d o=%d: got %g, want %g", name, n, o, g, w)
								}
							}
						}
					}
					check("f32", func(o []float32) { f.f32Rows(o, ldo, x, N, C, wf) },
						func(o []float32) { f32RowsGo(o, ldo, x, N, C, wf) })
					check("bf16", func(o []float32) { f.bf16Rows(o, ldo, x, N, C, wh) },
						func(o []float32) { bf16RowsGo(o, ldo, x, N, C, wh) })
				})
			}
		}
	}
}

// BenchmarkRows times the rows kernels on one core at the 0.5B shape's
// widest projection (896 → 4864) for the decode batch sizes.
func BenchmarkRows(b *testing.B) {
	const C, rows = 896, 4864
	f := detect()
	for _, N := range []int{1, 4, 8, 32} {
		x := make([]float32, N*C)
		wf := make([]float32, rows*C)
		wh := make([]uint16, rows*C)
		for i := range wh {
			wf[i] = float32(i%7) * 0.01
			wh[i] = kernels.BF16(wf[i])
		}
		out := make([]float32, N*rows)
		b.Run(fmt.Sprintf("f32/N=%d", N), func(b *testing.B) {
			b.SetBytes(int64(4 * rows * C))
			for b.Loop() {
				f.f32Rows(out, rows, x, N, C, wf)
			}
			b.ReportMetric(float64(2*N*rows*C)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("bf16/N=%d", N), func(b *testing.B) {
			b.SetBytes(int64(2 * rows * C))
			for b.Loop() {
				f.bf16Rows(out, rows, x, N, C, wh)
			}
			b.ReportMetric(float64(2*N*rows*C)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkRowsHead streams a weight bigger than the last-level cache (the
// 0.5B shape's tied LM head, 151936 × 896) through bf16Rows at N = 1: the
// figure is the memory bandwidth one core gets in decode.
func BenchmarkRowsHead(b *testing.B) {
	const C, rows = 896, 151936
	x := make([]float32, C)
	wh := make([]uint16, rows*C)
	for i := range wh {
		wh[i] = kernels.BF16(float32(i%2001-1000) * 3e-5)
	}
	for i := range x {
		x[i] = 1
	}
	out := make([]float32, rows)
	b.SetBytes(int64(2 * rows * C))
	f := detect()
	for b.Loop() {
		f.bf16Rows(out, rows, x, 1, C, wh)
	}
}
