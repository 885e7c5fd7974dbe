package grpojob

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/grpo"
	"github.com/hone-rl/hone/train/model"
	"github.com/hone-rl/hone/train/tinymodel"
	"github.com/hone-rl/hone/train/trainer"
)

// BenchmarkGRPOStep times one GRPO step (forward, loss, backward over all
// micro-batches, AdamW) of 16 groups × 8 short trajectories on a hidden-64,
// 2-layer model with rank-8 LoRA on all projections.
func BenchmarkGRPOStep(b *testing.B) {
	dir := b.TempDir()
	md := filepath.Join(dir, "model")
	if err := tinymodel.Write(context.Background(), md, tinymodel.Options{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2}, ref.New()); err != nil {
		b.Fatal(err)
	}
	be, err := cpu.New(cpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	m, exs := stepExamples(b, md, be, 16, 8)
	tot := grpo.Totals{Items: len(exs)}
	for i := range exs {
		tot.Tokens += exs[i].Trainable()
	}
	mbs, err := trainer.Pack(exs, 2048)
	if err != nil {
		b.Fatal(err)
	}
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 8, Alpha: 16, Targets: model.AllModules()}, 1)
	if err != nil {
		b.Fatal(err)
	}
	if err := ad.Place(be); err != nil {
		b.Fatal(err)
	}
	opt, err := trainer.NewAdamW(ad, kernels.DefaultAdamW(1e-3), 1)
	if err != nil {
		b.Fatal(err)
	}
	job := &trainer.Job{MicroBatches: mbs, Loss: lossFunc(grpo.DefaultConfig(), tot, samplerTokens(exs), nil, 1)}
	tokens := 0
	for _, mb := range mbs {
		tokens += len(mb.Batch.IDs)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := trainer.Accumulate(context.Background(), m, ad, job, model.TrainOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := opt.Update(be, ad, 1e-3); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tokens), "tokens/step")
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
