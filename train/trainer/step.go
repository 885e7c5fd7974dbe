package trainer

import (
	"context"
	"fmt"
	"strings"

	"github.com/hone-rl/hone/train/model"
)

// Outputs are a micro-batch's forward results at its trainable positions
// (aligned with MicroBatch.Pos).
type Outputs struct {
	Logprob []float32 // ℓ_θ with the adapter
	Entropy []float32 // entropy of the next-token distribution
	Ref     []float32 // ℓ with the adapter off; only when Job.NeedRef
}

// LossFunc returns a micro-batch's share of the step loss as additive
// metric sums ("loss" among them) and dLoss/dℓ at mb.Pos.
type LossFunc func(mb *MicroBatch, out Outputs) (sums map[string]float64, grad []float64, err error)

// Job is one training step's work.
type Job struct {
	MicroBatches []*MicroBatch
	Loss         LossFunc
	NeedRef      bool // run each micro-batch with the adapter off too (KL)
	// Metrics are the step's data metrics (rewards, groups, …), copied into
	// the metrics row.
	Metrics map[string]float64
	// Skip, when not empty, says why this step has nothing to train; the
	// step is counted, logged with this reason, and no update happens.
	Skip string
	// PerMicroBatch takes one optimizer update per micro-batch, in order,
	// each on the weights the previous one left (ART's one step per packed
	// row), instead of one update on the gradient summed over all of them.
	PerMicroBatch bool
	// LRScale, when not nil, multiplies the scheduled learning rate of
	// each update: one entry per micro-batch with PerMicroBatch, else one.
	LRScale []float64
}

// updates splits the job's micro-batches into its optimizer updates.
func (j *Job) updates() [][]*MicroBatch {
	if !j.PerMicroBatch {
		return [][]*MicroBatch{j.MicroBatches}
	}
	out := make([][]*MicroBatch, len(j.MicroBatches))
	for k, mb := range j.MicroBatches {
		out[k] = []*MicroBatch{mb}
	}
	return out
}

// train runs job's updates, those of step s (0-based), on l's adapter and
// optimizer. It returns the loss sums over all micro-batches (maxima for
// "_max" keys), the mean gradient norm and learning rate over the updates,
// and their count. A loss that is not finite stops it before that update
// (ErrNotFinite).
//
// The schedule is read at the step, as transformers' schedulers are at
// each of num_training_steps: a step with nothing to train (Job.Skip)
// takes no update but its place in the schedule, so that the cosine ends
// with the run's last step however many steps were skipped (counted by
// updates, each skip held it back a step). A job of one update per
// micro-batch (--norm art) reads it at the optimizer's update count,
// whose horizon is --schedule-steps or, on files, the count grpojob makes
// by packing every step's rows ahead (countUpdates).
func (l *Loop) train(ctx context.Context, job *Job, s int) (sums map[string]float64, norm, lr float64, n int, err error) {
	ups := job.updates()
	if job.LRScale != nil && len(job.LRScale) != len(ups) {
		return nil, 0, 0, 0, fmt.Errorf("trainer: %d learning-rate scales for %d updates", len(job.LRScale), len(ups))
	}
	sums = map[string]float64{}
	for k, mbs := range ups {
		sub := *job
		sub.MicroBatches = mbs
		got, err := Accumulate(ctx, l.Model, l.Adapter, &sub, l.Train)
		if err != nil {
			return nil, 0, 0, 0, err
		}
		if loss := got["loss"]; !isFinite(loss) {
			return nil, 0, 0, 0, &notFinite{what: "loss", detail: fmt.Sprint(loss)}
		}
		at, unit := s, "step"
		if job.PerMicroBatch {
			at, unit = l.Opt.Step, "update"
		}
		lrk := l.Sched.At(at)
		l.warnPastHorizon(at, unit)
		if job.LRScale != nil {
			lrk *= job.LRScale[k]
		}
		nk, err := l.Opt.Update(l.Model.Backend(), l.Adapter, lrk)
		if err != nil {
			return nil, 0, 0, 0, err
		}
		for key, v := range got {
			if old, ok := sums[key]; ok && strings.HasSuffix(key, "_max") {
				sums[key] = max(old, v)
			} else {
				sums[key] += v
			}
		}
		norm += nk
		lr += lrk
	}
	n = len(ups)
	return sums, norm / float64(n), lr / float64(n), n, nil
}

