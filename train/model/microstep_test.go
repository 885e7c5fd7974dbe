package model

import (
	"context"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// microLoRAStep runs one LoRA step of a bfloat16 micro qwen2 model (act its
// activation: "" for SwiGLU) on be: a rank-2 adapter on all seven
// projections (alpha; B[i] = bInit(i), so that the products through B are
// not zero) over two packed sequences of 4 and 6 tokens, forward and the
// backward of a mean-logprob loss. It returns the logprobs and each of the
// adapter's gradients (Params order). mark, when set, is called just
// before the step's first op (false) and after its last, synchronized
// (true), for a caller counting the launches in between.
func microLoRAStep(t *testing.T, be kernels.Backend, act string, alpha float64, bInit func(i int) float32, mark func(end bool)) (lp []float32, grads [][]float32) {
	t.Helper()
	c := microConfig("qwen2")
	c.Act = act
	m, err := New(c, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	randomize(m, 5)
	if err := m.ToBF16(); err != nil {
		t.Fatal(err)
	}
	ad, err := NewAdapter(&m.Config, AdapterConfig{Rank: 2, Alpha: alpha, Targets: AllModules()}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			for i := range lr.B {
				lr.B[i] = bInit(i)
			}
		}
	}
	if err := ad.Place(be); err != nil {
		t.Fatal(err)
	}
	defer ad.Free()
	bt := packed(c.Vocab, []int{4, 6}, 2)
	dlp := make([]float32, len(bt.IDs))
	for i := range dlp {
		dlp[i] = -1 / float32(len(dlp))
	}
	if mark != nil {
		mark(false)
	}
	ad.ZeroGrad()
	p, err := m.Forward(context.Background(), bt, ad, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lp = append([]float32(nil), p.Logprob...)
	if err := p.Backward(context.Background(), dlp, nil); err != nil {
		t.Fatal(err)
	}
	p.Release()
	kernels.Synchronize(be)
	if mark != nil {
		mark(true)
	}
	ad.Params(func(_ string, _, g []float32) { grads = append(grads, append([]float32(nil), g...)) })
	return lp, grads
}
