package trainer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/internal/stopat"
	"github.com/hone-rl/hone/train/model"
	"github.com/hone-rl/hone/train/tinymodel"
)

// TestStopMidStepSavesOnlyWholeSteps: a run stopped (its context
// cancelled) in the second micro-batch of its second step, with
// --save-every 5 leaving the first unsaved, saves step 1 as an
// uninterrupted run saves it: the adapter and the moments byte for byte,
// the update count. When the cut step took no optimizer update yet the
// weights are still step 1's; when it had (one update per micro-batch, as
// --norm art takes) they are part way into step 2, and the step saved is
// the copy taken when step 2 began. That case saved nothing: the finished
// step was trained again by the resume.
func TestStopMidStepSavesOnlyWholeSteps(t *testing.T) {
	for _, tc := range []struct {
		name          string
		perMicroBatch bool
		wantUpdates   int
	}{
		{"one update per step", false, 1},
		{"one update per micro-batch", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stopAt := -1 // the step told to stop in its second micro-batch
			newLoop := func() (*Loop, *bytes.Buffer) {
				l, log := finiteLoop(t, 1e-3, func(int) LossFunc { return nll(nil, 0) })
				ids := []int32{5, 9, 14, 3, 7, 11}
				ex := Example{Seqs: []layout.Sequence{seq(ids, []bool{false, false, true, true, true, true})}}
				l.Next = func(_ context.Context, s int) (*Job, error) {
					mbs, err := Pack([]Example{ex, ex}, len(ids)) // two micro-batches
					if err != nil {
						return nil, err
					}
					loss, calls := nll(nil, 0), 0
					if s == stopAt {
						loss = func(mb *MicroBatch, out Outputs) (map[string]float64, []float64, error) {
							if calls++; calls == 2 {
								cancel()
							}
							return nll(nil, 0)(mb, out)
						}
					}
					return &Job{MicroBatches: mbs, Loss: loss, PerMicroBatch: tc.perMicroBatch}, nil
				}
				return l, log
			}
			ref, log := newLoop()
			if err := ref.Run(context.Background(), 0, 1); err != nil {
				t.Fatalf("uninterrupted run: %v\n%s", err, log)
			}
			l, log := newLoop()
			l.SaveEvery, stopAt = 5, 1
			if err := l.Run(ctx, 0, 3); !errors.Is(err, context.Canceled) {
				t.Fatalf("run: %v, want context.Canceled\n%s", err, log)
			}
			// The summary of a stopped run does not say it is done.
			if !strings.Contains(log.String(), `msg="training stopped"`) || strings.Contains(log.String(), "training done") {
				t.Errorf("summary of a stopped run:\n%s", log)
			}
			last, ok, err := l.Ckpt.Latest()
			if err != nil || last != 1 || !ok {
				t.Fatalf("latest %d %v %v, want step 1\n%s", last, ok, err, log)
			}
			st, err := l.Ckpt.ReadState(last)
			if err != nil || st.Step != 1 || st.OptimizerStep != tc.wantUpdates || st.Metrics["step"] != 1 {
				t.Errorf("saved state %+v %v, want step 1 after %d updates with its metrics row", st, err, tc.wantUpdates)
			}
			for _, f := range []string{"adapter_model.safetensors", checkpoint.OptimizerName} {
				want, err := os.ReadFile(filepath.Join(ref.Ckpt.StepDir(1), f))
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(filepath.Join(l.Ckpt.StepDir(1), f))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s of the stop-saved step 1 differs from the uninterrupted run's", f)
				}
			}
		})
	}
}

// TestStopDuringNonFiniteUpdateSavesNothing: a run stopped while the
// update of its second step writes Inf and NaN into the weights (a
// learning rate that overflows float32), with --save-every 5 leaving step
// 1 unsaved, refuses that step as not finite and saves nothing: the
// weights are no longer step 1's (the refused update does not advance the
// optimizer's count, but it did write them), and saved as step 1 they
// would resume a run of NaN.
func TestStopDuringNonFiniteUpdateSavesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cpuBE, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer cpuBE.Close()
	armed := false
	be := stopat.Update{Backend: cpuBE, Armed: &armed, Cancel: cancel}
	m, err := tinymodel.New(tinymodel.Options{Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Seed: 2}, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, log := finiteLoop(t, 1e-3, func(int) LossFunc { return nll(nil, 0) })
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 2, Targets: model.AllModules()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	l.Model, l.Adapter, l.Opt = m, ad, mustAdamW(t, ad, kernels.DefaultAdamW(0), 0)
	l.SaveEvery = 5
	ids := []int32{5, 9, 14, 3, 7, 11}
	ex := Example{Seqs: []layout.Sequence{seq(ids, []bool{false, false, true, true, true, true})}}
	l.Next = func(_ context.Context, s int) (*Job, error) {
		mbs, err := Pack([]Example{ex}, 64)
		if err != nil {
			return nil, err
		}
		job := &Job{MicroBatches: mbs, Loss: nll(nil, 0)}
		if s == 1 {
			// 1e42·1e-3 overflows float32: the update writes Inf·0 = NaN
			// and ±Inf into the weights.
			job.LRScale, armed = []float64{1e42}, true
		}
		return job, nil
	}
	err = l.Run(ctx, 0, 3)
	if !errors.Is(err, ErrNotFinite) {
		t.Fatalf("run: %v, want ErrNotFinite\n%s", err, log)
	}
	if last, ok, err := l.Ckpt.Latest(); err != nil || ok {
		st, _ := l.Ckpt.ReadState(last)
		t.Fatalf("latest names step %d (%v, %v, state %+v): the weights of the refused update were saved as it\n%s", last, ok, err, st, log)
	}
}
