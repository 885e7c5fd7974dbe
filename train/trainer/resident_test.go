package trainer

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/model"
	"github.com/hone-rl/hone/train/tinymodel"
)

// TestStepResident: LoRA training steps (forward, backward, clipped AdamW
// update, checkpoint save) run behind kerneltest.Resident, which panics
// when an op sees memory the backend did not allocate (a device backend's
// rule), give exactly the CPU backend's losses, norms and weights, and
// free everything they allocated: the model, the adapter and the
// optimizer leave no allocation behind. Behind Resident (an allocating
// backend) the adapter is Flat and the clip and AdamW run once over all
// its tensors; on the CPU backend once a tensor: the same bits.
func TestStepResident(t *testing.T) {
	c, err := cpu.New(cpu.Options{Workers: 2, MinParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := tinySteps(t, c, 3)
	res := kerneltest.Resident(c)
	got := tinySteps(t, res, 3)
	for s := range want.rows {
		if want.rows[s]["loss"] == 0 || !(want.rows[s]["grad_norm"] > 1e-3) {
			t.Fatalf("step %d: loss %v, grad norm %v: the test wants a loss and a clipped gradient", s+1, want.rows[s]["loss"], want.rows[s]["grad_norm"])
		}
		for _, k := range []string{"loss", "grad_norm"} {
			if got.rows[s][k] != want.rows[s][k] {
				t.Errorf("step %d: %s %v behind Resident, %v on the CPU backend", s+1, k, got.rows[s][k], want.rows[s][k])
			}
		}
	}
	if fmt.Sprint(got.weights) != fmt.Sprint(want.weights) {
		t.Error("weights after three steps differ between Resident and the CPU backend")
	}
	if n := res.Live(); n != 0 {
		t.Errorf("%d allocations (%d bytes) live after Close and Free, want 0", n, res.LiveBytes())
	}
}

// tinyResult is what tinySteps gives: each step's row and the LoRA weights
// after the last.
type tinyResult struct {
	rows    []map[string]float64
	weights []float32
}

// tinySteps runs steps LoRA training steps (forward, backward, clipped
// AdamW update, checkpoint save) of a tiny model on be, and frees the
// model, the adapter and the optimizer.
func tinySteps(t *testing.T, be kernels.Backend, steps int) tinyResult {
	m, err := tinymodel.New(tinymodel.Options{Hidden: 16, Layers: 2, Heads: 2, KVHeads: 1, Seed: 2}, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 2, Targets: model.AllModules()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ad.Place(be); err != nil {
		t.Fatal(err)
	}
	defer ad.Free()
	opt := mustAdamW(t, ad, kernels.DefaultAdamW(0), 1e-3) // a small max norm: the clipping runs
	defer opt.Free()
	exs := []Example{
		{Seqs: []layout.Sequence{seq([]int32{5, 9, 14, 3, 7, 11}, []bool{false, false, true, true, true, true})}},
		{Seqs: []layout.Sequence{seq([]int32{8, 2, 6, 1}, []bool{false, true, true, true})}},
	}
	l := &Loop{
		Model: m, Adapter: ad, Opt: opt,
		Sched: Schedule{Kind: "constant", LR: 0.05}, Ckpt: &checkpoint.Run{Dir: filepath.Join(t.TempDir(), "run")},
		BaseName: "tiny", Config: map[string]string{"test": "resident"},
		Train: model.TrainOptions{Checkpoint: true},
		Next: func(_ context.Context, s int) (*Job, error) {
			mbs, err := Pack(exs, 6)
			if err != nil {
				return nil, err
			}
			return &Job{MicroBatches: mbs, Loss: nll(nil, 0)}, nil
		},
	}
	var r tinyResult
	for s := range steps {
		row, err := l.step(context.Background(), s, func(*Job) {})
		if err != nil {
			t.Fatal(err)
		}
		r.rows = append(r.rows, row)
	}
	ad.Params(func(_ string, p, _ []float32) { r.weights = append(r.weights, p...) })
	return r
}
