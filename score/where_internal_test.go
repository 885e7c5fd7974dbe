package score

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	_ "github.com/hone-rl/hone/format/fileset/blobdrivers"
	"github.com/hone-rl/hone/format/fileset/s3test"
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

// A group's bad input in an object input names the object as the user
// does, without the query that opens its bucket (endpoint=…): the file
// and rows named the store's address. The object is in a real S3
// protocol server (gofakes3).
func TestBadInputNamesObjectRowsWithoutQuery(t *testing.T) {
	s3 := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	var gs []trajectory.Group
	for _, id := range []string{"g0", "g1"} {
		gs = append(gs, trajectory.Group{ID: id, Trajectories: []trajectory.Trajectory{{ID: id + "-0"}, {ID: id + "-1"}}})
	}
	name := s3.URL("bkt", "in/round1.parquet")
	if err := trajectory.WriteFile(t.Context(), name, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	set, err := fileset.Resolve(t.Context(), []string{name}, fileset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	r, err := trajectory.Open(t.Context(), set)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := &Chain{Scorers: []Scorer{failSecond{}}, Spec: "gate", OnJudgeErr: PolicyFail}
	var sum Summary
	err = pipeline(t.Context(), r, shard.Shard{}, c, 2, &sum, func(trajectory.Group) error { return nil })
	const want = `s3://bkt/in/round1.parquet: rows 2-3: scorer gate: no metric named "wins"`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "endpoint=") {
		t.Fatalf("err %v; want it to say %s, without the bucket query", err, want)
	}
}
