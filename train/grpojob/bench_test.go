package grpojob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/checkpoint"
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

// BenchmarkWatchNothingNew times a --watch-dir call that finds nothing new
// in a folder of 200 objects of 1 MiB, all consumed before, on a fake S3
// over HTTP (gets/op: the GETs of those objects per call). Before the
// quick check each such call read all 200 MiB to hash it.
func BenchmarkWatchNothingNew(b *testing.B) {
	dir := b.TempDir()
	md := tinyModel(b, dir)
	const bucket = "bkt"
	s3 := startObjectGets(b, bucket)
	first := filepath.Join(dir, "round0.parquet")
	writeGroups(b, md, first, 1, 3, varied)
	data, err := os.ReadFile(first)
	if err != nil {
		b.Fatal(err)
	}
	s3.put(b, bucket, "incoming/round0.parquet", data)
	o := baseOptions(md, dir, "cron")
	o.WatchDir, o.GroupsPerStep = "s3://"+bucket+"/incoming/"+s3.query, 0
	call := func() {
		var log bytes.Buffer
		if err := runWith(context.Background(), backend(b), o, textLog(&log)); err != nil {
			b.Fatalf("%v\n%s", err, log.String())
		}
	}
	call()
	// 200 files consumed before, recorded as a manifest of before stats
	// were kept has them (the first call below reads them once).
	run := &checkpoint.Run{Dir: filepath.Join(dir, "cron")}
	man, err := run.ReadManifest()
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		blob := make([]byte, 1<<20)
		for k := range blob {
			blob[k] = byte(rng.Uint32())
		}
		key := fmt.Sprintf("hist-%03d.parquet", i)
		s3.put(b, bucket, "incoming/"+key, blob)
		sum := sha256.Sum256(blob)
		man.Consumed = append(man.Consumed, checkpoint.FileEntry{Path: "s3://" + bucket + "/incoming/" + key + s3.query, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(blob)), Step: 1})
	}
	if err := run.WriteManifest(man); err != nil {
		b.Fatal(err)
	}
	call()
	s3.take()
	for b.Loop() {
		call()
	}
	gets := 0
	for _, n := range s3.take() {
		gets += n
	}
	b.ReportMetric(float64(gets)/float64(b.N), "gets/op")
}

// BenchmarkCountUpdates times the count of a --norm art cosine run's
// updates ahead (countUpdates) over an input of 4096 groups × 8
// trajectories of about 200 tokens, 32 groups a step (128 steps, one
// epoch), ART's default row length: what a run on such files spends
// before its first step (ms/step: per step counted).
func BenchmarkCountUpdates(b *testing.B) {
	dir := b.TempDir()
	md := tinyModel(b, dir)
	in := filepath.Join(dir, "big.parquet")
	answer := func(g, i int) string {
		var s bytes.Buffer
		for k := range 40 {
			fmt.Fprintf(&s, "move %d ", (g*7+i*3+k)%10)
		}
		return s.String()
	}
	writeGroupsWith(b, md, in, 4096, 8, answer, varied)
	_, gs := loadFixture(b, md, backend(b), in)
	o := baseOptions(md, dir, "r", in)
	o.Loss.Norm, o.GroupsPerStep = "art", 32
	sc := trainer.Order{N: len(gs), PerStep: 32, Seed: 1}
	steps := sc.StepsFor(1)
	var n int
	for b.Loop() {
		var err error
		if n, err = countUpdates(context.Background(), gs, sc, o, 0, 0, steps, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "updates")
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N*steps), "ms/step")
}
