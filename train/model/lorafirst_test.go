package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// noAdder is cuda.Backend without kernels.LinearAdderBF16: its method of
// that name takes other arguments, so it hides the Backend's, and the
// model's LoRA forward adds u·Bᵀ after the base products, as before the
// LoRA product came first.
type noAdder struct{ *cuda.Backend }

func (noAdder) LinearForwardBF16ManyAdd() {}

// TestLoRAFirstCUDAEmulated: on cuda.Backend (a kernels.LinearAdderBF16)
// in both precisions on the emulated device, forwardMany of q-, k- and
// v-like projections with a LoRA on q (with a bias) and v (without) but
// none on k, and Linear.Forward of one projection with a bias and a LoRA,
// write the LoRA product first and add the base products onto it (beta-1
// GEMMs for the projections with a LoRA only); their outputs are those of
// the other order (noAdder) within 1e-6 of their scale, and u is the
// same bits. Then a LoRA step of the bfloat16 micro qwen2 model (bias on
// q, k, v) gives the other order's logprobs and LoRA gradients within
// 1e-5 of their scale (measured: the logprobs the same, the gradients
// 4.7e-7; the outputs above 3.5e-8).
func TestLoRAFirstCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	if _, ok := any(noAdder{}).(kernels.LinearAdderBF16); ok {
		t.Fatal("noAdder is a kernels.LinearAdderBF16")
	}
	for _, p := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		b, _, blas := emulatedCUDABackendBLAS(t, p)
		loraFirstProjections(t, b, blas.Gemms)
		if p == kernels.PrecisionBF16 {
			lp, g := microLoRAStep(t, b, "", 4, func(i int) float32 { return float32(i%7) * 0.05 }, nil)
			wlp, wg := microLoRAStep(t, noAdder{b}, "", 4, func(i int) float32 { return float32(i%7) * 0.05 }, nil)
			if d := maxRelDiff(lp, wlp); d > 1e-5 {
				t.Errorf("%v: logprobs %.3g from the other order's", p, d)
			}
			for i := range wg {
				if d := maxRelDiff(g[i], wg[i]); d > 1e-5 {
					t.Errorf("%v: gradient %d %.3g from the other order's", p, i, d)
				}
			}
			var dg float64
			for i := range wg {
				dg = max(dg, maxRelDiff(g[i], wg[i]))
			}
			t.Logf("%v: the micro step's logprobs %.3g from the other order's, its LoRA gradients %.3g", p, maxRelDiff(lp, wlp), dg)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// loraFirstProjections is TestLoRAFirstCUDAEmulated's check of forwardMany
// and Linear.Forward on b, whose fake cuBLAS's GEMMs gemms lists.
func loraFirstProjections(t *testing.T, b *cuda.Backend, gemms func() []cuda.Gemm) {
	t.Helper()
	const N, In, R = 5, 6, 2
	r := rand.New(rand.NewPCG(16, 3))
	var frees []func()
	defer func() {
		for _, f := range frees {
			f()
		}
	}()
	f32 := func(n int) []float32 {
		x, err := kernels.AllocF32(b, n)
		if err != nil {
			t.Fatal(err)
		}
		frees = append(frees, func() { kernels.FreeF32(b, x) })
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	linear := func(out int, bias bool) *Linear {
		w, err := kernels.AllocBF16(b, out*In)
		if err != nil {
			t.Fatal(err)
		}
		frees = append(frees, func() { kernels.FreeBF16(b, w) })
		kernels.ToBF16(w, f32(out*In))
		l := &Linear{Weight: Matrix{BF16: w}, In: In, Out: out}
		if bias {
			l.Bias = f32(out)
		}
		return l
	}
	lora := func(out int) *LoRA {
		return &LoRA{A: f32(R * In), B: f32(out * R), R: R, In: In, Out: out, Scale: 0.75}
	}
	ls := []*Linear{linear(8, true), linear(4, true), linear(4, false)}
	loras := []*LoRA{lora(8), nil, lora(4)}
	x := f32(N * In)
	run := func(be kernels.Backend) (outs, us [][]float32) {
		for _, l := range ls {
			outs, us = append(outs, f32(N*l.Out)), append(us, f32(N*R))
		}
		forwardMany(be, ls, outs, us, x, nil, N, loras)
		o, u := f32(N*8), f32(N*R)
		ls[0].Forward(be, o, u, x, N, loras[0])
		kernels.Synchronize(be)
		return append(outs, o), append(us, u)
	}
	g0 := len(gemms())
	outs, us := run(b)
	var betas []float32
	for _, g := range gemms()[g0:] {
		// The base products (column-major: m the output's width, k In);
		// the LoRA products have k = R, or m = R (u = x·Aᵀ).
		if g.K == In && g.M != R {
			betas = append(betas, g.Beta)
		}
	}
	// One GEMM a base product (In is one chunk of widened rows in
	// PrecisionF32): q and v add, k is set; then the single projection
	// adds.
	if want := []float32{1, 0, 1, 1}; !slices.Equal(betas, want) {
		t.Errorf("%v: base products' betas %v, want %v", b.Precision(), betas, want)
	}
	wouts, wus := run(noAdder{b})
	for i := range wouts {
		if d := maxRelDiff(outs[i], wouts[i]); d > 1e-6 {
			t.Errorf("%v: output %d %.3g from the other order's", b.Precision(), i, d)
		}
		if i == 1 { // k has no LoRA: its u is not written
			continue
		}
		for j := range wus[i] {
			if math.Float32bits(us[i][j]) != math.Float32bits(wus[i][j]) {
				t.Errorf("%v: u %d [%d] = %g, the other order %g", b.Precision(), i, j, us[i][j], wus[i][j])
				break
			}
		}
	}
}
