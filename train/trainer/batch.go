package trainer

import (
	"fmt"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/train/model"
)

// Example is one trajectory laid out for training: its token sequences and
// the trajectory's advantage (GRPO; unused by SFT).
type Example struct {
	Seqs []layout.Sequence
	Adv  float64
}

// Tokens counts the example's tokens (context included).
func (e *Example) Tokens() int {
	n := 0
	for _, s := range e.Seqs {
		n += len(s.IDs)
	}
	return n
}

// Trainable counts the example's trainable tokens (position 0 can never be
// trained: nothing predicts it).
func (e *Example) Trainable() int {
	n := 0
	for _, s := range e.Seqs {
		for j := 1; j < len(s.Trainable); j++ {
			if s.Trainable[j] {
				n++
			}
		}
	}
	return n
}

// MicroBatch is whole examples packed into one model batch.
type MicroBatch struct {
	Batch model.Batch
	// Pos are the batch positions whose target is a trainable token, in
	// order; Item, Sampler and Adv are aligned with it.
	Pos     []int
	Item    []int32   // index of the token's example within this micro-batch
	Sampler []float32 // the sampler's logprob of the target token (NaN: unknown)
	// Adv and ItemTokens are per example of this micro-batch.
	Adv        []float64
	ItemTokens []int
	// Hist is the sequence (history) of each trainable position, counted
	// over the micro-batch's sequences in order; HistTokens counts each
	// sequence's trainable positions.
	Hist       []int32
	HistTokens []int
	// Examples are the indices of the packed examples in the step's list.
	Examples []int
}

// Pack groups examples, in order, into micro-batches of at most budget
// tokens each (an example longer than budget gets a micro-batch of its own),
// so that gradients accumulated over them equal the gradient of the whole
// step. Input position j predicts token j+1: Targets[j] = IDs[j+1] where
// that token is trainable, −1 elsewhere.
func Pack(exs []Example, budget int) ([]*MicroBatch, error) {
	if budget <= 0 {
		return nil, fmt.Errorf("trainer: token budget %d must be positive", budget)
	}
	var out []*MicroBatch
	var cur *MicroBatch
	for i := range exs {
		e := &exs[i]
		n := e.Tokens()
		if n == 0 {
			continue
		}
		if cur == nil || (len(cur.Batch.IDs)+n > budget && len(cur.Examples) > 0) {
			cur = &MicroBatch{Batch: model.Batch{SeqOff: []int32{0}}}
			out = append(out, cur)
		}
		item := int32(len(cur.Examples))
		cur.Examples = append(cur.Examples, i)
		cur.Adv = append(cur.Adv, e.Adv)
		cur.ItemTokens = append(cur.ItemTokens, e.Trainable())
		b := &cur.Batch
		for _, s := range e.Seqs {
			base := len(b.IDs)
			hist := int32(len(cur.HistTokens))
			cur.HistTokens = append(cur.HistTokens, 0)
			for j, id := range s.IDs {
				b.IDs = append(b.IDs, id)
				b.Pos = append(b.Pos, int32(j))
				tgt := int32(-1)
				if j+1 < len(s.IDs) && s.Trainable[j+1] {
					tgt = s.IDs[j+1]
					cur.Pos = append(cur.Pos, base+j)
					cur.Item = append(cur.Item, item)
					cur.Sampler = append(cur.Sampler, s.Logprobs[j+1])
					cur.Hist = append(cur.Hist, hist)
					cur.HistTokens[hist]++
				}
				b.Targets = append(b.Targets, tgt)
			}
			b.SeqOff = append(b.SeqOff, int32(len(b.IDs)))
		}
	}
	return out, nil
}
