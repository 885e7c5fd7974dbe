//go:build cgo

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

func needAVX512(t testing.TB) {
	if !detect().avx512 {
		t.Skip("CPU without AVX-512F: the built-in GEMM is not offered")
	}
}

// The built-in GEMM against gonum on shapes around its blocking (MR 8, NR
// 32, KC 256, MC 128, NC 4096), all transposes, strided operands, and
// beta 0 (over NaN), 1 and 0.5; n < 16 with m ≥ 128 takes the swapped
// (Cᵀ) path. The bfloat16-B form must equal it on the widened B, bit for bit.
func TestAVX512Sgemm(t *testing.T) {
	needAVX512(t)
	avx512, avx512B16 := avx512GEMM()
	r := rand.New(rand.NewPCG(5, 6))
	shapes := [][3]int{{1, 1, 1}, {7, 31, 3}, {8, 32, 256}, {9, 33, 257}, {129, 65, 300}, {17, 2049, 5}, {200, 40, 513}, {300, 8, 70}, {257, 15, 300}, {9, 4100, 20}}
	for _, sh := range shapes {
		m, n, k := sh[0], sh[1], sh[2]
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, beta := range []float32{0, 1, 0.5} {
					t.Run(fmt.Sprintf("%dx%dx%d,tA=%v,tB=%v,beta=%g", m, n, k, tA, tB, beta), func(t *testing.T) {
						lda, ldb, ldc := k+3, n+2, n+1
						if tA {
							lda = m + 3
						}
						if tB {
							ldb = k + 2
						}
						rowsA, rowsB := m, k
						if tA {
							rowsA = k
						}
						if tB {
							rowsB = n
						}
						a, b := make([]float32, rowsA*lda), make([]float32, rowsB*ldb)
						for i := range a {
							a[i] = float32(r.NormFloat64())
						}
						for i := range b {
							b[i] = float32(r.NormFloat64())
						}
						got, want := make([]float32, m*ldc), make([]float32, m*ldc)
						for i := range got {
							got[i] = float32(r.NormFloat64())
							if beta == 0 {
								got[i] = float32(math.NaN())
							}
							want[i] = got[i]
						}
						c0 := append([]float32(nil), got...)
						avx512(tA, tB, m, n, k, 0.75, a, lda, b, ldb, beta, got, ldc)
						gonumSgemm(tA, tB, m, n, k, 0.75, a, lda, b, ldb, beta, want, ldc)
						// With B in bfloat16 the packed panels are those of the
						// widened B: the same bits as the float32 GEMM of it.
						b16, wide := make([]uint16, len(b)), make([]float32, len(b))
						kernels.ToBF16(b16, b)
						kernels.FromBF16(wide, b16)
						got16, want16 := append([]float32(nil), c0...), append([]float32(nil), c0...)
						avx512B16(tA, tB, m, n, k, 0.75, a, lda, b16, ldb, beta, got16, ldc)
						avx512(tA, tB, m, n, k, 0.75, a, lda, wide, ldb, beta, want16, ldc)
						// Except where float32 takes the swapped path and
						// sums in another order (bf16 B never swaps).
						swapped := n < 16 && m >= 128
						for i := range got16 {
							g, w := got16[i], want16[i]
							if swapped && math.Abs(float64(g-w)) <= 1e-5*(1+math.Abs(float64(w))) {
								continue
							}
							if math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("bf16 B: c[%d] = %g, the widened float32 B gives %g", i, g, w)
							}
						}
						for i := 0; i < m; i++ {
							for j := 0; j < ldc; j++ {
								g, w := got[i*ldc+j], want[i*ldc+j]
								if j >= n { // outside C: untouched
									if math.Float32bits(g) != math.Float32bits(w) {
										t.Fatalf("c[%d,%d] (padding) changed to %g", i, j, g)
									}
									continue
								}
								if math.Abs(float64(g-w)) > 1e-4*(1+math.Abs(float64(w))) {
									t.Fatalf("c[%d,%d] = %g, want %g", i, j, g, w)
								}
							}
						}
					})
				}
			}
		}
	}
}

