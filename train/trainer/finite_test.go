package trainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/model"
	"github.com/hone-rl/hone/train/tinymodel"
)

// finiteLoop is a Loop over a tiny in-memory model and one fixed batch,
// saving every step into a fresh run folder; loss is the job's loss.
func finiteLoop(t *testing.T, lr float64, loss func(s int) LossFunc) (*Loop, *bytes.Buffer) {
	t.Helper()
	m := tinyCPUModel(t)
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 2, Targets: model.AllModules()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int32{5, 9, 14, 3, 7, 11}
	exs := []Example{{Seqs: []layout.Sequence{seq(ids, []bool{false, false, true, true, true, true})}}}
	var log bytes.Buffer
	l := &Loop{
		Model: m, Adapter: ad, Opt: mustAdamW(t, ad, kernels.DefaultAdamW(0), 0),
		Sched: Schedule{Kind: "constant", LR: lr}, Ckpt: &checkpoint.Run{Dir: filepath.Join(t.TempDir(), "run")},
		BaseName: "tiny", Config: map[string]string{"test": "finite"}, Log: slog.New(slog.NewTextHandler(&log, nil)), SaveEvery: 1,
		Next: func(_ context.Context, s int) (*Job, error) {
			mbs, err := Pack(exs, 64)
			if err != nil {
				return nil, err
			}
			return &Job{MicroBatches: mbs, Loss: loss(s)}, nil
		},
	}
	return l, &log
}

// nll is the mean negative log-likelihood, with extra metric sums.
func nll(extra map[string]float64, gradAt0 float64) LossFunc {
	return func(_ *MicroBatch, out Outputs) (map[string]float64, []float64, error) {
		sums := map[string]float64{}
		for k, v := range extra {
			sums[k] = v
		}
		g := make([]float64, len(out.Logprob))
		for i, lp := range out.Logprob {
			sums["loss"] -= float64(lp) / float64(len(g))
			g[i] = -1 / float64(len(g))
		}
		if gradAt0 != 0 {
			g[0] = gradAt0
		}
		return sums, g, nil
	}
}

// TestNonFiniteStepStopsBeforeSaving: a step whose loss, gradient or
// updated weights hold NaN or Inf stops the run with an error naming the
// step and the quantity, before anything of that step is written; the
// steps before it stay saved and latest names the last of them.
func TestNonFiniteStepStopsBeforeSaving(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		lr      float64
		loss    func(s int) LossFunc
		badStep int    // 1-based step that must fail
		what    string // in the error
	}{
		{"loss NaN", 1e-3, func(s int) LossFunc {
			if s == 1 {
				return nll(map[string]float64{"loss": nan}, 0)
			}
			return nll(nil, 0)
		}, 2, "the loss is not finite (NaN)"},
		{"gradient Inf", 1e-3, func(s int) LossFunc {
			if s == 1 {
				return nll(nil, math.Inf(1))
			}
			return nll(nil, 0)
		}, 2, "the gradient is not finite"},
		// 1e39 overflows float32: the first update writes Inf·0 = NaN and
		// ±Inf into the weights from a finite loss and gradient.
		{"weights", 1e39, func(int) LossFunc { return nll(nil, 0) }, 1, "the updated weights are not finite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, log := finiteLoop(t, tc.lr, tc.loss)
			err := l.Run(context.Background(), 0, 3)
			if !errors.Is(err, ErrNotFinite) {
				t.Fatalf("run: %v, want an error matching ErrNotFinite\n%s", err, log)
			}
			for _, want := range []string{fmt.Sprintf("step %d: %s", tc.badStep, tc.what), "--lr", "--max-grad-norm", fmt.Sprintf("nothing of step %d was saved", tc.badStep)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if _, err := os.Stat(l.Ckpt.StepDir(tc.badStep)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists (%v)", runfolder.StepName(tc.badStep), err)
			}
			last, ok, err := l.Ckpt.Latest()
			if err != nil || ok != (tc.badStep > 1) || last != tc.badStep-1 {
				t.Errorf("latest %d %v %v, want step %d", last, ok, err, tc.badStep-1)
			}
			rows, _ := os.ReadFile(filepath.Join(l.Ckpt.Dir, runfolder.MetricsName))
			if n := bytes.Count(rows, []byte("\n")); n != tc.badStep-1 {
				t.Errorf("%d metrics rows, want %d: %s", n, tc.badStep-1, rows)
			}
			if strings.Contains(log.String(), "last_step=3") {
				t.Errorf("summary claims every step: %s", log)
			}
		})
	}
}

