package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestLinearForwardBF16Many multiplies one input by three bfloat16 weights
// (two with a bias, one of an empty output) in both precisions on the
// emulated device: every output equals LinearForwardBF16's bit for bit,
// and in the bf16 precision the input is rounded once (one f32_to_bf16
// launch, not one a product) with one GEMM a product.
func TestLinearForwardBF16Many(t *testing.T) {
	t.Parallel()
	for _, p := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		b, drv, blas := emulatedBackendIn(t, p)
		const N, C = 5, 12
		OCs := []int{7, 3, 0, 4}
		r := rand.New(rand.NewPCG(28, 13))
		var frees []func()
		alloc := func(n int) []float32 {
			x, err := b.AllocF32(n)
			if err != nil {
				t.Fatal(err)
			}
			frees = append(frees, func() { b.FreeF32(x) })
			return x
		}
		inp := alloc(N * C)
		copy(inp, randn(r, N*C))
		var outs, want [][]float32
		var weights [][]uint16
		var biases [][]float32
		for i, oc := range OCs {
			w, err := b.AllocBF16(oc*C + 1) // an odd length: the weight at an odd offset below
			if err != nil {
				t.Fatal(err)
			}
			frees = append(frees, func() { b.FreeBF16(w) })
			kernels.ToBF16(w[1:], randn(r, oc*C))
			weights = append(weights, w[1:])
			var bias []float32
			if i != 1 && oc > 0 {
				bias = alloc(oc)
				copy(bias, randn(r, oc))
			}
			biases = append(biases, bias)
			outs, want = append(outs, alloc(N*oc)), append(want, alloc(N*oc))
		}
		for i := range OCs {
			b.LinearForwardBF16(want[i], inp, weights[i], biases[i], N, C, OCs[i])
		}
		l0, g0 := len(drv.Launches()), len(blas.Gemms())
		kernels.LinearForwardBF16Many(b, outs, inp, weights, biases, N, C, OCs)
		kernels.Synchronize(b)
		for i := range OCs {
			for j := range outs[i] {
				if outs[i][j] != want[i][j] {
					t.Fatalf("%v: output %d [%d] = %g, LinearForwardBF16 %g", p, i, j, outs[i][j], want[i][j])
				}
			}
		}
		rounds := 0
		for _, l := range drv.Launches()[l0:] {
			if l.Kernel == "f32_to_bf16" {
				rounds++
			}
		}
		wantRounds := 0
		if p == kernels.PrecisionBF16 {
			wantRounds = 1
		}
		if rounds != wantRounds || len(blas.Gemms())-g0 < 3 {
			t.Errorf("%v: %d roundings of the input and %d GEMMs, want %d and at least 3", p, rounds, len(blas.Gemms())-g0, wantRounds)
		}
		for _, f := range frees {
			f()
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLinearForwardBF16ManyAdd runs LinearForwardBF16ManyAdd on the
// emulated device in both precisions, and in the bf16 precision with the
// GEMMs on cuBLASLt, over four outputs holding values already: two added
// onto (one with a bias), one of an empty output, one set (with a bias).
// An added output is the fake cuBLAS's product with beta 1 from its
// definition (the sum and the value it held in float64, rounded once),
// then the bias in float32, bit for bit, and within 1e-6 of the other
// order (the product set, its bias, then the value added in float32:
// train/model's LoRA update after the base product); the set output is
// LinearForwardBF16's bits. In the bf16 precision the input is rounded
// once, and the GEMMs of the added outputs (and only they) have beta 1.
func TestLinearForwardBF16ManyAdd(t *testing.T) {
	t.Parallel()
	// open returns the backend, and a count of its bfloat16 products on
	// cuBLASLt and the GEMMs its fake cuBLAS ran (none of the bf16 ones
	// when cuBLASLt is picked).
	type setup struct {
		name string
		open func(t *testing.T) (b *cuda.Backend, ltRuns func() int, gemms func() []cuda.Gemm)
	}
	setups := []setup{
		{"f32", func(t *testing.T) (*cuda.Backend, func() int, func() []cuda.Gemm) {
			b, _, blas := emulatedBackendIn(t, kernels.PrecisionF32)
			return b, nil, blas.Gemms
		}},
		{"bf16", func(t *testing.T) (*cuda.Backend, func() int, func() []cuda.Gemm) {
			b, _, blas := emulatedBackendIn(t, kernels.PrecisionBF16)
			return b, nil, blas.Gemms
		}},
		{"bf16 cuBLASLt", func(t *testing.T) (*cuda.Backend, func() int, func() []cuda.Gemm) {
			b, blas, lt := emulatedBackendLt(t)
			return b, lt.Matmuls, blas.Gemms
		}},
	}
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			b, ltRuns, gemms := s.open(t)
			t.Cleanup(func() { // after the frees, which Cleanup runs first
				if err := b.Close(); err != nil {
					t.Error(err)
				}
			})
			const N, C = 5, 12
			OCs := []int{7, 3, 0, 4}
			add := []bool{true, true, true, false}
			withBias := []bool{true, false, false, true}
			r := rand.New(rand.NewPCG(28, 14))
			f32, bf16 := backendAllocs(t, b)
			alloc := func(x []float32) []float32 {
				y := f32(len(x))
				copy(y, x)
				return y
			}
			inp := alloc(randn(r, N*C))
			round := func(x float32) float32 { return x } // the f32 precision multiplies inp as it is
			if b.Precision() == kernels.PrecisionBF16 {
				round = func(x float32) float32 { return kernels.F32(kernels.BF16(x)) }
			}
			var outs, held [][]float32
			var weights [][]uint16
			var biases [][]float32
			for i, oc := range OCs {
				w := bf16(oc*C + 1) // an odd length: the weight at an odd offset below
				kernels.ToBF16(w[1:], randn(r, oc*C))
				weights = append(weights, w[1:])
				var bias []float32
				if withBias[i] {
					bias = alloc(randn(r, oc))
				}
				biases = append(biases, bias)
				h := randn(r, N*oc)
				held, outs = append(held, h), append(outs, alloc(h))
			}
			g0, lt0 := len(gemms()), 0
			if ltRuns != nil {
				lt0 = ltRuns()
			}
			b.LinearForwardBF16ManyAdd(outs, inp, weights, biases, N, C, OCs, add)
			kernels.Synchronize(b)
			newGemms := gemms()[g0:]

			for i, oc := range OCs {
				wf := make([]float32, oc*C)
				kernels.FromBF16(wf, weights[i])
				if !add[i] {
					want := alloc(make([]float32, N*oc))
					b.LinearForwardBF16(want, inp, weights[i], biases[i], N, C, oc)
					kernels.Synchronize(b)
					for j := range want {
						if outs[i][j] != want[j] {
							t.Fatalf("set output %d [%d] = %g, LinearForwardBF16 %g", i, j, outs[i][j], want[j])
						}
					}
					continue
				}
				exact := slices.Clone(held[i])
				exactMatmul(exact, inp, wf, N, oc, C, false, true, 1, round)
				other := make([]float32, N*oc) // the product set, its bias, then the held value added
				exactMatmul(other, inp, wf, N, oc, C, false, true, 0, round)
				for j := range exact {
					if biases[i] != nil {
						exact[j] += biases[i][j%oc]
						other[j] += biases[i][j%oc]
					}
					other[j] += held[i][j]
				}
				for j := range exact {
					if outs[i][j] != exact[j] {
						t.Fatalf("added output %d [%d] = %g, want %g", i, j, outs[i][j], exact[j])
					}
				}
				near(t, fmt.Sprintf("added output %d against the other order", i), outs[i], other, 1e-6)
			}

			if ltRuns != nil {
				// Two products on cuBLASLt, each timed on its first shape
				// (LtAutotuneCandidates) before it runs.
				if len(newGemms) != 0 || ltRuns()-lt0 < 2 {
					t.Errorf("%d GemmEx and %d cublasLtMatmul calls, want none and at least 2", len(newGemms), ltRuns()-lt0)
				}
				return
			}
			var betas []float32
			for _, g := range newGemms {
				betas = append(betas, g.Beta)
			}
			if rows := cuda.BF16ChunkRows(C); rows < 7 {
				t.Fatalf("%d rows a chunk at C = %d: the f32 precision's check wants one chunk a product", rows, C)
			}
			if want := []float32{1, 1, 0}; !slices.Equal(betas, want) { // the empty output has no GEMM
				t.Errorf("GEMM betas %v, want %v", betas, want)
			}
		})
	}
}
