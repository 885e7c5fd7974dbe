package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// tf32Tol bounds a TF32 product's error against the float32 one, by
// near's measure (|got − want| ≤ tol·(|want| + rms(want))): each operand
// carries a relative rounding error of at most 2⁻¹¹ (nearest) or 2⁻¹⁰
// (truncation, see cudafake.RoundTF32), so a product term at most about
// 2·2⁻¹⁰; summed over K random terms the error grows as √K like the
// result, and stays within a few of those units of rms(want). Eight units
// of 2⁻¹¹: 3.9e-3, a fifth of kernels.BF16ComputeTol, the bf16 mode's bound.
const tf32Tol = 8.0 / 2048

// relErr is the largest |got − want| / (|want| + rms(want)), near's measure.
func relErr(got, want []float32) float64 {
	var ss float64
	for _, w := range want {
		ss += float64(w) * float64(w)
	}
	rms := math.Sqrt(ss / math.Max(1, float64(len(want))))
	var m float64
	for i := range want {
		m = math.Max(m, math.Abs(float64(got[i])-float64(want[i]))/(math.Abs(float64(want[i]))+rms+1e-30))
	}
	return m
}

// exactMatmul is kernels.Backend.Matmul's row-major c = op(a)·op(b) +
// beta·c from the definition, the sum in float64 in k order and rounded
// once, with the operands passed through round first: the fake cuBLAS's
// arithmetic, so its result is bit-for-bit this.
func exactMatmul(c, a, b []float32, M, N, K int, transA, transB bool, beta float32, round func(float32) float32) {
	for i := range M {
		for j := range N {
			var s float64
			for l := range K {
				av, bv := a[i*K+l], b[l*N+j]
				if transA {
					av = a[l*M+i]
				}
				if transB {
					bv = b[j*K+l]
				}
				s += float64(round(av)) * float64(round(bv))
			}
			if beta != 0 {
				s += float64(beta) * float64(c[i*N+j])
			}
			c[i*N+j] = float32(s)
		}
	}
}

// loraMatmuls are train/model's LoRA products (Linear.Forward and
// Backward) on a small layer (In 40, Out 144, rank 8, 160 tokens), and DB's
// gradient product with K = 8192 tokens as in the 7B step's batch. Those
// with K ≥ cuda.TF32MinK run on TF32 in the bf16 precision.
var loraMatmuls = []struct {
	name           string
	M, N, K        int
	transA, transB bool
	beta           float32
}{
	{"out += u·Bᵀ", 160, 144, 8, false, true, 1},
	{"DB += doutᵀ·u", 144, 8, 160, true, false, 1},
	{"g = dout·B", 160, 8, 144, false, false, 0},
	{"DA += gᵀ·x", 8, 40, 160, true, false, 1},
	{"dx += g·A", 160, 40, 8, false, false, 1},
	{"DB += doutᵀ·u, K=8192", 24, 16, 8192, true, false, 1},
	{"K just below TF32MinK", 9, 7, cuda.TF32MinK - 1, false, false, 0},
	{"K at TF32MinK", 9, 7, cuda.TF32MinK, false, true, 0.5},
}