// TestNonFiniteMetricIsLeftOut: with the loss, gradient and weights finite,
// a NaN among the job's other metrics does not fail the JSON of the
// metrics row or the checkpoint; it is left out and named in the log.
func TestNonFiniteMetricIsLeftOut(t *testing.T) {
	l, log := finiteLoop(t, 1e-3, func(int) LossFunc { return nll(map[string]float64{"odd_ratio": math.NaN()}, 0) })
	if err := l.Run(context.Background(), 0, 1); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	st, err := l.Ckpt.ReadState(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Metrics["odd_ratio"]; ok || st.Metrics["loss"] == 0 {
		t.Errorf("saved metrics %v: want loss and no odd_ratio", st.Metrics)
	}
	if !strings.Contains(log.String(), "not finite") || !strings.Contains(log.String(), "metrics=odd_ratio") {
		t.Errorf("log does not name the dropped metric: %s", log)
	}
}

// TestNonFiniteMetricOfSkippedStep: a step with nothing to train (every
// group's rewards equal) writes its row too, and an infinite metric of its
// job (the reward mean of rewards near the float64 limit) is left out
// there as well: it failed the row's JSON, and the run, after the step was
// saved.
func TestNonFiniteMetricOfSkippedStep(t *testing.T) {
	l, log := finiteLoop(t, 1e-3, func(int) LossFunc { return nll(nil, 0) })
	l.Next = func(_ context.Context, s int) (*Job, error) {
		return &Job{Skip: "every group's rewards are equal", Metrics: map[string]float64{"reward_mean": math.Inf(1), "groups": 2}}, nil
	}
	if err := l.Run(context.Background(), 0, 1); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	rows, err := l.Ckpt.ReadMetrics()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rows[1]["reward_mean"]; ok || rows[1]["groups"] != 2 {
		t.Errorf("metrics row %v: want groups and no reward_mean", rows[1])
	}
	if !strings.Contains(log.String(), "metrics=reward_mean") {
		t.Errorf("log does not name the dropped metric: %s", log)
	}
}

// TestAdamWRefusesNonFiniteGradient: a NaN in the gradient leaves the
// weights, moments and update count as they were.
func TestAdamWRefusesNonFiniteGradient(t *testing.T) {
	be, ad := tinyQAdapter(t)
	q := ad.Layers[0][model.ModQ]
	q.DA[0], q.DB[0] = float32(math.NaN()), 1
	A := append([]float32(nil), q.A...)
	o := mustAdamW(t, ad, kernels.DefaultAdamW(0), 0)
	if _, err := o.Update(be, ad, 1e-3); !errors.Is(err, ErrNotFinite) || !strings.Contains(err.Error(), "gradient") {
		t.Fatalf("update: %v, want a non-finite gradient error", err)
	}
	if o.Step != 0 || q.A[0] != A[0] || q.A[1] != A[1] || q.B[0] != 0 {
		t.Errorf("refused update moved the state: step %d, A %v→%v, B[0] %v", o.Step, A[:2], q.A[:2], q.B[0])
	}
}

// tinyCPUModel is a one-layer tiny model (tinymodel, seed 2) on a
// one-worker CPU backend, both closed when t ends.
func tinyCPUModel(t *testing.T) *model.Model {
	t.Helper()
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	m, err := tinymodel.New(tinymodel.Options{Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1, Seed: 2}, be)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
