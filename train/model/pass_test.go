package model

import (
	"context"
	"math"
	"testing"
)

// A released pass's memory is reused by the next Forward without being
// cleared: poisoning it with NaN must change nothing, in every family, with
// and without checkpointing, and for passes without an adapter.
func TestReleaseReusesMemory(t *testing.T) {
	ctx := context.Background()
	for _, be := range testBackends(t) {
		for _, family := range []string{"llama", "qwen2", "qwen3"} {
			t.Run(be.Name()+"/"+family, func(t *testing.T) {
				m := newMicro(t, family, be, 5)
				ad := randomAdapter(t, &m.Config, AllModules(), 2, 7)
				b := packed(m.Config.Vocab, []int{6, 3, 7}, 9)
				w := make([]float32, len(b.IDs))
				for i := range w {
					w[i] = float32(i%3) - 0.7
				}
				run := func(ckpt bool) (lp, grads []float32) {
					ad.ZeroGrad()
					p, err := m.Forward(ctx, b, ad, TrainOptions{Checkpoint: ckpt})
					if err != nil {
						t.Fatal(err)
					}
					if err := p.Backward(ctx, w, w); err != nil {
						t.Fatal(err)
					}
					lp = append(lp, p.Logprob...)
					ad.Params(func(_ string, _, g []float32) { grads = append(grads, g...) })
					p.Release()
					if err := p.Backward(ctx, w, nil); err == nil {
						t.Error("backward of a released pass succeeded")
					}
					return lp, grads
				}
				poison := func() {
					if len(m.slabs.free) == 0 {
						t.Fatal("Release kept no memory for reuse")
					}
					for _, s := range m.slabs.free {
						s = s[:cap(s)]
						for i := range s {
							s[i] = float32(math.NaN())
						}
					}
				}
				for _, ckpt := range []bool{false, true} {
					lp0, g0 := run(ckpt)
					poison()
					lp1, g1 := run(ckpt)
					if d := maxRelDiff(lp1, lp0); d != 0 {
						t.Errorf("checkpoint=%v: logprobs after reuse differ by %.3g", ckpt, d)
					}
					if d := maxRelDiff(g1, g0); d != 0 {
						t.Errorf("checkpoint=%v: gradients after reuse differ by %.3g", ckpt, d)
					}
				}
				base, err := m.Forward(ctx, b, nil, TrainOptions{})
				if err != nil {
					t.Fatal(err)
				}
				want := append([]float32(nil), base.Logprob...)
				base.Release()
				poison()
				again, err := m.Forward(ctx, b, nil, TrainOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if d := maxRelDiff(again.Logprob, want); d != 0 || math.IsNaN(d) {
					t.Errorf("adapter-off logprobs after reuse differ by %.3g", d)
				}
			})
		}
	}
}
