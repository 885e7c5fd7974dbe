package grpojob

import (
	"testing"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/train/grpo"
	"github.com/hone-rl/hone/train/trainer"
)

// rowLenGroup is one group of trajectories, one history each, of the
// given lengths: every token after the first four trainable, with a
// sampling logprob, and rewards that all differ.
func rowLenGroup(lengths ...int) []group {
	g := group{ID: "g"}
	for i, n := range lengths {
		s := layout.Sequence{}
		for j := range n {
			s.IDs = append(s.IDs, int32(1+j%50))
			s.Trainable = append(s.Trainable, j >= 4)
			s.Logprobs = append(s.Logprobs, -0.5)
		}
		g.Rewards = append(g.Rewards, float64(i*i)) // 0, 1, 4: none at the mean
		g.Ex = append(g.Ex, trainer.Example{Seqs: []layout.Sequence{s}})
		g.Missing = append(g.Missing, "")
	}
	return []group{g}
}

// TestARTRowLengthCappedAtMaxSeqLen: with --norm art and no
// --packed-sequence-length, the row length is ART's: the longest history
// rounded up to a multiple of 2048, capped at max_seq_length (ART's
// LocalBackend._get_packed_tensors takes the min of the two), which is
// hone-train's --max-seq-len. Uncapped, histories of 2100, 1000 and 900
// tokens under --max-seq-len 3000 went into one row of 4000 tokens (rows
// of 4096), one update where ART takes two: [2100] and [1000, 900] in rows
// of 3000.
func TestARTRowLengthCappedAtMaxSeqLen(t *testing.T) {
	gs := rowLenGroup(2100, 1000, 900)
	o := Options{ScaleRewards: "group"}
	o.Loss = grpo.DefaultConfig()
	o.Loss.Norm = "art"
	o.MaxSeqLen = 3000
	job, err := stepJob(gs, []int{0}, o, 1)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]int
	for _, mb := range job.MicroBatches {
		if n := len(mb.Batch.IDs); n > o.MaxSeqLen {
			t.Errorf("a row of %d tokens, past --max-seq-len %d (ART's row length is at most its max_seq_length)", n, o.MaxSeqLen)
		}
		var lens []int
		for k := 1; k < len(mb.Batch.SeqOff); k++ {
			lens = append(lens, int(mb.Batch.SeqOff[k]-mb.Batch.SeqOff[k-1]))
		}
		rows = append(rows, lens)
	}
	if len(rows) != 2 || len(rows[0]) != 1 || rows[0][0] != 2100 || len(rows[1]) != 2 {
		t.Errorf("rows of histories %v, want ART's [[2100] [1000 900]] (rows of 3000 tokens)", rows)
	}
	if job.Metrics["rows"] != float64(len(rows)) {
		t.Errorf("rows metric %v, %d rows", job.Metrics["rows"], len(rows))
	}

	// Without --max-seq-len the row length stays the longest history
	// rounded up: one row of 4096 holds all three.
	o.MaxSeqLen = 0
	job, err = stepJob(gs, []int{0}, o, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(job.MicroBatches) != 1 {
		t.Errorf("%d rows without --max-seq-len, want 1 (rows of 4096 tokens)", len(job.MicroBatches))
	}
}
