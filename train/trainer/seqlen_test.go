package trainer

import (
	"testing"

	"github.com/hone-rl/hone/format/layout"
)

// seqOf is a sequence of n tokens whose tokens from..to-1 are trainable.
func seqOf(n, from, to int) layout.Sequence {
	s := layout.Sequence{IDs: make([]int32, n), Trainable: make([]bool, n), Logprobs: make([]float32, n)}
	for i := from; i < to; i++ {
		s.Trainable[i] = true
	}
	return s
}

// TestContextCountsThroughLastTrainedToken: a server holds prompt plus
// completion to the model's context (vLLM's max_model_len, hone-serve's
// maxCtx), so a turn sampled to the limit (no max_tokens, finish_reason
// length, or a stop token in the last position) fills it exactly; the
// layout then adds the template's glue after the turn (Qwen's
// "<|im_end|>\n"), context that trains nothing and, under causal
// attention, changes no trained token's logprob. Such a trajectory was
// refused as longer than the model's context, though every token it
// trains sits at a position the model has. A trained token past the
// context is still refused, and --max-seq-len still counts every token.
func TestContextCountsThroughLastTrainedToken(t *testing.T) {
	ctx := &Lengths{Max: 8, What: "the model's context of 8 tokens"}
	atLimit := &Example{Seqs: []layout.Sequence{seqOf(10, 5, 8)}}
	if ctx.Check(atLimit, "r0") {
		t.Errorf("a sequence trained through position 7 of 8, with 2 tokens of template glue after it, was found past the context")
	}
	past := &Example{Seqs: []layout.Sequence{seqOf(10, 5, 9)}}
	if !ctx.Check(past, "r1") {
		t.Errorf("a sequence trained through its 9th token passed a context of 8")
	}
	if err := ctx.Report(nil); err == nil {
		t.Errorf("Report: no error for a trained token past the context")
	}
	drop := &Lengths{Max: 8, Drop: true, What: "--max-seq-len 8"}
	if !drop.Check(&Example{Seqs: []layout.Sequence{seqOf(10, 5, 8)}}, "r2") {
		t.Errorf("--max-seq-len 8 kept a sequence of 10 tokens")
	}
}
