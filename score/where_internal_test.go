package score

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/shard"
	"github.com/hone-rl/hone/format/trajectory"
)

// failSecond fails group g1 on its rows at once, and holds g0 until the
// run is stopped, as a scorer still at work on an earlier group is when a
// later one fails first.
type failSecond struct{}

func (failSecond) Name() string { return "gate" }

func (failSecond) ScoreGroup(ctx context.Context, g *trajectory.Group) ([]trajectory.RewardComponent, error) {
	if g.ID == "g1" {
		return nil, errors.New(`no metric named "wins"`)
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// A group's bad input is named with its file and rows also when a later
// group fails first in time: the earlier group's scorer, stopped by that
// failure, reports only the stop, and the error was the later group's as
// its scorer said it, the file and rows left out (so hone-score's
// TestExitCodes/unknown_metric failed under load).
func TestBadInputNamesRowsWhenLaterGroupFailsFirst(t *testing.T) {
	var gs []trajectory.Group
	for _, id := range []string{"g0", "g1"} {
		gs = append(gs, trajectory.Group{ID: id, Trajectories: []trajectory.Trajectory{{ID: id + "-0"}, {ID: id + "-1"}}})
	}
	var buf bytes.Buffer
	w := trajectory.NewWriter(&buf, trajectory.WriterOptions{})
	for _, g := range gs {
		if err := w.WriteGroup(t.Context(), g); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := trajectory.NewReader("in.parquet", bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	c := &Chain{Scorers: []Scorer{failSecond{}}, Spec: "gate", OnJudgeErr: PolicyFail}
	var sum Summary
	err = pipeline(t.Context(), r, shard.Shard{}, c, 2, &sum, func(trajectory.Group) error { return nil })
	const want = `in.parquet: rows 2-3: scorer gate: no metric named "wins"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v; want it to say %s", err, want)
	}
}
