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
		if err != nil {
			return nil, fmt.Errorf("micro-batch %d: %w", k, err)
		}
		if len(grad) != len(mb.Pos) {
			return nil, fmt.Errorf("micro-batch %d: loss gave %d gradients for %d tokens", k, len(grad), len(mb.Pos))
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
