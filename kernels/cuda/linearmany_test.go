package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
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
