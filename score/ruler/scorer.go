package ruler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge"
)

// ErrGroupOfOne is returned for a group with a single trajectory: RULER
// ranks attempts against each other, and one attempt has nothing to be
// ranked against.
var ErrGroupOfOne = errors.New("RULER needs at least 2 trajectories per group to rank them against each other")

// Scorer scores a group with one judge call. It satisfies score.Scorer.
type Scorer struct {
	Component string      // component name written, normally "ruler"
	Judge     judge.Judge // typically Cache(Retry(OpenAI)) wrapped in a Meter
	Model     string      // judge model
	Rubric    string      // "" means DefaultRubric
	Log       *slog.Logger
}

// Name returns the component name.
func (s *Scorer) Name() string { return s.Component }

// ScoreGroup asks the judge about the group and returns one component per
// trajectory, in order.
func (s *Scorer) ScoreGroup(ctx context.Context, g *trajectory.Group) ([]trajectory.RewardComponent, error) {
	n := len(g.Trajectories)
	if n == 0 {
		return nil, nil
	}
	if n == 1 {
		return nil, fmt.Errorf("group %q has 1 trajectory: %w; collect more attempts per scenario, or choose --on-judge-error skip|mark", g.ID, ErrGroupOfOne)
	}
	p := Build(g.Trajectories, s.Rubric)
	if p.Identical && s.Log != nil {
		s.Log.Warn("ruler: all trajectories of the group are identical; the judge scores one of them on its own", "group", g.ID, "trajectories", n)
	}
	v, err := s.Judge.Judge(ctx, p.Request(s.Model))
	if err != nil {
		return nil, fmt.Errorf("ruler: group %q: %w", g.ID, err)
	}
	out := make([]trajectory.RewardComponent, n)
	for i := range out {
		sc := v.Scores[0]
		if !p.Identical {
			sc = v.Scores[i]
		}
		out[i] = trajectory.RewardComponent{Name: s.Component, Value: sc.Score, Explanation: sc.Explanation}
	}
	return out, nil
}