// Accumulate runs every micro-batch of job forward and backward, adding the
// gradient of the step loss into ad's DA/DB (cleared first), and returns the
// summed loss metrics plus "entropy_sum" and "trainable_tokens" and "tokens".
func Accumulate(ctx context.Context, m *model.Model, ad *model.Adapter, job *Job, topt model.TrainOptions) (map[string]float64, error) {
	ad.ZeroGrad()
	sums := map[string]float64{}
	for k, mb := range job.MicroBatches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var out Outputs
		if job.NeedRef {
			ref, err := m.Forward(ctx, &mb.Batch, nil, topt)
			if err != nil {
				return nil, fmt.Errorf("micro-batch %d, adapter off: %w", k, err)
			}
			out.Ref = gather(ref.Logprob, mb.Pos)
			// gather copied what the loss needs: hand the pass's planned
			// memory back for the next Forward instead of to the GC.
			ref.Release()
		}
		pass, err := m.Forward(ctx, &mb.Batch, ad, topt)
		if err != nil {
			return nil, fmt.Errorf("micro-batch %d: %w", k, err)
		}
		out.Logprob, out.Entropy = gather(pass.Logprob, mb.Pos), gather(pass.Entropy, mb.Pos)
		s, grad, err := job.Loss(mb, out)
		if err == nil && len(grad) != len(mb.Pos) {
			err = fmt.Errorf("loss gave %d gradients for %d tokens", len(grad), len(mb.Pos))
		}
		if err != nil {
			pass.Release() // its memory is the backend's: hand it back on every path
			return nil, fmt.Errorf("micro-batch %d: %w", k, err)
		}
		for key, v := range s {
			if old, ok := sums[key]; ok && strings.HasSuffix(key, "_max") {
				sums[key] = max(old, v)
			} else {
				sums[key] += v
			}
		}
		for _, e := range out.Entropy {
			sums["entropy_sum"] += float64(e)
		}
		sums["trainable_tokens"] += float64(len(mb.Pos))
		sums["tokens"] += float64(len(mb.Batch.IDs))
		dlp := make([]float32, len(mb.Batch.IDs))
		for i, p := range mb.Pos {
			dlp[p] = float32(grad[i])
		}
		err = pass.Backward(ctx, dlp, nil)
		pass.Release() // the gradients are in ad; the activations can be reused
		if err != nil {
			return nil, fmt.Errorf("micro-batch %d backward: %w", k, err)
		}
	}
	return sums, nil
}

func gather(x []float32, pos []int) []float32 {
	out := make([]float32, len(pos))
	for i, p := range pos {
		out[i] = x[p]
	}
	return out
}

// warnPastHorizon warns, once a call, when the cosine schedule reads
// index at (0-based; a step, or with unit "update" an optimizer update)
// at or past its horizon: from there it trains at --min-lr, by default 0,
// which changes nothing. Only a --schedule-steps below what the call
// trains to gets there (the default horizon is the call's last step or,
// with grpo --norm art, its counted updates), and with --norm art a
// horizon given in steps, not updates, does so early; silent, the run
// spent its remaining steps and exited 0. A warm-up that reaches the
// horizon leaves the cosine no span (Schedule.At keeps --lr after it, and
// Options.noDecay warns of that): not warned here, where it would claim
// --min-lr.
func (l *Loop) warnPastHorizon(at int, unit string) {
	if l.pastHorizon || l.Sched.Kind != "cosine" || at < l.Sched.Total || l.Sched.Total <= l.Sched.Warmup {
		return
	}
	l.pastHorizon = true
	l.log().Warn(fmt.Sprintf("--lr-schedule cosine: %s %d is past the horizon of %d (--schedule-steps %d; optimizer updates with grpo --norm art): it and the rest of this call train at --min-lr %v; give --schedule-steps the run's planned %ss",
		unit, at+1, l.Sched.Total, l.Sched.Total, l.Sched.MinLR, unit))
}
