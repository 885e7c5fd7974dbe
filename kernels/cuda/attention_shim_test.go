package cuda_test

import (
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

// The attention ops of shimBackend: attention.cu on the CPU shim with Ops'
// plans, after the host checks a backend makes (kernels/check.go).

func (b shimBackend) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	kernels.NeedAttentionForward("AttentionForward", out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.h.runPlan(cuda.PlanAttention(out, lse, q, k, v, seqOff, len(seqOff)-1, N, N, H, KVH, D, N, 0, scale))
}

func (b shimBackend) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedWindow("AttentionWindowForward", W)
	kernels.NeedAttentionForward("AttentionWindowForward", out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.h.runPlan(cuda.PlanAttention(out, lse, q, k, v, seqOff, len(seqOff)-1, N, N, H, KVH, D, W, 0, scale))
}

func (b shimBackend) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	kernels.NeedAttentionBackward("AttentionBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.h.runPlan(cuda.PlanAttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, len(seqOff)-1, N, H, KVH, D, N, scale))
}

func (b shimBackend) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedWindow("AttentionWindowBackward", W)
	kernels.NeedAttentionBackward("AttentionWindowBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.h.runPlan(cuda.PlanAttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, len(seqOff)-1, N, H, KVH, D, W, scale))
}

func (b shimBackend) AttentionDecode(out, q, kCache, vCache []float32, Tq, Tk, H, KVH, D int, scale float32) {
	b.h.runPlan(cuda.PlanAttention(out, []float32(nil), q, kCache, vCache, []int32(nil), 0, Tq, Tk, H, KVH, D, Tk, Tk-Tq, scale))
}

// attentionOnShim runs kerneltest's attention groups and the PyTorch
// golden of the GQA attention on attention.cu through the shim.
func attentionOnShim(t *testing.T, h shimHarness) {
	kerneltest.RunOps(t, shimBackend{h: h}, "Attention", "AttentionWindow", "AttentionDecode")
	kerneltest.RunGoldenOps(t, shimBackend{h: h}, "../../testdata/golden/kernels", "Attention")
}
