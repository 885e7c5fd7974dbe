package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/model"
)

// Loop runs training steps from a saved (or fresh) state to a target step,
// saving a checkpoint and writing a metrics row after each.
type Loop struct {
	Model    *model.Model
	Adapter  *model.Adapter
	Opt      *AdamW
	Sched    Schedule
	Ckpt     *checkpoint.Run
	BaseName string // base_model_name_or_path of saved adapters
	Config   any    // the run's options, saved in every step folder
	Train    model.TrainOptions

	SaveEvery  int    // save every n steps (and always the last); ≤ 0: only the last
	KeepLast   int    // step folders kept (≤ 0: all)
	BestMetric string // metric picking the best step ("" none)
	BestMax    bool   // higher BestMetric is better
	// Extra is saved in each step's state (incremental sessions).
	Extra json.RawMessage

	Log *slog.Logger // one line per step, skip notices and the end summary; nil: none
	// Next returns the job of step s (0-based: the step that makes s+1
	// steps done). It must depend only on s and the run's inputs, so that a
	// resumed run repeats exactly what an uninterrupted one would do.
	Next func(ctx context.Context, s int) (*Job, error)

	pastHorizon bool // warned that the schedule is past its horizon (warnPastHorizon)
}

// Run trains steps from (steps already done) up to to. A step whose loss,
// gradient or updated weights are not finite stops the run before anything
// of it is written (ErrNotFinite): the step folders and latest stay as the
// last good step left them.
//
// Cancelled (SIGINT, SIGTERM: a pod eviction, an overlapping cron job),
// Run saves the last finished step when SaveEvery left it unsaved, then
// returns ctx's error: the finished steps are kept, as every stage keeps
// its finished work, rather than redone by the resume. A step cut short
// after an optimizer update (--norm art takes one per row) has left the
// weights between two steps: such a step starts from a copy of the
// adapter and the optimizer's state when the step before it is unsaved,
// and a stop saves that copy.
func (l *Loop) Run(ctx context.Context, from, to int) (err error) {
	skipped, updates, done := 0, l.Opt.Step, from
	var unsaved map[string]float64 // the metrics row of step done, while it is not saved
	defer func() {
		if done > from { // the one-line summary of the run
			msg := "training done"
			if err != nil { // stopped or failed: last_step is the last finished
				msg = "training stopped"
			}
			l.log().Info(msg, "run", l.Ckpt.Dir, "first_step", from+1, "last_step", done,
				"optimizer_updates", l.Opt.Step-updates, "steps_with_nothing_to_train", skipped)
		}
	}()
	for s := from; s < to; s++ {
		if err := ctx.Err(); err != nil {
			return l.saveStopped(done, unsaved, nil, err)
		}
		before := l.Opt.Step
		var start *savedState // step done's state, when this step may change it part way
		row, err := l.step(ctx, s, func(job *Job) {
			if unsaved != nil && job.PerMicroBatch {
				start = l.current()
			}
		})
		if err != nil {
			if ctx.Err() != nil && (start != nil || l.Opt.Step == before && !errors.Is(err, ErrNotFinite)) {
				// Cancelled before the step changed the weights, or from
				// the copy taken before it did. A non-finite update leaves
				// the count but has written Inf or NaN into the weights
				// (and the moments): without a copy they are no one's step.
				return l.saveStopped(done, unsaved, start, l.stepError(s+1, err))
			}
			return l.stepError(s+1, err)
		}
		if _, ok := row["grad_norm"]; !ok {
			skipped++
		}
		// When the step ended, on the wall clock (Unix seconds): the
		// report's wall-time axis, which shows the time between steps too.
		row["time"] = float64(time.Now().UnixMilli()) / 1e3
		unsaved = row
		// SaveEvery 0 saves the last step alone, as a TRL script with
		// save_strategy "no" saves its model once at the end: the
		// checkpoints of a run whose step count is not known in advance
		// (--epochs) cannot be asked for otherwise.
		if (l.SaveEvery > 0 && (s+1)%l.SaveEvery == 0) || s+1 == to {
			if err := l.save(s+1, row, l.live()); err != nil {
				return err
			}
			unsaved = nil
		}
		if err := l.Ckpt.AppendMetrics(row); err != nil {
			return err
		}
		done = s + 1
	}
	return nil
}

// savedState is what a step folder holds of the training state: the
// adapter, the optimizer's moments and its update count, copied.
type savedState struct {
	adapter *peft.Adapter
	moments []checkpoint.Tensor
	updates int
}

// live is the state as it is now, its moments the optimizer's own.
func (l *Loop) live() *savedState {
	return &savedState{adapter: l.Adapter.ToPEFT(l.BaseName), moments: l.Opt.Tensors(), updates: l.Opt.Step}
}

// current copies the state as it is now, to be saved after later updates.
func (l *Loop) current() *savedState {
	st := l.live()
	for i := range st.moments {
		st.moments[i].Values = slices.Clone(st.moments[i].Values)
	}
	return st
}

// save writes step n, whose metrics row is row and state st, and prunes
// the run.
func (l *Loop) save(n int, row map[string]float64, st *savedState) error {
	state := checkpoint.State{Step: n, OptimizerStep: st.updates, Metrics: row, Extra: l.Extra}
	if err := l.Ckpt.Save(st.adapter, st.moments, state, savedConfig{l.Config}); err != nil {
		return err
	}
	return l.Ckpt.Prune(l.KeepLast, l.BestMetric, l.BestMax)
}

