package ruler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/format/trajectory"
)

// ErrPromptTooLong is returned when a group's prompt does not fit the
// token budget even with every message text cut down to its marker.
var ErrPromptTooLong = errors.New("the judge prompt does not fit the judge's context")

// Budget bounds the size of a judge prompt.
type Budget struct {
	// Tokens is the most the system and user messages may take together;
	// 0 or less means no limit.
	Tokens int
	// Counter measures text; nil means Estimate.
	Counter Counter
}

// Counter measures text in the judge's tokens.
type Counter interface {
	// Count returns the number of tokens of s.
	Count(s string) int
	// Ends returns, for each token of s in order, the byte offset where
	// it ends: non-decreasing, on UTF-8 character boundaries, the last
	// one len(s). s is valid UTF-8.
	Ends(s string) []int
}

// EstimateBytesPerToken is the rate Estimate counts at.
const EstimateBytesPerToken = 3

// Estimate is the Counter used without a tokenizer: one token per
// EstimateBytesPerToken bytes, each token ending on a character boundary.
// BPE tokenizers of the Qwen and Llama families put about 4 bytes of
// English or JSON in a token, so the estimate is on the safe side there;
// it can fall short for text in scripts that take more tokens per byte.
type Estimate struct{}

// Count returns the number of tokens Ends gives.
func (Estimate) Count(s string) int { return len(Estimate{}.Ends(s)) }

