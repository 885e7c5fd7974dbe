package cuda_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// bf16Bits rounds x to bfloat16 (nearest even): the bits, and the values
// widened back to float32.
func bf16Bits(x []float32) ([]uint16, []float32) {
	h, f := make([]uint16, len(x)), make([]float32, len(x))
	for i, v := range x {
		h[i] = kernels.BF16(v)
		f[i] = kernels.F32(h[i])
	}
	return h, f
}

// uploadBF16 allocates a device buffer holding the bfloat16 values x.
func uploadBF16(t *testing.T, dev *cuda.Device, x []uint16) *cuda.Buffer {
	t.Helper()
	b, err := dev.Alloc((len(x) + 1) / 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.UploadBF16(x); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGemmRowsBatchedBF16: a batched bfloat16 mm (the GEMM-based
// attention's products) reaches cuBLAS as one cublasGemmStridedBatchedEx
// in the column-major mapping of the package doc — operands and their
// strides swapped, M and N swapped, CUDA_R_16BF operands, float32 C,
// CUBLAS_COMPUTE_32F — and equals ref's MatmulBatched on the rounded
// operands, for every transpose, beta 0 (C starts NaN) and 1, with offsets
// into the buffers; one product (Batch 1) stays a cublasGemmEx.
func TestGemmRowsBatchedBF16(t *testing.T) {
	dev, drv, blas := openFake(t, 0)
	defer dev.Close()
	r := rand.New(rand.NewPCG(28, 40))
	const offA, offB, offC = 2, 4, 3 // elements of each operand's type
	for _, s := range [][3]int{{1, 1, 1}, {5, 3, 4}, {7, 16, 2}} {
		M, N, K := s[0], s[1], s[2]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, beta := range []float32{0, 1} {
				for _, batch := range []int{1, 3} {
					name := fmt.Sprintf("batch=%d,M=%d,N=%d,K=%d,transA=%v,transB=%v,beta=%g", batch, M, N, K, tr[0], tr[1], beta)
					ah, af := bf16Bits(randn(r, batch*M*K))
					bh, bf := bf16Bits(randn(r, batch*K*N))
					c := randn(r, batch*M*N)
					if beta == 0 {
						for i := range c {
							c[i] = float32(math.NaN())
						}
					}
					want := slices.Clone(c)
					ref.New().MatmulBatched(want, af, bf, batch, M, N, K, tr[0], tr[1], beta)
					bufA := uploadBF16(t, dev, append(make([]uint16, offA), ah...))
					bufB := uploadBF16(t, dev, append(make([]uint16, offB), bh...))
					bufC := upload(t, dev, append(make([]float32, offC), c...))
					g := cuda.Mm{C: bufC, A: bufA, B: bufB, M: M, N: N, K: K, OffA: offA, OffB: offB, OffC: offC,
						TransA: tr[0], TransB: tr[1], Beta: beta, BF16: true,
						Batch: batch, StrideA: M * K, StrideB: K * N, StrideC: M * N}
					if err := cuda.GemmRows(dev, g); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					near(t, name, download(t, bufC)[offC:], want, kerneltest.F32Tol)
					call, ty := blas.Gemms()[len(blas.Gemms())-1], blas.GemmTypes()[len(blas.GemmTypes())-1]
					if call.M != N || call.N != M || call.K != K || call.LDC != N || call.TransA != op(tr[1]) || call.TransB != op(tr[0]) || call.Batch != batch {
						t.Errorf("%s: cuBLAS called with %+v, want the transposed call", name, call)
					}
					if batch > 1 && (call.StrideA != int64(K*N) || call.StrideB != int64(M*K) || call.StrideC != int64(M*N)) {
						t.Errorf("%s: strides A %d, B %d, C %d: want b's, a's, c's", name, call.StrideA, call.StrideB, call.StrideC)
					}
					if call.A != bufB.Ptr()+cuda.DevPtr(2*offB) || call.B != bufA.Ptr()+cuda.DevPtr(2*offA) || call.C != bufC.Ptr()+cuda.DevPtr(4*offC) {
						t.Errorf("%s: pointers %#x %#x %#x: want b, a, c past their offsets", name, call.A, call.B, call.C)
					}
					if ty != (cuda.GemmTypes{A: cuda.R16BF, B: cuda.R16BF, C: cuda.R32F, Compute: cuda.Compute32F}) {
						t.Errorf("%s: types %+v", name, ty)
					}
					for _, x := range []*cuda.Buffer{bufA, bufB, bufC} {
						if err := x.Free(); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
	if n, _ := drv.Live(); n != 0 {
		t.Errorf("%d allocations left on the fake device", n)
	}
	// A stride one element short of the data makes the last product read
	// past the allocation: the fake refuses it, naming the entry point.
	ah, _ := bf16Bits(randn(r, 2*6))
	bufA, bufB, bufC := uploadBF16(t, dev, ah), uploadBF16(t, dev, ah), upload(t, dev, make([]float32, 2*4))
	g := cuda.Mm{C: bufC, A: bufA, B: bufB, M: 2, N: 2, K: 3, TransB: true, BF16: true, Batch: 2, StrideA: 7, StrideB: 6, StrideC: 4}
	if err := cuda.GemmRows(dev, g); err == nil || !strings.Contains(err.Error(), "cublasGemmStridedBatchedEx") {
		t.Errorf("stride past the allocation: %v", err)
	}
	blas.FailNext("cublasGemmStridedBatchedEx", 13)
	g.StrideA = 6
	var ce *cuda.Error
	if err := cuda.GemmRows(dev, g); !errors.As(err, &ce) || !strings.Contains(err.Error(), "GEMM batch=2 M=2 N=2 K=3") {
		t.Errorf("failing GemmStridedBatchedEx: %v", err)
	}
}

// TestFakeGemmStridedBatchedExThroughLoader: the C fake's
// cublasGemmStridedBatchedEx, bound through the loader, computes each
// product at its strides, and refuses the types it does not compute.
func TestFakeGemmStridedBatchedExThroughLoader(t *testing.T) {
	drv, lb, lh := loadFakeBLAS(t, fakeLibs(t))
	// Two column-major products A_i [2,2]·B_i [2,1], A_i 4 apart, B_i 2
	// apart, C_i 2 apart: A_0 = [[1 2] [3 4]], B_0 = [1 1] → [3 7];
	// A_1 = I, B_1 = [5 6] → [5 6].
	pa, pb, pc := devicePtr(t, drv, bf16bytes(1, 3, 2, 4, 1, 0, 0, 1)), devicePtr(t, drv, bf16bytes(1, 1, 5, 6)), devicePtr(t, drv, f32bytes(make([]float32, 4)))
	g := cuda.Gemm{TransA: cuda.OpN, TransB: cuda.OpN, M: 2, N: 1, K: 2, Alpha: 1, A: pa, LDA: 2, StrideA: 4,
		B: pb, LDB: 2, StrideB: 2, C: pc, LDC: 2, StrideC: 2, Batch: 2}
	types := cuda.GemmTypes{A: cuda.R16BF, B: cuda.R16BF, C: cuda.R32F, Compute: cuda.Compute32F}
	if err := lb.GemmStridedBatchedEx(lh, g, types); err != nil {
		t.Fatal(err)
	}
	c := readF32(t, drv, pc, 4)
	if want := []float32{3, 7, 5, 6}; !slices.Equal(c, want) {
		t.Errorf("GemmStridedBatchedEx through the loader: C = %v, want %v", c, want)
	}
	var ce *cuda.Error
	types.B = cuda.R32F
	if err := lb.GemmStridedBatchedEx(lh, g, types); !errors.As(err, &ce) || !strings.Contains(err.Error(), "cublasGemmStridedBatchedEx: CUBLAS_STATUS_NOT_SUPPORTED") {
		t.Errorf("mixed types on the C fake: %v", err)
	}
	types.B, g.LDA = cuda.R16BF, 1
	if err := lb.GemmStridedBatchedEx(lh, g, types); !errors.As(err, &ce) || ce.Name != "CUBLAS_STATUS_INVALID_VALUE" {
		t.Errorf("lda < m on the C fake: %v", err)
	}
}