func TestConformanceAVX512(t *testing.T) {
	needAVX512(t)
	for _, split := range []int{-1, 1} {
		t.Run(fmt.Sprintf("split=%d", split), func(t *testing.T) {
			b, err := New(Options{GEMM: "avx512", MinParallel: 1, Workers: 3, LogprobRows: 4, SplitGEMM: split})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			kerneltest.Run(t, b)
		})
	}
}

// BenchmarkSgemm compares the GEMMs on the 0.5B training shapes, one thread.
func BenchmarkSgemm(bm *testing.B) {
	for _, sh := range []struct {
		name    string
		m, n, k int
		tB      bool
	}{{"fwd_2048x4864x896_NT", 2048, 4864, 896, true}, {"bwd_2048x896x4864_NN", 2048, 896, 4864, false}} {
		for _, g := range []string{"avx512", "openblas"} {
			f, _, _, err := pickGEMM(g, detect())
			if err != nil {
				continue
			}
			bm.Run(sh.name+"/"+g, func(bm *testing.B) {
				a, b, c := make([]float32, sh.m*sh.k), make([]float32, sh.k*sh.n), make([]float32, sh.m*sh.n)
				ldb := sh.n
				if sh.tB {
					ldb = sh.k
				}
				for i := 0; i < bm.N; i++ {
					f(false, sh.tB, sh.m, sh.n, sh.k, 1, a, sh.k, b, ldb, 0, c, sh.n)
				}
				bm.ReportMetric(2*float64(sh.m*sh.n*sh.k)*float64(bm.N)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// The AVX-512 element-wise kernels against their Go loops, on lengths
// around the 16-lane width and over the exp range the softmax uses.
func TestVecKernels(t *testing.T) {
	needAVX512(t)
	vec := avx512Vec()
	r := rand.New(rand.NewPCG(7, 8))
	near := func(what string, i int, got, want float64, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol*(1+math.Abs(want)) || math.IsNaN(got) {
			t.Fatalf("%s[%d] = %g, want %g", what, i, got, want)
		}
	}
	for _, n := range []int{1, 15, 16, 17, 33, 100} {
		g, u, d := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range g {
			g[i] = float32(8 * r.NormFloat64())
			u[i] = float32(r.NormFloat64())
			d[i] = float32(r.NormFloat64())
		}
		g[0] = -100 // e^−100 underflows: σ = 0, silu = −0
		out := make([]float32, n)
		vec.swigluFwd(out, g, u)
		dg, du := make([]float32, n), make([]float32, n)
		for i := range dg {
			dg[i], du[i] = 0.5, -0.25
		}
		vec.swigluBwd(dg, du, d, g, u)
		for i := range g {
			s := 1 / (1 + math.Exp(-float64(g[i])))
			gi := float64(g[i])
			near("swiglu", i, float64(out[i]), gi*s*float64(u[i]), 1e-6)
			near("dgate", i, float64(dg[i]), 0.5+float64(d[i])*float64(u[i])*s*(1+gi*(1-s)), 1e-5)
			near("dup", i, float64(du[i]), -0.25+float64(d[i])*gi*s, 1e-5)
		}

		x := make([]float32, n)
		for i := range x {
			x[i] = float32(-90 * r.Float64())
		}
		mx := x[0]
		for _, v := range x {
			mx = max(mx, v)
		}
		if got := vec.rowMax(x); got != mx {
			t.Fatalf("rowMax = %g, want %g", got, mx)
		}
		var s, tt float64
		for _, v := range x {
			dd := float64(v - mx)
			e := math.Exp(dd)
			if dd < -87 {
				e = 0
			}
			s += e
			tt += e * dd
		}
		gs, gt := vec.expSums(x, mx)
		near("expSums s", n, gs, s, 1e-6)
		near("expSums t", n, gt, tt, 1e-5)

		row := append([]float32(nil), x...)
		l, dl, de, H := mx+0.3, float32(0.7), float32(-0.2), float32(1.5)
		vec.logprobGrad(row, l, dl, de, H)
		for j, v := range x {
			lp := float64(v - l)
			p := math.Exp(lp)
			if lp < -87 {
				p = 0
			}
			near("logprobGrad", j, float64(row[j]), -float64(dl)*p-float64(de)*p*(lp+float64(H)), 1e-6)
		}
	}
}

// TestVecRMSNorm checks the AVX-512 RMSNorm rows against the Go loops (a
// backend without the vector kernels) on widths around the 16-lane steps
// and on rows split among workers: rstd and dinp within float32 rounding
// of the Go loop's (the sums run in another order), and out exactly
// x·rstd·w with the kernel's own rstd (no FMA contraction).
func TestVecRMSNorm(t *testing.T) {
	needAVX512(t)
	r := rand.New(rand.NewPCG(9, 9))
	vb, err := New(Options{Workers: 2, MinParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer vb.Close()
	gb, err := New(Options{Workers: 2, MinParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer gb.Close()
	gb.vec.rmsFwd, gb.vec.rmsBwd = nil, nil
	if vb.vec.rmsFwd == nil || vb.vec.rmsBwd == nil {
		t.Fatal("no AVX-512 RMSNorm kernels on an AVX-512 CPU")
	}
	rnd := func(n int, s float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(s * r.NormFloat64())
		}
		return x
	}
	for _, N := range []int{1, 3, 7} {
		for _, C := range []int{1, 15, 16, 17, 33, 901} {
			x, w, d := rnd(N*C, 3), rnd(C, 1), rnd(N*C, 1)
			vo, go_ := make([]float32, N*C), make([]float32, N*C)
			vr, gr := make([]float32, N), make([]float32, N)
			vb.RMSNormForward(vo, vr, x, w, N, C, 1e-6)
			gb.RMSNormForward(go_, gr, x, w, N, C, 1e-6)
			for n := range N {
				if math.Abs(float64(vr[n]-gr[n])) > 2.5e-7*math.Abs(float64(gr[n])) {
					t.Fatalf("N=%d C=%d: rstd[%d] = %g, want %g", N, C, n, vr[n], gr[n])
				}
				for c := range C {
					if want := x[n*C+c] * vr[n] * w[c]; vo[n*C+c] != want {
						t.Fatalf("N=%d C=%d: out[%d,%d] = %g, want x·rstd·w = %g", N, C, n, c, vo[n*C+c], want)
					}
				}
			}
			vd, gd := rnd(N*C, 1), make([]float32, N*C)
			copy(gd, vd)
			vb.RMSNormBackward(vd, nil, d, gr, x, w, N, C)
			gb.RMSNormBackward(gd, nil, d, gr, x, w, N, C)
			for i := range gd {
				n, c := i/C, i%C
				scale := 1 + math.Abs(float64(gr[n]*d[i]*w[c]))*2
				if math.Abs(float64(vd[i]-gd[i])) > 1e-6*scale {
					t.Fatalf("N=%d C=%d: dinp[%d] = %g, want %g", N, C, i, vd[i], gd[i])
				}
			}
		}
	}
}

// BenchmarkRMSNorm times RMSNormForward and RMSNormBackward's dinp at the
// train-05b shape (2048 tokens × 896) on one worker, with the AVX-512 rows
// (vec) and with the Go loops (go).
func BenchmarkRMSNorm(bm *testing.B) {
	needAVX512(bm)
	const N, C = 2048, 896
	x, w, d := make([]float32, N*C), make([]float32, C), make([]float32, N*C)
	for i := range x {
		x[i], d[i] = float32(i%13)-6, float32(i%7)-3
	}
	for i := range w {
		w[i] = 1
	}
	out, dx, rstd := make([]float32, N*C), make([]float32, N*C), make([]float32, N)
	for _, kind := range []string{"vec", "go"} {
		b, err := New(Options{Workers: 1})
		if err != nil {
			bm.Fatal(err)
		}
		if kind == "go" {
			b.vec.rmsFwd, b.vec.rmsBwd = nil, nil
		}
		bm.Run("fwd/"+kind, func(bm *testing.B) {
			for range bm.N {
				b.RMSNormForward(out, rstd, x, w, N, C, 1e-6)
			}
		})
		bm.Run("bwd/"+kind, func(bm *testing.B) {
			for range bm.N {
				b.RMSNormBackward(dx, nil, d, rstd, x, w, N, C)
			}
		})
		b.Close()
	}
}
