package ruler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge"
)

// Scorer scores a group with one judge call. It satisfies score.Scorer.
type Scorer struct {
	Component string      // component name written, normally "ruler"
	Judge     judge.Judge // typically Cache(Retry(OpenAI)) wrapped in a Meter
	Model     string      // judge model
	Rubric    string      // "" means DefaultRubric
	// Temperature is asked of the judge (nil: its default); it is part
	// of the request, so the cache keys verdicts by it.
	Temperature *float64
	// Budget bounds the prompt (see BuildWithin); the zero value sets no
	// limit.
	Budget Budget
	Log    *slog.Logger

	// What the budget did, over the groups scored so far (Cuts).
	prompts, cut, texts atomic.Int64

	// The groups whose trajectories were all identical (Identical): the
	// count, and the ids of the first few, for one line a run rather
	// than a warning per group. Groups are scored concurrently, so an
	// identical group waits in pending (by id, how many) until its
	// caller settles it in input order (Settle): firstIdentical is then
	// the same for the same input, whichever judge call came back first.
	mu             sync.Mutex
	identical      int64
	pending        map[string]int
	firstIdentical []string
}

// identicalShown is how many identical groups' ids Identical returns.
const identicalShown = 3

// CutCounts say how many of a scorer's prompts the budget cut.
type CutCounts struct {
	Prompts int64 // prompts built
	Cut     int64 // of them, prompts with some text cut to fit the budget
	Texts   int64 // texts (messages, tool results) cut over all prompts
}

// Cuts returns what the budget cut so far; safe while groups are scored.
func (s *Scorer) Cuts() CutCounts {
	return CutCounts{Prompts: s.prompts.Load(), Cut: s.cut.Load(), Texts: s.texts.Load()}
}

// Identical returns how many of the groups the judge scored so far had
// all their trajectories identical, and the ids of the first few of them
// in input order, of those settled (Settle); safe while groups are
// scored.
func (s *Scorer) Identical() (n int64, first []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identical, append([]string(nil), s.firstIdentical...)
}

// countIdentical records an identical group; Settle places it.
func (s *Scorer) countIdentical(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.identical++
	if len(s.firstIdentical) < identicalShown {
		if s.pending == nil {
			s.pending = make(map[string]int)
		}
		s.pending[id]++
	}
}

// Settle is told of each group the caller is done with, in input order
// (the order it writes them): an identical group among them joins the
// ids Identical names, while there is room. Once there is none, what
// still waits is dropped: pending holds at most the groups in flight.
func (s *Scorer) Settle(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[id] == 0 {
		return
	}
	if s.pending[id]--; s.pending[id] == 0 {
		delete(s.pending, id)
	}
	s.firstIdentical = append(s.firstIdentical, id)
	if len(s.firstIdentical) == identicalShown {
		s.pending = nil
	}
}

// Name returns the component name.
func (s *Scorer) Name() string { return s.Component }

// ScoreGroup asks the judge about the group and returns one component per
// trajectory, in order. A group of one, and a group whose trajectories are
// all identical, get one absolute score (see the package doc).
func (s *Scorer) ScoreGroup(ctx context.Context, g *trajectory.Group) ([]trajectory.RewardComponent, error) {
	n := len(g.Trajectories)
	if n == 0 {
		return nil, nil
	}
	p, err := BuildWithin(g.Trajectories, s.Rubric, s.Budget)
	if err != nil {
		return nil, fmt.Errorf("ruler: group %q: %w", g.ID, err)
	}
	s.prompts.Add(1)
	if p.Cuts > 0 {
		s.cut.Add(1)
		s.texts.Add(int64(p.Cuts))
	}
	if s.Log != nil {
		if p.Identical {
			s.Log.Debug("ruler: all trajectories of the group are identical; the judge scores one of them on an absolute scale", "group", g.ID, "trajectories", n)
		}
		if p.Cuts > 0 {
			s.Log.Debug("ruler: texts cut to fit the judge's context", "group", g.ID, "cuts", p.Cuts, "tokens", p.Tokens, "budget", s.Budget.Tokens)
		}
	}
	req := p.Request(s.Model)
	req.Temperature = s.Temperature
	v, err := s.Judge.Judge(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("ruler: group %q: %w", g.ID, err)
	}
	if p.Identical {
		// Warned about once a run by its caller (Identical): a policy
		// that collapsed makes such groups by the hundred. Counted once
		// the judge answered, as the warning says it scored one of each.
		s.countIdentical(g.ID)
	}
	out := make([]trajectory.RewardComponent, n)
	for i := range out {
		sc := v.Scores[0]
		if !p.Absolute {
			sc = v.Scores[i]
		}
		out[i] = trajectory.RewardComponent{Name: s.Component, Value: sc.Score, Explanation: sc.Explanation}
	}
	return out, nil
}
