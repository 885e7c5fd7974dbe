package model

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestLoRAGradsTF32CUDAEmulated runs a LoRA forward and backward of the
// micro qwen2 model (float32 weights, head dim 4: the attention on the
// float32 kernels in both precisions) over 160 tokens on cuda.Backend on
// the emulated device, once in each precision. In the bf16 precision the
// LoRA gradients' products over the tokens (DB += doutᵀ·u, DA += gᵀ·x,
// K = 160 ≥ cuda.TF32MinK) run as cublasGemmEx with
// CUBLAS_COMPUTE_32F_FAST_TF32, operands rounded to TF32 in the fake, and
// are the only difference between the two runs: the logprobs are the same
// bits, and the gradients are within the 5% that TestBF16ComputeCUDAEmulated
// allows the bf16 mode, yet not equal.
func TestLoRAGradsTF32CUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	ctx := context.Background()
	batch := packed(microConfig("qwen2").Vocab, []int{90, 70}, 5)
	N := len(batch.IDs)
	if N < cuda.TF32MinK {
		t.Fatalf("%d tokens: the gradients' products would not reach TF32MinK %d", N, cuda.TF32MinK)
	}
	dlp := make([]float32, N)
	for i := range dlp {
		dlp[i] = 1 / float32(N)
	}
	type result struct {
		logprob []float32
		grads   map[string][]float32
	}
	run := func(p kernels.Precision) result {
		b, _, blas := emulatedCUDABackendBLAS(t, p)
		defer b.Close()
		m := newMicro(t, "qwen2", b, 21)
		defer m.Close()
		ad := randomAdapter(t, m, AllModules(), 4, 8)
		defer ad.Free()
		pass, err := m.Forward(ctx, batch, ad, TrainOptions{Chunk: 64})
		if err != nil {
			t.Fatal(err)
		}
		defer pass.Release()
		ad.ZeroGrad()
		if err := pass.Backward(ctx, dlp, nil); err != nil {
			t.Fatal(err)
		}
		tf32 := slices.ContainsFunc(blas.GemmTypes(), func(g cuda.GemmTypes) bool { return g.Compute == cuda.Compute32FFastTF32 })
		if tf32 != (p == kernels.PrecisionBF16) {
			t.Fatalf("precision %v: a TF32 GEMM ran: %v", p, tf32)
		}
		r := result{logprob: slices.Clone(pass.Logprob), grads: map[string][]float32{}}
		for l, layer := range ad.Layers {
			for mod, lr := range layer {
				if lr != nil {
					r.grads[fmt.Sprintf("%v.%d.DA", Module(mod), l)] = slices.Clone(lr.DA)
					r.grads[fmt.Sprintf("%v.%d.DB", Module(mod), l)] = slices.Clone(lr.DB)
				}
			}
		}
		return r
	}
	f32, tf := run(kernels.PrecisionF32), run(kernels.PrecisionBF16)
	if !slices.Equal(f32.logprob, tf.logprob) {
		t.Errorf("the logprobs differ between the precisions: only the gradients' products should")
	}
	var worst float64
	differ := false
	for name, g := range tf.grads {
		want := make([]float64, len(g))
		for i, v := range f32.grads[name] {
			want[i] = float64(v)
		}
		compare(t, "TF32 "+name+" vs float32", g, want, 5e-2)
		worst = max(worst, maxRelDiff(g, f32.grads[name]))
		differ = differ || !slices.Equal(g, f32.grads[name])
	}
	t.Logf("%d LoRA gradients over %d tokens: largest difference TF32 vs float32 %.3g of the gradient's largest element", len(tf.grads), N, worst)
	if !differ {
		t.Error("the TF32 gradients equal the float32 ones bit for bit: TF32 did not run")
	}
}
