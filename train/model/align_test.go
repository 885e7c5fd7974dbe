package model

import (
	"context"
	"math"
	"slices"
	"testing"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestArenaAlignsTakes: every piece the arena carves starts 16 bytes (4
// values) on from the previous piece's start rounded up, whatever the
// sizes before it, and the counting pass plans exactly the slab the
// carving pass fills.
func TestArenaAlignsTakes(t *testing.T) {
	sizes := []int{7, 1, 12, 3, 5, 0, 9, 4}
	var plan arena
	for _, n := range sizes {
		plan.take(n)
	}
	slab := make([]float32, plan.off)
	ar := arena{slab: slab}
	end := 0
	for _, n := range sizes {
		s := ar.take(n)
		off := ar.off - n
		if n > 0 && unsafe.SliceData(s) != &slab[off] {
			t.Errorf("take(%d) is not the slab from value %d on", n, off)
		}
		if off%arenaAlign != 0 || off < end || off-end >= arenaAlign || len(s) != n || cap(s) != n {
			t.Errorf("take(%d) at value %d (len %d cap %d) after a piece ending at %d: want the next multiple of %d", n, off, len(s), cap(s), end, arenaAlign)
		}
		end = off + n
	}
	if ar.off != plan.off || ar.off != len(slab) {
		t.Errorf("carving used %d values, the plan %d, the slab has %d", ar.off, plan.off, len(slab))
	}
}

// TestTC2RunsInModelCUDAEmulated: on cuda.Backend over the emulated device
// in the bf16 precision with the second tensor-core attention picked
// (SetAttentionKernel("tc2")), a training forward and backward whose
// sizes are not multiples of 4 (7 tokens, so the [N] norms and [N,H] lse
// before q, k, v and the attention's dout in the slab are odd-sized) runs
// every attention op on attention_fa2.cu's kernels, none on tc1's — tc2
// runs only on 16-byte-aligned operands, which the arena's alignment
// gives — and its logprobs and LoRA gradients agree with tc1's.
func TestTC2RunsInModelCUDAEmulated(t *testing.T) {
	alignedAttentionRunsInModel(t, cuda.AttentionTC2, []string{"attention_fa2_forward", "attention_fa2_delta", "attention_fa2_backward_dq", "attention_fa2_backward_dkdv"})
}

// TestTC3RunsInModelCUDAEmulated is TestTC2RunsInModelCUDAEmulated with the
// third tensor-core attention (SetAttentionKernel("tc3"),
// attention_mma.cu), which wants the same alignment.
func TestTC3RunsInModelCUDAEmulated(t *testing.T) {
	alignedAttentionRunsInModel(t, cuda.AttentionTC3, []string{"attention_mma_forward", "attention_fa2_delta", "attention_mma_backward_dq", "attention_mma_backward_dkdv"})
}

// TestTC3K64RunsInModelCUDAEmulated is TestTC3RunsInModelCUDAEmulated with
// tc3's 64-row tiles (SetAttentionKernel("tc3k64"), 68 and 84 KiB of
// dynamic shared memory on the emulating driver).
func TestTC3K64RunsInModelCUDAEmulated(t *testing.T) {
	alignedAttentionRunsInModel(t, cuda.AttentionTC3K64, []string{"attention_mma_forward_k64", "attention_fa2_delta", "attention_mma_backward_dq_k64", "attention_mma_backward_dkdv_k64"})
}

// alignedAttentionRunsInModel runs TestTC2RunsInModelCUDAEmulated's check
// with the attention kernel (one wanting 16-byte-aligned operands) whose
// launches are want.
func alignedAttentionRunsInModel(t *testing.T, kernel string, want []string) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	c := microConfig("llama")
	c.Layers, c.Heads, c.HeadDim = 1, 2, 16 // tc2 and tc3 take head dims a multiple of 16
	lp2, g2, launched := attentionKernelPass(t, c, kernel, kernels.PrecisionBF16)
	for _, k := range want {
		if !slices.Contains(launched, k) {
			t.Errorf("the model's pass with %s launched no %s", kernel, k)
		}
	}
	for _, k := range []string{"attention_tc_forward", "attention_tc_backward_dq", "attention_tc_backward_dkdv", "attention_forward"} {
		if slices.Contains(launched, k) {
			t.Errorf("the model's pass with %s launched %s: an operand was not 16-byte aligned", kernel, k)
		}
	}
	lp1, g1, launched1 := attentionKernelPass(t, c, cuda.AttentionTC1, kernels.PrecisionBF16)
	if !slices.Contains(launched1, "attention_tc_forward") {
		t.Errorf("the model's pass with tc1 launched no attention_tc_forward")
	}
	if d := maxRelDiff(lp2, lp1); !(d < 1e-3) {
		t.Errorf("logprobs with %s differ from tc1's by %.3g", kernel, d)
	}
	if len(g1) != len(g2) || len(g1) == 0 {
		t.Fatalf("%d LoRA gradient values with %s, %d with tc1", len(g2), kernel, len(g1))
	}
	if d := maxRelDiff(g2, g1); !(d < 1e-3) || math.IsNaN(d) {
		t.Errorf("LoRA gradients with %s differ from tc1's by %.3g", kernel, d)
	}
}

// attentionKernelPass runs one forward and backward pass of the model of c
// (random weights and adapter, a pack of two sequences) on an emulated
// cuda.Backend in precision prec with training attention kernel, and
// returns the logprobs, the LoRA gradients and the kernels it launched.
func attentionKernelPass(t *testing.T, c Config, kernel string, prec kernels.Precision) (logprob, grads []float32, launched []string) {
	t.Helper()
	ctx := context.Background()
	b, drv := emulatedCUDABackendDriver(t, prec)
	defer b.Close()
	if err := b.SetAttentionKernel(kernel); err != nil {
		t.Fatal(err)
	}
	m, err := New(c, b)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	randomize(m, 5)
	ad := randomAdapter(t, m, AllModules(), 2, 17)
	batch := packed(c.Vocab, []int{4, 3}, 19)
	N := len(batch.IDs)
	w := make([]float32, N)
	for i := range w {
		w[i] = float32(i%3) - 1
	}
	ad.ZeroGrad()
	n0 := len(drv.Launches())
	p, err := m.Forward(ctx, batch, ad, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Backward(ctx, w, nil); err != nil {
		t.Fatal(err)
	}
	logprob = slices.Clone(p.Logprob)
	p.Release()
	ad.Params(func(_ string, _, grad []float32) { grads = append(grads, grad...) })
	for _, l := range drv.Launches()[n0:] {
		launched = append(launched, l.Kernel)
	}
	ad.Free()
	return logprob, grads, launched
}
