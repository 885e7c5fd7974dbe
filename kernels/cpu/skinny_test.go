package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels/ref"
)

// skinnyFeats are the skinny kernels' forms under test: the plain C (or Go
// without cgo) one, and the AVX-512 one where this CPU has it.
func skinnyFeats() map[string]features {
	fs := map[string]features{"plain": {}}
	if f := detect(); f.rows == 2 {
		fs["avx512"] = f
	}
	return fs
}

// TestSkinnyTN checks skinnyTN against skinnyTNGo on shapes crossing the
// kernel's edges: rows of c past the 8-, 4-, 2- and 1-row blocks, columns
// past the 16-lane halves and the 32-column block, T across the row chunk
// of skinnyChunk (64 rows at this width), and strides wider than the shape,
// whose gaps must stay untouched.
func TestSkinnyTN(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for name, f := range skinnyFeats() {
		for _, R := range []int{1, 2, 3, 5, 7, 8, 9, 15, 16} {
			for _, W := range []int{1, 15, 16, 17, 31, 32, 33, 70} {
				for _, T := range []int{1, 2, 65, 130} {
					t.Run(fmt.Sprintf("%s/R=%d,W=%d,T=%d", name, R, W, T), func(t *testing.T) {
						ldc, ldp, ldq := W+3, R+2, W+5
						p, q := randSlice(r, T*ldp), randSlice(r, T*ldq)
						c := randSlice(r, R*ldc)
						for i := range R {
							for w := W; w < ldc; w++ {
								c[i*ldc+w] = -7 // gap
							}
						}
						want := append([]float32(nil), c...)
						skinnyTNGo(want, ldc, p, ldp, q, ldq, R, W, T)
						got := append([]float32(nil), c...)
						f.skinnyTN(got, ldc, p, ldp, q, ldq, R, W, T)
						for i := range R {
							for w := range ldc {
								g, wv := got[i*ldc+w], want[i*ldc+w]
								if w >= W {
									if g != -7 {
										t.Fatalf("wrote the gap at r=%d w=%d", i, w)
									}
									continue
								}
								var s float64 = math.Abs(float64(c[i*ldc+w]))
								for k := range T {
									s += math.Abs(float64(p[k*ldp+i] * q[k*ldq+w]))
								}
								if d := math.Abs(float64(g - wv)); d > 1e-5*(1+s) {
									t.Fatalf("c[%d,%d] = %g, want %g", i, w, g, wv)
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestSkinnyNT checks skinnyNT against skinnyNTGo on shapes crossing its
// edges: rows of q past the 3-row tile, rows of p past the 8-, 4-, 2- and
// 1-row blocks, K past the 16-lane steps, beta 0 (o's NaNs ignored) and
// 0.5, and an output stride with a gap that must stay untouched.
func TestSkinnyNT(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for name, f := range skinnyFeats() {
		for _, T := range []int{1, 2, 3, 4, 5, 7, 50} {
			for _, R := range []int{1, 2, 3, 5, 7, 8, 9, 15, 16} {
				for _, K := range []int{1, 15, 16, 17, 33, 70} {
					for _, beta := range []float32{0, 0.5} {
						t.Run(fmt.Sprintf("%s/T=%d,R=%d,K=%d,beta=%g", name, T, R, K, beta), func(t *testing.T) {
							ldo, ldq, ldp := R+2, K+3, K+1
							q, p := randSlice(r, T*ldq), randSlice(r, R*ldp)
							o := randSlice(r, T*ldo)
							for i := range o {
								if i%ldo >= R {
									o[i] = -7 // gap
								} else if beta == 0 {
									o[i] = float32(math.NaN())
								}
							}
							want := append([]float32(nil), o...)
							skinnyNTGo(want, ldo, q, ldq, p, ldp, T, R, K, beta)
							got := append([]float32(nil), o...)
							f.skinnyNT(got, ldo, q, ldq, p, ldp, T, R, K, beta)
							for i := range T {
								for j := range ldo {
									g, wv := got[i*ldo+j], want[i*ldo+j]
									if j >= R {
										if g != -7 {
											t.Fatalf("wrote the gap at t=%d r=%d", i, j)
										}
										continue
									}
									s := 0.0
									if beta != 0 {
										s = math.Abs(float64(o[i*ldo+j]))
									}
									for k := range K {
										s += math.Abs(float64(q[i*ldq+k] * p[j*ldp+k]))
									}
									if d := math.Abs(float64(g - wv)); !(d <= 1e-5*(1+s)) {
										t.Fatalf("o[%d,%d] = %g, want %g", i, j, g, wv)
									}
								}
							}
						})
					}
				}
			}
		}
	}
}

// TestSkinnyProducts checks the backend's Matmul and LinearForward on the
// shapes that take the skinny products (and on their neighbours that do
// not) against kernels/ref, split among workers, with the LoRA shapes'
// transposes: DA += gᵀ·x, DB += doutᵀ·u, g = dout·B (b in either layout)
// and u = x·Aᵀ.
func TestSkinnyProducts(t *testing.T) {
	rf := ref.New()
	r := rand.New(rand.NewPCG(9, 10))
	for _, minPar := range []int{0, 1} {
		be, err := New(Options{Workers: 3, MinParallel: minPar})
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		for _, sh := range [][3]int{{8, 100, 70}, {13, 67, 130}, {16, 64, 64}, {17, 70, 70}, {100, 8, 70}, {67, 5, 130}, {70, 16, 64}, {130, 11, 67}, {8, 100, 63}} {
			M, N, K := sh[0], sh[1], sh[2]
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					for _, beta := range []float32{0, 1, 0.5} {
						name := fmt.Sprintf("minPar=%d/M=%d,N=%d,K=%d,tA=%v,tB=%v,beta=%g", minPar, M, N, K, tA, tB, beta)
						a, b, c := randSlice(r, M*K), randSlice(r, K*N), randSlice(r, M*N)
						if beta == 0 {
							for i := range c {
								c[i] = float32(math.NaN())
							}
						}
						want := append([]float32(nil), c...)
						rf.Matmul(want, a, b, M, N, K, tA, tB, beta)
						got := append([]float32(nil), c...)
						be.Matmul(got, a, b, M, N, K, tA, tB, beta)
						nearSkinny(t, name, got, want)
					}
				}
			}
		}
		for _, sh := range [][3]int{{100, 70, 8}, {130, 67, 13}, {65, 64, 16}, {200, 100, 3}, {70, 70, 17}} {
			N, C, OC := sh[0], sh[1], sh[2]
			x, w, bias := randSlice(r, N*C), randSlice(r, OC*C), randSlice(r, OC)
			want, got := make([]float32, N*OC), make([]float32, N*OC)
			rf.LinearForward(want, x, w, bias, N, C, OC)
			be.LinearForward(got, x, w, bias, N, C, OC)
			nearSkinny(t, fmt.Sprintf("minPar=%d/LinearForward N=%d,C=%d,OC=%d", minPar, N, C, OC), got, want)
		}
	}
}

func nearSkinny(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-4*(1+math.Abs(float64(want[i])))) {
			t.Errorf("%s: [%d] = %g, want %g", name, i, got[i], want[i])
			return
		}
	}
}

func randSlice(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}
