package ruler

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge"
)

// Scorer scores a group with one judge call. It satisfies score.Scorer.
type Scorer struct {
	Component string      // component name written, normally "ruler"
	Judge     judge.Judge // typically Cache(Retry(OpenAI)) wrapped in a Meter
	Model     string      // judge model
	Rubric    string      // "" means DefaultRubric
	// Budget bounds the prompt (see BuildWithin); the zero value sets no
	// limit.
	Budget Budget
	Log    *slog.Logger
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
	if s.Log != nil {
		if p.Identical {
			s.Log.Warn("ruler: all trajectories of the group are identical; the judge scores one of them on an absolute scale", "group", g.ID, "trajectories", n)
		}
		if p.Cuts > 0 {
			s.Log.Debug("ruler: texts cut to fit the judge's context", "group", g.ID, "cuts", p.Cuts, "tokens", p.Tokens, "budget", s.Budget.Tokens)
		}
	}
	v, err := s.Judge.Judge(ctx, p.Request(s.Model))
	if err != nil {
		return nil, fmt.Errorf("ruler: group %q: %w", g.ID, err)
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