// saveStopped saves step done, whose metrics row is row, when the run was
// stopped with it unsaved (row not nil), and returns stopErr, joined with
// the save's error if any. st is step done's state (nil: the live one).
func (l *Loop) saveStopped(done int, row map[string]float64, st *savedState, stopErr error) error {
	if row == nil {
		return stopErr
	}
	if st == nil {
		st = l.live()
	}
	if err := l.save(done, row, st); err != nil {
		return errors.Join(stopErr, fmt.Errorf("saving step %d on the way out: %w", done, err))
	}
	l.log().Info("stopped: saved the last finished step", "run", l.Ckpt.Dir, "step", done)
	return stopErr
}

// stepError names step n in err; a non-finite step also says what to do
// and what is left on disk.
func (l *Loop) stepError(n int, err error) error {
	if !errors.Is(err, ErrNotFinite) {
		return fmt.Errorf("step %d: %w", n, err)
	}
	kept := "the run has no saved step yet"
	if last, ok, lerr := l.Ckpt.Latest(); lerr == nil && ok {
		// A resume keeps the run's options, so the advice needs a new run
		// that starts from the last good step.
		kept = fmt.Sprintf("%s still names %s (a resumed run keeps its --lr and --max-grad-norm: to change them, start another --run with --init-adapter %s)",
			filepath.Join(l.Ckpt.Dir, runfolder.LatestName), runfolder.StepName(last), l.Ckpt.StepDir(last))
	}
	return fmt.Errorf("step %d: %w: lower --lr, set --max-grad-norm to clip the gradient, and check the rewards; nothing of step %d was saved, %s",
		n, err, n, kept)
}

// step trains step s (0-based); starting is called with its job before
// the job changes anything.
func (l *Loop) step(ctx context.Context, s int, starting func(*Job)) (map[string]float64, error) {
	t0 := time.Now()
	job, err := l.Next(ctx, s)
	if err != nil {
		return nil, err
	}
	starting(job)
	row := map[string]float64{"step": float64(s + 1)}
	maps.Copy(row, job.Metrics)
	if job.Skip != "" {
		row["trainable_tokens"] = 0
		row["seconds"] = time.Since(t0).Seconds()
		l.log().Info("nothing to train", "step", s+1, "why", job.Skip)
		l.leaveOutNonFinite(row, s+1)
		return row, nil
	}
	sums, norm, lr, updates, err := l.train(ctx, job, s)
	if err != nil {
		return nil, err
	}
	secs := time.Since(t0).Seconds()
	for k, v := range sums {
		if k != "entropy_sum" {
			row[k] = v
		}
	}
	if n := sums["trainable_tokens"]; n > 0 {
		row["entropy"] = sums["entropy_sum"] / n
	}
	row["grad_norm"] = norm // mean over the step's updates
	row["lr"] = lr
	if job.PerMicroBatch {
		row["updates"] = float64(updates)
	}
	row["seconds"] = secs
	row["tokens_per_s"] = sums["tokens"] / secs
	l.log().Info("step", metricAttrs(row)...)
	l.leaveOutNonFinite(row, s+1)
	return row, nil
}

// leaveOutNonFinite drops row's NaN and Inf values (dropNonFinite),
// warning of them by name; n is the step (1-based).
func (l *Loop) leaveOutNonFinite(row map[string]float64, n int) {
	if bad := dropNonFinite(row); len(bad) > 0 {
		l.log().Warn("metrics not finite, left out of the metrics row", "step", n, "metrics", strings.Join(bad, ","))
	}
}

// dropNonFinite deletes the NaN and Inf values of row, which JSON cannot
// hold, and returns their names. The loss, gradient and weights were
// checked before; this covers the job's other metrics (a ratio of an
// empty sum, an entropy), so that writing the row never fails.
func dropNonFinite(row map[string]float64) []string {
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(row)) {
		if !isFinite(row[k]) {
			bad = append(bad, k)
			delete(row, k)
		}
	}
	return bad
}

// log is l.Log, or a logger that drops everything.
func (l *Loop) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}

// metricAttrs are a step's metrics as log attributes: the step first, then
// the rest by name, each rounded to 4 significant digits (a number still,
// for --log-format json).
func metricAttrs(row map[string]float64) []any {
	attrs := []any{slog.Int("step", int(row["step"]))}
	for _, k := range slices.Sorted(maps.Keys(row)) {
		if k == "step" {
			continue
		}
		v, _ := strconv.ParseFloat(strconv.FormatFloat(row[k], 'g', 4, 64), 64)
		attrs = append(attrs, slog.Float64(k, v))
	}
	return attrs
}

// Restore loads step n of run for model m: the adapter (placed on m's
// backend) and the optimizer's moments and update count. An adapter,
// trainer state or optimizer file that cannot be used (a NaN weight or moment left by a
// diverged step, a corrupt copy) is the input's fault: stageerr.Input.
func Restore(run *checkpoint.Run, n int, m *model.Model, p kernels.AdamWParams, maxGradNorm float64) (*model.Adapter, *AdamW, checkpoint.State, error) {
	ad, err := model.ReadAdapter(run.StepDir(n), &m.Config)
	if err != nil {
		return nil, nil, checkpoint.State{}, stageerr.Input(err)
	}
	st, err := run.ReadState(n)
	if err != nil {
		// A cut-short or hand-edited trainer_state.json is the input's
		// fault, as a bad adapter or optimizer file of the step is.
		return nil, nil, st, stageerr.Input(err)
	}
	if err := ad.Place(m.Backend()); err != nil {
		return nil, nil, st, err
	}
	opt, err := NewAdamW(ad, p, maxGradNorm)
	if err != nil {
		ad.Free()
		return nil, nil, st, err
	}
	if err := run.ReadOptimizer(n, opt.Tensors()); err != nil {
		opt.Free()
		ad.Free()
		return nil, nil, st, stageerr.Input(err)
	}
	opt.Step = st.OptimizerStep
	return ad, opt, st, nil
}
