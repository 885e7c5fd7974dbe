package score

import (
	"context"
	"math"
	"strings"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
)

// Scorer scores one group: it returns one reward component per trajectory,
// in the group's order, all with the scorer's Name. It must not modify the
// group. Implementations: EnvScorer, formula.Scorer, ruler.Scorer.
type Scorer interface {
	Name() string
	ScoreGroup(ctx context.Context, g *trajectory.Group) ([]trajectory.RewardComponent, error)
}

// Reserved component names.
const (
	// ComponentEnv holds the environment's reward.
	ComponentEnv = "env"
	// ComponentPrevious holds the reward a row had before the latest run
	// that changed it.
	ComponentPrevious = "previous"
)

// MetaChain is the metadata key that records the scorer chain that last
// scored a row. Its presence also tells a later run that the row's reward
// is no longer the environment's.
const MetaChain = "hone.score.chain"

// errorPrefix starts the text hone-score puts in a row's error field when
// --on-judge-error mark applies, so a later successful run can remove it.
const errorPrefix = "hone-score: "

// EnvScorer keeps the environment's reward: component "env", taken from
// the row's reward the first time hone-score sees the row.
type EnvScorer struct{}

// Name returns "env".
func (EnvScorer) Name() string { return ComponentEnv }

// ScoreGroup returns each row's env component; a row without one has no
// environment reward, which is bad input, and so is one that is NaN or
// infinite. (Rows whose episode failed never
// reach a scorer: see Chain.Apply.)
func (EnvScorer) ScoreGroup(ctx context.Context, g *trajectory.Group) ([]trajectory.RewardComponent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]trajectory.RewardComponent, len(g.Trajectories))
	for i := range g.Trajectories {
		t := &g.Trajectories[i]
		c, ok := component(t, ComponentEnv)
		if !ok {
			if chain, scored := t.Metadata[MetaChain]; scored && t.Reward != nil {
				// The row's reward is an earlier run's, not null: that
				// run found no environment reward to keep as env. A
				// reward cleared since (to re-score) is null, said below.
				return nil, stageerr.BadInputf("group %q, trajectory %q: env scorer: the row has no environment reward: its reward was null when hone-score first scored it, and its reward now is the one %s gave; score it with another scorer, e.g. ruler or formula", g.ID, t.ID, chain)
			}
			return nil, stageerr.BadInputf("group %q, trajectory %q: env scorer: the row has no environment reward (reward is null, and no error says its episode failed); score it with another scorer, e.g. ruler or formula", g.ID, t.ID)
		}
		if math.IsNaN(c.Value) || math.IsInf(c.Value, 0) {
			return nil, stageerr.BadInputf("group %q, trajectory %q: env scorer: the environment reward is %v, not a finite number", g.ID, t.ID, c.Value)
		}
		out[i] = c
	}
	return out, nil
}

func component(t *trajectory.Trajectory, name string) (trajectory.RewardComponent, bool) {
	for _, c := range t.RewardComponents {
		if c.Name == name {
			return c, true
		}
	}
	return trajectory.RewardComponent{}, false
}

// setComponent replaces the component of the same name or appends c.
func setComponent(t *trajectory.Trajectory, c trajectory.RewardComponent) {
	for i := range t.RewardComponents {
		if t.RewardComponents[i].Name == c.Name {
			t.RewardComponents[i] = c
			return
		}
	}
	t.RewardComponents = append(t.RewardComponents, c)
}

// markError records a judge failure in a row's error field, after any
// error the episode itself had.
func markError(t *trajectory.Trajectory, msg string) {
	clearMark(t)
	if t.Error == "" {
		t.Error = errorPrefix + msg
	} else {
		t.Error += " | " + errorPrefix + msg
	}
}

// clearMark removes what markError added.
func clearMark(t *trajectory.Trajectory) {
	if strings.HasPrefix(t.Error, errorPrefix) {
		t.Error = ""
	} else if i := strings.Index(t.Error, " | "+errorPrefix); i >= 0 {
		t.Error = t.Error[:i]
	}
}

// EpisodeFailed reports whether a row's episode failed in collection: its
// error, less any mark hone-score added, is not empty. Such rows are never
// scored.
func EpisodeFailed(t *trajectory.Trajectory) bool {
	e := t.Error
	if strings.HasPrefix(e, errorPrefix) {
		return false
	}
	if i := strings.Index(e, " | "+errorPrefix); i >= 0 {
		e = e[:i]
	}
	return e != ""
}

func hasMark(t *trajectory.Trajectory) bool {
	return strings.HasPrefix(t.Error, errorPrefix) || strings.Contains(t.Error, " | "+errorPrefix)
}