// Ends cuts s every EstimateBytesPerToken bytes, moved forward to the next
// character boundary.
func (Estimate) Ends(s string) []int {
	ends := make([]int, 0, len(s)/EstimateBytesPerToken+1)
	for i := 0; i < len(s); {
		i = min(i+EstimateBytesPerToken, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		ends = append(ends, i)
	}
	return ends
}

// TokenizerCounter counts with the judge model's own tokenizer. It counts
// the text alone: the chat template's own tokens are not included, so
// leave a margin for them.
func TokenizerCounter(t *tokenizer.Tokenizer) Counter { return tokCounter{t} }

type tokCounter struct{ t *tokenizer.Tokenizer }

func (c tokCounter) Count(s string) int { return len(c.t.EncodeOrdinary(s)) }

func (c tokCounter) Ends(s string) []int {
	_, spans := c.t.EncodeWithOffsets(s, false)
	ends := make([]int, len(spans))
	last := 0
	for i, sp := range spans {
		last = max(last, min(sp.End, len(s)))
		ends[i] = last
	}
	if len(ends) > 0 {
		ends[len(ends)-1] = len(s)
	}
	return ends
}

// cutter shortens texts longer than limit tokens to their first and last
// tokens around a marker. A nil cutter, or one with a negative limit,
// leaves every text as it is.
type cutter struct {
	counter Counter
	ends    map[string][]int // memo of counter.Ends over the group's texts
	limit   int              // tokens a text keeps besides the marker; <0: no cut
	// toolsOnly restricts cuts to tool results (role "tool").
	toolsOnly bool
	cuts      int // texts cut by the latest render
}

func (c *cutter) endsOf(s string) []int {
	e, ok := c.ends[s]
	if !ok {
		e = c.counter.Ends(s)
		c.ends[s] = e
	}
	return e
}

// text returns s cut to c.limit tokens: two thirds of them from its start,
// one third from its end, and the marker between. A text that the cut
// would not make shorter (the kept tokens and the marker counting as many
// tokens as the whole, or more) is left whole: replacing "ok" with a
// marker would only lengthen the prompt, and would make the prompt's size
// grow as the limit falls, which the bisection in BuildWithin cannot
// search.
func (c *cutter) text(s string, toolResult bool) string {
	if c == nil || c.limit < 0 || (c.toolsOnly && !toolResult) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	e := c.endsOf(s)
	n := len(e)
	if n <= c.limit {
		return s
	}
	mark := fmt.Sprintf(marker, n-c.limit, n)
	if c.limit+c.counter.Count(mark) >= n {
		return s
	}
	tail := c.limit / 3
	head := c.limit - tail
	headEnd, tailStart := 0, len(s)
	if head > 0 {
		headEnd = e[head-1]
	}
	if tail > 0 {
		tailStart = e[n-tail-1]
	}
	c.cuts++
	return s[:headEnd] + mark + s[tailStart:]
}

// views returns msgs with their texts cut; never nil, so that an empty
// remainder is written as [].
func (c *cutter) views(msgs []chatmsg.Message) []chatmsg.Message {
	if c == nil || c.limit < 0 {
		if msgs == nil {
			return []chatmsg.Message{}
		}
		return msgs
	}
	out := make([]chatmsg.Message, len(msgs))
	for i, m := range msgs {
		m.Content = c.text(m.Content, m.Role == "tool")
		if len(m.ToolCalls) > 0 && !c.toolsOnly {
			m.ToolCalls = slices.Clone(m.ToolCalls)
			for j := range m.ToolCalls {
				m.ToolCalls[j].Arguments = c.text(m.ToolCalls[j].Arguments, false)
			}
		}
		out[i] = m
	}
	return out
}

// longest returns the token count of the longest text c may cut.
func (c *cutter) longest(l *layout) int {
	n := 0
	visit := func(msgs []chatmsg.Message) {
		for _, m := range msgs {
			if !c.toolsOnly || m.Role == "tool" {
				n = max(n, len(c.endsOf(strings.ToValidUTF8(m.Content, "\uFFFD"))))
			}
			if !c.toolsOnly {
				for _, tc := range m.ToolCalls {
					n = max(n, len(c.endsOf(strings.ToValidUTF8(tc.Arguments, "\uFFFD"))))
				}
			}
		}
	}
	visit(l.shared)
	for _, b := range l.blocks {
		visit(b)
	}
	for _, hs := range l.histories {
		for _, h := range hs {
			visit(h.msgs)
		}
	}
	return n
}

// BuildWithin assembles the judge prompt as Build does, then, when it
// exceeds the budget, cuts texts until it fits: first tool results alone,
// then every message text and tool-call argument. Each stage finds, by
// bisection, the largest per-text limit L with which the prompt fits, and
// cuts every text longer than L tokens to its first ⌈2L/3⌉ and last ⌊L/3⌋
// tokens with a marker between that says how much was cut (a text the cut
// would not shorten, the marker counted, is left whole); the system
// message then says that cuts are marked. Texts of additional histories are
// cut like those of the main one. The system prompt, the rubric and the
// tool lists are never cut. When even L = 0 does not fit, the error
// wraps ErrPromptTooLong.
func BuildWithin(trajs []trajectory.Trajectory, rubric string, b Budget) (Prompt, error) {
	l := newLayout(trajs, rubric)
	if b.Tokens <= 0 {
		return l.render(nil), nil
	}
	counter := b.Counter
	if counter == nil {
		counter = Estimate{}
	}
	size := func(p Prompt) int { return counter.Count(p.System) + counter.Count(p.User) }
	p := l.render(nil)
	full := size(p)
	if p.Tokens = full; full <= b.Tokens {
		return p, nil
	}
	c := &cutter{counter: counter, ends: map[string][]int{}}
	smallest := full
	for _, toolsOnly := range []bool{true, false} {
		c.toolsOnly = toolsOnly
		hi := c.longest(l) // no text is cut at this limit: too long
		try := func(limit int) (Prompt, int) {
			c.limit = limit
			p := l.render(c)
			return p, size(p)
		}
		best, n := try(0)
		smallest = min(smallest, n)
		if n > b.Tokens {
			continue
		}
		best.Tokens = n
		for lo := 0; hi-lo > 1; {
			mid := lo + (hi-lo)/2
			if p, n := try(mid); n <= b.Tokens {
				lo, best = mid, p
				best.Tokens = n
			} else {
				hi = mid
			}
		}
		return best, nil
	}
	// What is left is never cut: the instructions and tools, and each
	// message's JSON around its text, which many short attempts make long.
	return Prompt{}, fmt.Errorf("%w: %d tokens with every message text cut to a marker (%d uncut), over the budget of %d: "+
		"the system prompt, rubric and tool lists, and the JSON around the texts of the %s, are never cut; %s",
		ErrPromptTooLong, smallest, full, b.Tokens, l.shownWords(len(trajs)), l.fixWords())
}

// shownMessages counts the messages the prompt shows: a shared beginning
// once, each block's rest, and their additional histories.
func (l *layout) shownMessages() int {
	n := len(l.shared)
	for _, b := range l.blocks {
		n += len(b)
	}
	for _, hs := range l.histories {
		for _, h := range hs {
			n += len(h.msgs)
		}
	}
	return n
}

// shownWords says what the prompt shows of a group of n trajectories:
// counting the rows would overstate a group of identical ones, shown as
// one attempt, and a shared beginning, shown once.
func (l *layout) shownWords(n int) string {
	msgs := l.shownMessages()
	switch {
	case l.identical:
		return fmt.Sprintf("%d messages shown for the one attempt that stands for the group's %d identical trajectories", msgs, n)
	case n == 1:
		return fmt.Sprintf("%d messages of the group's one trajectory", msgs)
	}
	return fmt.Sprintf("%d messages shown for the group's %d trajectories", msgs, n)
}

// fixWords says what makes the prompt fit: smaller groups only where the
// judge is shown more than one attempt.
func (l *layout) fixWords() string {
	if len(l.blocks) == 1 {
		return "shorten the trajectories (fewer turns) or use a judge with a larger context"
	}
	return "score smaller groups (hone-collect -G) or use a judge with a larger context"
}
