package model

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
)

// benchConfig is the small shape of FACTS.md's PyTorch training figure:
// hidden 256, 4 layers, 8 heads / 4 kv heads, MLP 688, vocab 4096.
func benchConfig() Config {
	return Config{Family: "qwen2", Vocab: 4096, Hidden: 256, Intermediate: 688, Layers: 4, Heads: 8, KVHeads: 4,
		HeadDim: 32, RMSNormEps: 1e-6, QKVBias: true, RoPE: kernels.RoPEConfig{Theta: 1e6}}
}

func benchModel(b *testing.B) (*Model, *Adapter) {
	be, err := cpu.New(cpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	m, err := New(benchConfig(), be)
	if err != nil {
		b.Fatal(err)
	}
	randomize(m, 1)
	ad := randomAdapter(b, m, AllModules(), 8, 2)
	return m, ad
}

// BenchmarkTrainStep: forward + LoRA backward + AdamW on the adapter over 8
// sequences of 256 tokens.
func BenchmarkTrainStep(b *testing.B) {
	for _, ckpt := range []bool{false, true} {
		b.Run(fmt.Sprintf("B=8,T=256,checkpoint=%v", ckpt), func(b *testing.B) {
			m, ad := benchModel(b)
			lens := []int{256, 256, 256, 256, 256, 256, 256, 256}
			batch := packed(m.Config.Vocab, lens, 3)
			N := len(batch.IDs)
			w := make([]float32, N)
			for i := range w {
				w[i] = 1 / float32(N)
			}
			type moments struct{ m, v []float32 }
			opt := map[string]*moments{}
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for step := 1; step <= b.N; step++ {
				ad.ZeroGrad()
				p, err := m.Forward(ctx, batch, ad, TrainOptions{Checkpoint: ckpt})
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Backward(ctx, w, nil); err != nil {
					b.Fatal(err)
				}
				ad.Params(func(name string, param, grad []float32) {
					mo := opt[name]
					if mo == nil {
						mo = &moments{make([]float32, len(param)), make([]float32, len(param))}
						opt[name] = mo
					}
					m.be.AdamW(param, grad, mo.m, mo.v, len(param), step, kernels.DefaultAdamW(1e-4))
				})
			}
			b.ReportMetric(float64(N*b.N)/time.Since(start).Seconds(), "tokens/s")
		})
	}
}

// BenchmarkDecode: greedy-style decode steps (one new token per sequence)
// after a 32-token prompt, for 1 and 8 sequences at once.
func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct {
		S    int
		bf16 bool
	}{{1, false}, {8, false}, {1, true}, {8, true}} {
		S := c.S
		b.Run(fmt.Sprintf("S=%d,bf16=%v", S, c.bf16), func(b *testing.B) {
			m, ad := benchModel(b)
			if c.bf16 {
				m.ToBF16()
			}
			ctx := context.Background()
			cache := NewContiguousCache(&m.Config, m.Backend())
			var in []StepInput
			for s := range S {
				in = append(in, StepInput{Seq: s, IDs: packed(m.Config.Vocab, []int{32}, uint64(s)).IDs})
			}
			if _, err := m.Step(ctx, cache, in, ad); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				for s := range in {
					in[s].IDs = []int32{int32((i*7 + s) % m.Config.Vocab)}
				}
				if _, err := m.Step(ctx, cache, in, ad); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(S*b.N)/time.Since(start).Seconds(), "tokens/s")
		})
	}
}

// model05B returns a model of the Qwen2.5-0.5B shape (hidden 896, 24
// layers, 14/2 heads, MLP 4864, vocab 151936, tied) with cheap deterministic
// weights (values do not matter for speed); ~2 GB of memory in float32.
func model05B(b *testing.B, bf16 bool) *Model {
	be, err := cpu.New(cpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	c := Config{Family: "qwen2", Vocab: 151936, Hidden: 896, Intermediate: 4864, Layers: 24, Heads: 14, KVHeads: 2,
		HeadDim: 64, RMSNormEps: 1e-6, QKVBias: true, TieEmbeddings: true, RoPE: kernels.RoPEConfig{Theta: 1e6}}
	m, err := New(c, be)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range m.Tensors() {
		for i := range t.Values {
			t.Values[i] = float32((i*7919)%2001-1000) * 2e-5
		}
	}
	if bf16 {
		m.ToBF16()
	}
	return m
}

// BenchmarkDecode05B: decode steps on the 0.5B shape after a 16-token
// prompt per sequence, for 1, 8 and 32 sequences at once (continuous
// batching); tokens/s is the aggregate over the sequences.
func BenchmarkDecode05B(b *testing.B) {
	for _, bf16 := range []bool{false, true} {
		m := model05B(b, bf16)
		for _, S := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("S=%d,bf16=%v", S, bf16), func(b *testing.B) {
				ctx := context.Background()
				cache := NewContiguousCache(&m.Config, m.Backend())
				in := make([]StepInput, S)
				for s := range in {
					in[s] = StepInput{Seq: s, IDs: packed(m.Config.Vocab, []int{16}, uint64(s+1)).IDs}
				}
				if _, err := m.Step(ctx, cache, in, nil); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				start := time.Now()
				for i := range b.N {
					for s := range in {
						in[s].IDs = []int32{int32((i*7 + s) % m.Config.Vocab)}
					}
					if _, err := m.Step(ctx, cache, in, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(S*b.N)/time.Since(start).Seconds(), "tokens/s")
			})
		}
	}
}

// BenchmarkPrefill05B: a 128-token prompt into an empty cache, 0.5B shape.
func BenchmarkPrefill05B(b *testing.B) {
	m := model05B(b, false)
	ctx := context.Background()
	prompt := packed(m.Config.Vocab, []int{128}, 1).IDs
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		cache := NewContiguousCache(&m.Config, m.Backend())
		if _, err := m.Step(ctx, cache, []StepInput{{Seq: i, IDs: prompt}}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(prompt)*b.N)/time.Since(start).Seconds(), "tokens/s")
}