// TestBackendMatmulTF32: in the bf16 precision Backend.Matmul with K ≥
// cuda.TF32MinK is one cublasGemmEx on float32 operands with
// CUBLAS_COMPUTE_32F_FAST_TF32, and on the emulated device its result is
// the product of the operands rounded to TF32: within tf32Tol of the
// float32 product and clearly not it (an error past 10·F32Tol, so the test
// fails if the TF32 path is not taken). With a shorter K, and in the f32
// precision, it stays cublasSgemm, bit for bit the exact product.
func TestBackendMatmulTF32(t *testing.T) {
	t.Parallel()
	same := func(x float32) float32 { return x }
	for _, prec := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		t.Run(prec.String(), func(t *testing.T) {
			b, _, blas := emulatedBackendIn(t, prec)
			defer b.Close()
			r := rand.New(rand.NewPCG(77, uint64(prec)))
			alloc := func(x []float32) []float32 { return managedCopy(t, b, x) }
			for _, m := range loraMatmuls {
				a, bm, c := alloc(randn(r, m.M*m.K)), alloc(randn(r, m.K*m.N)), alloc(randn(r, m.M*m.N))
				if m.beta == 0 {
					for i := range c {
						c[i] = float32(math.NaN()) // beta 0 ignores c
					}
				}
				exact, tf := append([]float32(nil), c...), append([]float32(nil), c...)
				exactMatmul(exact, a, bm, m.M, m.N, m.K, m.transA, m.transB, m.beta, same)
				exactMatmul(tf, a, bm, m.M, m.N, m.K, m.transA, m.transB, m.beta, cudafake.RoundTF32)
				calls := len(blas.GemmTypes())
				b.Matmul(c, a, bm, m.M, m.N, m.K, m.transA, m.transB, m.beta)
				types := blas.GemmTypes()
				if len(types) != calls+1 {
					t.Fatalf("%s: %d GEMM calls, want 1", m.name, len(types)-calls)
				}
				wantType := cuda.GemmTypes{A: cuda.R32F, B: cuda.R32F, C: cuda.R32F, Compute: cuda.Compute32F}
				want := exact
				isTF32 := prec == kernels.PrecisionBF16 && m.K >= cuda.TF32MinK
				if isTF32 {
					wantType.Compute, want = cuda.Compute32FFastTF32, tf
				}
				if got := types[calls]; got != wantType {
					t.Errorf("%s: GEMM types %+v, want %+v", m.name, got, wantType)
				}
				for i := range want {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: c[%d] = %g, want %g bit for bit", m.name, i, c[i], want[i])
					}
				}
				e := relErr(c, exact)
				t.Logf("%s (M=%d N=%d K=%d): max error against the float32 product %.3g", m.name, m.M, m.N, m.K, e)
				if isTF32 && !(e > 10*kernels.F32Tol && e <= tf32Tol) {
					t.Errorf("%s: TF32 error %.3g against the float32 product, want in (%g, %g]", m.name, e, 10*kernels.F32Tol, tf32Tol)
				}
				for _, x := range [][]float32{a, bm, c} {
					b.FreeF32(x)
				}
			}
		})
	}
}

// TestFakeGemmExTF32: the C fake cuBLAS, through the loader, takes
// CUBLAS_COMPUTE_32F_FAST_TF32 on float32 operands and rounds them to TF32
// as the Go fake does: 1.0001 (TF32 reads 1) times 1 summed over 1024
// terms is 1024, not float32's 1024.1.
func TestFakeGemmExTF32(t *testing.T) {
	drv, lb, lh := loadFakeBLAS(t, fakeLibs(t))
	const K = 1024
	a, b := make([]float32, K), make([]float32, K)
	for i := range a {
		a[i], b[i] = 1.0001, 1
	}
	pa, pb, pc := devicePtr(t, drv, f32bytes(a)), devicePtr(t, drv, f32bytes(b)), devicePtr(t, drv, f32bytes([]float32{0}))
	g := cuda.Gemm{TransA: cuda.OpN, TransB: cuda.OpN, M: 1, N: 1, K: K, Alpha: 1, A: pa, LDA: 1, B: pb, LDB: K, C: pc, LDC: 1}
	for _, c := range []struct {
		compute cuda.ComputeType
		want    float32
	}{{cuda.Compute32F, float32(K * float64(float32(1.0001)))}, {cuda.Compute32FFastTF32, K}} {
		t.Run(fmt.Sprint(c.compute), func(t *testing.T) {
			if err := lb.GemmEx(lh, g, cuda.GemmTypes{A: cuda.R32F, B: cuda.R32F, C: cuda.R32F, Compute: c.compute}); err != nil {
				t.Fatal(err)
			}
			got := readF32(t, drv, pc, 1)
			if got[0] != c.want {
				t.Errorf("C = %.7g, want %.7g", got[0], c.want)
			}
		})
	}
}

// TestMatmulEntryPoints: Device.Matmul calls cublasSgemm_v2 and
// Device.MatmulTF32 cublasGemmEx (a failure injected into the one entry
// point comes back from the one method, naming it), so the f32 precision's
// products stay the call they were.
func TestMatmulEntryPoints(t *testing.T) {
	dev, _, blas := openFake(t, 0)
	defer dev.Close()
	x := upload(t, dev, []float32{1, 2, 3, 4})
	defer x.Free()
	for _, c := range []struct {
		call string
		mm   func(c, a, b *cuda.Buffer, M, N, K int, tA, tB bool, beta float32) error
	}{{"cublasSgemm_v2", dev.Matmul}, {"cublasGemmEx", dev.MatmulTF32}} {
		blas.FailNext(c.call, 13)
		if err := c.mm(x, x, x, 2, 2, 2, false, false, 0); err == nil || !strings.Contains(err.Error(), c.call+": CUBLAS_STATUS_EXECUTION_FAILED") {
			t.Errorf("%s failing: %v", c.call, err)
		}
		if err := c.mm(x, x, x, 2, 2, 2, false, false, 0); err != nil { // the injected failure is spent
			t.Errorf("after %s's failure: %v", c.call, err)
		}
	}
}
