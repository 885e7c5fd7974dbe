package trainer

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/model"
)

// TestPerMicroBatchUpdates: a job with PerMicroBatch takes one optimizer
// update per micro-batch, each on the weights the one before left, with
// its own learning-rate scale — exactly what one step per micro-batch
// does — and reports how many it took.
func TestPerMicroBatchUpdates(t *testing.T) {
	m := tinyCPUModel(t)
	exs := []Example{
		{Seqs: []layout.Sequence{seq([]int32{5, 9, 14, 3, 7}, []bool{false, false, true, true, true})}},
		{Seqs: []layout.Sequence{seq([]int32{8, 2, 6, 1}, []bool{false, true, true, true})}},
	}
	mbs, err := Pack(exs, 5) // one micro-batch per example
	if err != nil {
		t.Fatal(err)
	}
	if len(mbs) != 2 {
		t.Fatalf("%d micro-batches, want 2", len(mbs))
	}
	scales := []float64{1, 0.25}
	run := func(next func(s int) *Job, steps int) (*model.Adapter, []map[string]float64) {
		ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 2, Targets: model.AllModules()}, 1)
		if err != nil {
			t.Fatal(err)
		}
		l := &Loop{
			Model: m, Adapter: ad, Opt: mustAdamW(t, ad, kernels.DefaultAdamW(0), 0),
			Sched: Schedule{Kind: "constant", LR: 0.05}, Ckpt: &checkpoint.Run{Dir: filepath.Join(t.TempDir(), "run")},
			BaseName: "tiny", Config: map[string]string{"test": "updates"},
			Next: func(_ context.Context, s int) (*Job, error) { return next(s), nil },
		}
		var rows []map[string]float64
		for s := range steps {
			row, err := l.step(context.Background(), s, func(*Job) {})
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, row)
		}
		if l.Opt.Step != 2 {
			t.Errorf("%d optimizer updates, want 2", l.Opt.Step)
		}
		return ad, rows
	}
	loss := nll(nil, 0)
	one, rows := run(func(int) *Job {
		return &Job{MicroBatches: mbs, Loss: loss, PerMicroBatch: true, LRScale: scales}
	}, 1)
	two, _ := run(func(s int) *Job {
		return &Job{MicroBatches: mbs[s : s+1], Loss: loss, LRScale: scales[s : s+1]}
	}, 2)
	if rows[0]["updates"] != 2 || rows[0]["lr"] != 0.05*(1+0.25)/2 {
		t.Errorf("updates %v lr %v, want 2 and the mean scaled lr %v", rows[0]["updates"], rows[0]["lr"], 0.05*(1+0.25)/2)
	}
	fresh, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 2, Targets: model.AllModules()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var a, b, init []float32
	one.Params(func(_ string, p, _ []float32) { a = append(a, p...) })
	two.Params(func(_ string, p, _ []float32) { b = append(b, p...) })
	fresh.Params(func(_ string, p, _ []float32) { init = append(init, p...) })
	moved := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("weight %d: %v after one step of two updates, %v after two steps", i, a[i], b[i])
		}
		if a[i] != init[i] {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no weight moved")
	}
	// A job whose scales do not match its updates is refused.
	_, _, _, _, err = (&Loop{Model: m}).train(context.Background(), &Job{MicroBatches: mbs, PerMicroBatch: true, LRScale: []float64{1}}, 0)
	if err == nil {
		t.Error("2 updates with 1 learning-rate scale accepted")
	}
}
