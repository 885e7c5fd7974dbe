package trainer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/layout"
)

// TestStopMidStepSavesOnlyWholeSteps: a run stopped (its context
// cancelled) in the second micro-batch of its second step, with
// --save-every 5 leaving the first unsaved, saves step 1 when the cut step
// took no optimizer update yet (the weights are step 1's), and saves
// nothing when it had (one update per micro-batch, as --norm art takes:
// the weights are part way into step 2, and saved as step 1 they would
// resume into another run).
func TestStopMidStepSavesOnlyWholeSteps(t *testing.T) {
	for _, tc := range []struct {
		name          string
		perMicroBatch bool
		wantLatest    int // 0: none
	}{
		{"one update per step", false, 1},
		{"one update per micro-batch", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l, log := finiteLoop(t, 1e-3, func(int) LossFunc { return nll(nil, 0) })
			l.SaveEvery = 5
			ids := []int32{5, 9, 14, 3, 7, 11}
			ex := Example{Seqs: []layout.Sequence{seq(ids, []bool{false, false, true, true, true, true})}}
			l.Next = func(_ context.Context, s int) (*Job, error) {
				mbs, err := Pack([]Example{ex, ex}, len(ids)) // two micro-batches
				if err != nil {
					return nil, err
				}
				loss, calls := nll(nil, 0), 0
				if s == 1 { // step 2 is told to stop in its second micro-batch
					loss = func(mb *MicroBatch, out Outputs) (map[string]float64, []float64, error) {
						if calls++; calls == 2 {
							cancel()
						}
						return nll(nil, 0)(mb, out)
					}
				}
				return &Job{MicroBatches: mbs, Loss: loss, PerMicroBatch: tc.perMicroBatch}, nil
			}
			if err := l.Run(ctx, 0, 3); !errors.Is(err, context.Canceled) {
				t.Fatalf("run: %v, want context.Canceled\n%s", err, log)
			}
			// The summary of a stopped run does not say it is done.
			if !strings.Contains(log.String(), `msg="training stopped"`) || strings.Contains(log.String(), "training done") {
				t.Errorf("summary of a stopped run:\n%s", log)
			}
			last, ok, err := l.Ckpt.Latest()
			if err != nil || last != tc.wantLatest || ok != (tc.wantLatest > 0) {
				t.Fatalf("latest %d %v %v, want step %d\n%s", last, ok, err, tc.wantLatest, log)
			}
			if ok {
				st, err := l.Ckpt.ReadState(last)
				if err != nil || st.Step != 1 || st.OptimizerStep != 1 || st.Metrics["step"] != 1 {
					t.Errorf("saved state %+v %v, want step 1 after 1 update with its metrics row", st, err)
				}
			}
		})
	}
}
