package trainer

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/internal/stageerr"
)

// Lengths checks the sequences of a run's trajectories against the
// longest it trains and the micro-batch size, as they are laid out
// (Check), and reports them once for the inputs (Report). A sequence
// past the model's context trained on positions the model was never
// trained or served at, and one longer than --token-budget became a
// micro-batch of its own, both without a word.
type Lengths struct {
	// Max is the most tokens of one sequence (for the model's context,
	// through its last trained token: length); Drop says what happens to
	// a trajectory with a longer one: left out with one warning (the run
	// gave --max-seq-len, as ART's SFT drops over-long rows; its RL
	// truncates them, which Hone does not), or refused as bad
	// input (the model's context). What names Max in messages.
	Max  int
	Drop bool
	What string
	// Budget is --token-budget: a trajectory with more tokens is a
	// micro-batch of its own, told once (0: not told).
	Budget int
	// RowLen is grpo --norm art's --packed-sequence-length: a history
	// with more tokens is a packed row of its own, trained whole where
	// ART truncates it, told once (0: not told).
	RowLen int

	over, big, wide []string
	bigMax, wideMax int
	checked         int
}

// SeqLengths is the Lengths of a run of the model b: --max-seq-len when
// given, else the model's context. A --max-seq-len past the model's
// context is refused (stageerr.ErrUsage).
func (o *Options) SeqLengths(b *Base) (*Lengths, error) {
	l := &Lengths{Max: b.Context, Budget: o.TokenBudget,
		What: fmt.Sprintf("the model's context of %d tokens (max_position_embeddings in %s)", b.Context, hfconfig.ConfigName)}
	if o.MaxSeqLen > 0 {
		if o.MaxSeqLen > b.Context {
			return nil, stageerr.Usagef("--max-seq-len %d is longer than %s", o.MaxSeqLen, l.What)
		}
		l.Max, l.Drop, l.What = o.MaxSeqLen, true, fmt.Sprintf("--max-seq-len %d", o.MaxSeqLen)
	}
	return l, nil
}

// Check records the example e of the row where and reports whether it is
// too long to train (a sequence longer than Max).
func (l *Lengths) Check(e *Example, where string) bool {
	l.checked++
	longest := 0
	for _, s := range e.Seqs {
		longest = max(longest, l.length(s))
	}
	if l.Max > 0 && longest > l.Max {
		l.over = append(l.over, fmt.Sprintf("%s: %d tokens", where, longest))
		return true
	}
	if n := e.Tokens(); l.Budget > 0 && n > l.Budget {
		l.big = append(l.big, where)
		l.bigMax = max(l.bigMax, n)
	}
	// Only a history that trains makes a packed row: grpo --norm art
	// packs no other (artHistories), however long.
	widest := 0
	for _, s := range e.Seqs {
		if (&Example{Seqs: []layout.Sequence{s}}).Trainable() > 0 {
			widest = max(widest, len(s.IDs))
		}
	}
	if l.RowLen > 0 && widest > l.RowLen {
		l.wide = append(l.wide, where)
		l.wideMax = max(l.wideMax, widest)
	}
	return false
}

// length is how many tokens of s count against Max. --max-seq-len counts
// them all, as ART's max_seq_length does (the micro-batch holds them).
// The model's context counts them through the last trained token: a
// server holds prompt plus completion to the context, so a turn sampled
// to the limit fills it, and the layout then adds the template's glue
// after the turn ("<|im_end|>\n"), which trains nothing and, under causal
// attention, changes no trained token's logprob; counted, every
// trajectory a server sampled to its context was refused.
func (l *Lengths) length(s layout.Sequence) int {
	if l.Drop {
		return len(s.IDs)
	}
	for i := len(s.Trainable) - 1; i >= 0; i-- {
		if s.Trainable[i] {
			return i + 1
		}
	}
	return 0
}

// Report is the error naming the rows with a sequence past the model's
// context, or logs one warning for those --max-seq-len leaves out, one
// for those longer than --token-budget and one for those with a history
// longer than --packed-sequence-length.
func (l *Lengths) Report(log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if len(l.over) > 0 && !l.Drop {
		return stageerr.BadInputf("%d trajectories have a sequence longer than %s: %s; the model has no positions past it: give --max-seq-len to leave them out, or shorten them",
			len(l.over), l.What, FirstRows(l.over))
	}
	if len(l.over) > 0 {
		log.Warn(fmt.Sprintf("%d of %d trajectories have a sequence longer than %s and are not trained: %s",
			len(l.over), l.checked, l.What, FirstRows(l.over)))
	}
	if len(l.big) > 0 {
		log.Warn(fmt.Sprintf("%d trajectories have more tokens than --token-budget %d (up to %d) and each is a micro-batch of its own, of that many tokens: %s; memory grows with it: give --max-seq-len to leave them out, or a --token-budget that fits them",
			len(l.big), l.Budget, l.bigMax, FirstRows(l.big)))
	}
	if len(l.wide) > 0 {
		log.Warn(fmt.Sprintf("%d trajectories have a history longer than --packed-sequence-length %d (up to %d tokens) and each such history is a packed row of its own, trained whole (ART truncates it to the row length): %s; memory grows with it: give --max-seq-len to leave them out, or a --packed-sequence-length that fits them",
			len(l.wide), l.RowLen, l.wideMax, FirstRows(l.wide)))
	}
	return nil
}

// FirstRows joins the first rows of a list, counting the rest: how a
// warning names the rows it is about.
func FirstRows(rows []string) string {
	const show = 5
	list := strings.Join(rows[:min(show, len(rows))], ", ")
	if len(rows) > show {
		list += fmt.Sprintf(" and %d more", len(rows)-show)
	}
	return list
}
