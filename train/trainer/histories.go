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
// them all. A sequence without trainable tokens adds nothing (an
// additional history that trains nothing, as in ART, or a sequence of the
// main history whose turns are all context, where --turns last or a
// trajectory's marks train only some turns), so none is kept: it cost the
// model a pass over its tokens each step, and --max-seq-len, which counts
// every sequence, left a trajectory out for one. GRPO and SFT both lay
// trajectories out with it.
//
// A template that prints the date (strftime_now) prints the trajectory's
// (Trajectory.SampledAt), the date the server rendered its prompts with.
func LayoutHistories(ctx context.Context, text *layout.Model, t *trajectory.Trajectory, lopt layout.Options) ([]layout.Sequence, error) {
	lopt.Now = t.SampledAt()
	lay, err := text.Layout(ctx, t.Messages, t.Tools, lopt)
	if err != nil {
		return nil, err
	}
	seqs := trained(nil, lay.Sequences)
	for k := range t.AdditionalHistories {
		h := &t.AdditionalHistories[k]
		hl, err := text.Layout(ctx, h.Messages, h.Tools, lopt)
		if err != nil {
			return nil, fmt.Errorf("additional_histories[%d]: %w", k, err)
		}
		seqs = trained(seqs, hl.Sequences)
	}
	return seqs, nil
}

// trained appends to seqs those of add with a trainable token.
func trained(seqs, add []layout.Sequence) []layout.Sequence {
	for _, s := range add {
		if (&Example{Seqs: []layout.Sequence{s}}).Trainable() > 0 {
			seqs = append(seqs, s)
		}
	}
	return seqs
}
