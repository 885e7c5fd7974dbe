package trainer

import (
	"context"
	"fmt"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/format/trajectory"
)

// LayoutHistories lays out a trajectory's main history and then each of
// its additional histories, each with its own messages and tools, so that
// every history is a sequence (or several, where a prompt does not extend
// the one before) of its own within the trajectory's example: trainer.Pack
// gives each its own history index (MicroBatch.Hist) and, in GRPO, all of
// them the trajectory's advantage, and n_i counts the trainable tokens of
// them all. An additional history without trainable tokens adds nothing,
// as in ART. GRPO and SFT both lay trajectories out with it.
//
// A template that prints the date (strftime_now) prints the trajectory's
// (Trajectory.SampledAt), the date the server rendered its prompts with.
func LayoutHistories(ctx context.Context, text *layout.Model, t *trajectory.Trajectory, lopt layout.Options) ([]layout.Sequence, error) {
	lopt.Now = t.SampledAt()
	lay, err := text.Layout(ctx, t.Messages, t.Tools, lopt)
	if err != nil {
		return nil, err
	}
	seqs := lay.Sequences
	for k := range t.AdditionalHistories {
		h := &t.AdditionalHistories[k]
		hl, err := text.Layout(ctx, h.Messages, h.Tools, lopt)
		if err != nil {
			return nil, fmt.Errorf("additional_histories[%d]: %w", k, err)
		}
		for _, s := range hl.Sequences {
			if (&Example{Seqs: []layout.Sequence{s}}).Trainable() > 0 {
				seqs = append(seqs, s)
			}
		}
	}
	return seqs, nil
}
