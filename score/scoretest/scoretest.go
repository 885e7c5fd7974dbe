package scoretest

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score"
)

// Suite checks that s, given g (at least 2 trajectories, all of which s
// can score): returns one component per trajectory, each named s.Name()
// with a finite value; leaves g unmodified; gives the same answer twice;
// and returns the context's error when ctx is cancelled.
func Suite(t *testing.T, s score.Scorer, g trajectory.Group) {
	t.Helper()
	before := deepCopy(g)
	comps, err := s.ScoreGroup(context.Background(), &g)
	if err != nil {
		t.Fatalf("%s: %v", s.Name(), err)
	}
	if len(comps) != len(g.Trajectories) {
		t.Fatalf("%s: %d components for %d trajectories", s.Name(), len(comps), len(g.Trajectories))
	}
	for i, c := range comps {
		if c.Name != s.Name() || math.IsNaN(c.Value) || math.IsInf(c.Value, 0) {
			t.Errorf("%s: component %d = %+v", s.Name(), i, c)
		}
	}
	if !reflect.DeepEqual(before, g) {
		t.Errorf("%s modified the group", s.Name())
	}
	again, err := s.ScoreGroup(context.Background(), &g)
	if err != nil || !reflect.DeepEqual(again, comps) {
		t.Errorf("%s: second call gave %+v, %v; first %+v", s.Name(), again, err, comps)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.ScoreGroup(ctx, &g); !errors.Is(err, context.Canceled) {
		t.Errorf("%s with a cancelled context: err = %v", s.Name(), err)
	}
}

func deepCopy(g trajectory.Group) trajectory.Group {
	out := trajectory.Group{ID: g.ID}
	for _, t := range g.Trajectories {
		c := t
		c.Messages = append([]trajectory.Message(nil), t.Messages...)
		c.RewardComponents = append([]trajectory.RewardComponent(nil), t.RewardComponents...)
		if t.Reward != nil {
			c.Reward = trajectory.Float64(*t.Reward)
		}
		c.Metrics = map[string]float64{}
		for k, v := range t.Metrics {
			c.Metrics[k] = v
		}
		if t.Metrics == nil {
			c.Metrics = nil
		}
		out.Trajectories = append(out.Trajectories, c)
	}
	return out
}
