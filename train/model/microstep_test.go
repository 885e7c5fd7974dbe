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
	return microLoRAStepOf(t, be, microStep{family: "qwen2", act: act, targets: AllModules(), alpha: alpha, bInit: bInit}, mark)
}

// microStep is a micro LoRA step's model and adapter (microLoRAStepOf).
type microStep struct {
	family, act string // microConfig's family; its activation unless ""
	targets     []Module
	alpha       float64
	bInit       func(i int) float32
	checkpoint  bool // TrainOptions.Checkpoint
	gateUpBF16  bool // TrainOptions.GateUpBF16
}

// microLoRAStepOf is microLoRAStep of s's family (act, when not "", its
// activation), adapter targets and TrainOptions.Checkpoint.
func microLoRAStepOf(t *testing.T, be kernels.Backend, s microStep, mark func(end bool)) (lp []float32, grads [][]float32) {
	t.Helper()
	c := microConfig(s.family)
	if s.act != "" {
		c.Act = s.act
	}
	m, err := New(c, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	randomize(m, 5)
	if err := m.ToBF16(); err != nil {
		t.Fatal(err)
	}
	ad, err := NewAdapter(&m.Config, AdapterConfig{Rank: 2, Alpha: s.alpha, Targets: s.targets}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr == nil {
				continue
			}
			for i := range lr.B {
				lr.B[i] = s.bInit(i)
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
	p, err := m.Forward(context.Background(), bt, ad, TrainOptions{Checkpoint: s.checkpoint, GateUpBF16: s.gateUpBF16})
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
