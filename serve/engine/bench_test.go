package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/train/model"
)

// benchShapes are reference.py's bench shapes (servebench runs the same).
var benchShapes = map[string]model.Config{
	"tiny": {Family: "qwen2", Vocab: 4096, Hidden: 256, Intermediate: 688, Layers: 4, Heads: 8, KVHeads: 4,
		HeadDim: 32, RMSNormEps: 1e-6, QKVBias: true, RoPE: kernels.RoPEConfig{Theta: 1e6}},
	"05b": {Family: "qwen2", Vocab: 151936, Hidden: 896, Intermediate: 4864, Layers: 24, Heads: 14, KVHeads: 2,
		HeadDim: 64, RMSNormEps: 1e-6, QKVBias: true, TieEmbeddings: true, RoPE: kernels.RoPEConfig{Theta: 1e6}},
}

// benchEngineModel builds a model of a bench shape with small random
// weights on the CPU backend.
func benchEngineModel(b *testing.B, shape string) *model.Model {
	be, err := cpu.New(cpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	m, err := model.New(benchShapes[shape], be)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, t := range m.Tensors() {
		for i := range t.Values {
			t.Values[i] = float32(rng.NormFloat64()) * 0.05
		}
	}
	return m
}

// BenchmarkDecodeStep times one Model.Step of S sequences decoding one
// token each after a 32-token prompt (the model cost of one scheduler step),
// and the engine's sampling of the S rows it returns (with and without
// logprobs), separately, so that the scheduler's share of a step shows.
//
//	go test -run '^$' -bench DecodeStep/05b ./serve/engine/
func BenchmarkDecodeStep(b *testing.B) {
	for _, shape := range []string{"tiny", "05b"} {
		b.Run(shape, func(b *testing.B) {
			m := benchEngineModel(b, shape)
			for _, S := range []int{1, 8, 32} {
				prompt := make([]int32, 32)
				for i := range prompt {
					prompt[i] = int32(i * 7)
				}
				cache := NewKVCache(&m.Config, m.Backend(), 0)
				in := make([]model.StepInput, S)
				for i := range in {
					if err := cache.Reserve(i, 32+1<<12); err != nil {
						b.Fatal(err)
					}
					in[i] = model.StepInput{Seq: i, IDs: prompt}
				}
				ctx := context.Background()
				logits, err := m.Step(ctx, cache, in, nil)
				if err != nil {
					b.Fatal(err)
				}
				for i := range in {
					in[i].IDs = []int32{1}
				}
				b.Run(fmt.Sprintf("model/S=%d", S), func(b *testing.B) {
					for range b.N {
						if logits, err = m.Step(ctx, cache, in, nil); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(S*b.N)/b.Elapsed().Seconds(), "tokens/s")
				})
				// Sampling at temperature 1, without and with the chosen
				// token's logprob (which ART asks for on every request).
				for _, lp := range []bool{false, true} {
					name := "sample"
					if lp {
						name = "sample+logprobs"
					}
					b.Run(fmt.Sprintf("%s/S=%d", name, S), func(b *testing.B) {
						seqs := make([]*sequence, S)
						for i := range seqs {
							seqs[i] = &sequence{smp: newSampler(m.Backend(), Params{Temperature: 1, Seed: 1, HasSeed: true, Logprobs: lp}, i)}
						}
						V := m.Config.Vocab
						rows := make([]float32, len(logits))
						jobs := make([]pickJob, S)
						b.ResetTimer()
						for range b.N {
							copy(rows, logits)
							for i := range jobs {
								jobs[i] = pickJob{s: seqs[i], row: rows[i*V : (i+1)*V]}
							}
							pickAll(jobs)
						}
					})
				}
			}
		})
	}
}
