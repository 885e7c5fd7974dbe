package scoretest

import (
	"bytes"
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
// and returns the context's error when ctx is cancelled. g must be a group
// a trajectory file can hold.
func Suite(t *testing.T, s score.Scorer, g trajectory.Group) {
	t.Helper()
	before := snapshot(t, g)
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
	if !bytes.Equal(before, snapshot(t, g)) {
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

// snapshot is g as a trajectory file holds it: every field, the maps and
// slices a scorer could change in place (metadata, tools, tool calls,
// histories, the group's own metadata and metrics) included, each map in
// key order.
func snapshot(t *testing.T, g trajectory.Group) []byte {
	t.Helper()
	var b bytes.Buffer
	w := trajectory.NewWriter(&b, trajectory.WriterOptions{})
	if err := w.WriteGroup(context.Background(), g); err != nil {
		t.Fatalf("the suite's group: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
