package model

import (
	"context"
	"fmt"
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
				ad := randomAdapter(t, m, AllModules(), 2, 7)
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

// The two ways Backward takes the lm_head's part of a logprob gradient (the
// expected row kept by Forward; the logits computed again when Forward ran
// with EntropyGradient) give the same LoRA gradients.
func TestLogprobGradientPaths(t *testing.T) {
	ctx := context.Background()
	for _, be := range testBackends(t) {
		for _, fam := range families {
			for _, bf16 := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/bf16=%v", be.Name(), fam, bf16), func(t *testing.T) {
					m := newMicro(t, fam, be, 29)
					if bf16 {
						m.ToBF16()
					}
					ad := randomAdapter(t, m, AllModules(), 2, 31)
					b := packed(m.Config.Vocab, []int{5, 4}, 37)
					w := make([]float32, len(b.IDs))
					for i := range w {
						w[i] = float32(i%5) - 1.6
					}
					grads := func(opt TrainOptions) []float32 {
						ad.ZeroGrad()
						p, err := m.Forward(ctx, b, ad, opt)
						if err != nil {
							t.Fatal(err)
						}
						defer p.Release()
						if (p.expect != nil) == opt.EntropyGradient {
							t.Fatalf("EntropyGradient=%v: expect kept = %v", opt.EntropyGradient, p.expect != nil)
						}
						if err := p.Backward(ctx, w, nil); err != nil {
							t.Fatal(err)
						}
						var g []float32
						ad.Params(func(_ string, _, d []float32) { g = append(g, d...) })
						return g
					}
					one, again := grads(TrainOptions{}), grads(TrainOptions{EntropyGradient: true})
					var scale float64
					for _, v := range again {
						scale = math.Max(scale, math.Abs(float64(v)))
					}
					if scale == 0 {
						t.Fatal("zero gradient: the comparison would prove nothing")
					}
					for i := range one {
						if d := math.Abs(float64(one[i] - again[i])); d > 1e-5*scale {
							t.Fatalf("gradient %d: %g from the expected row, %g recomputed (scale %g)", i, one[i], again[i], scale)
						}
					}
				})
			}
		}
	}
}
