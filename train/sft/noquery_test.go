package sft

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	_ "github.com/hone-rl/hone/format/fileset/blobdrivers"
	"github.com/hone-rl/hone/format/fileset/s3test"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/spf13/pflag"
)

// TestNothingToTrainNamesObjectWithoutQuery: an input object whose every
// conversation is skipped is bad input naming the object as the user
// names it, without the query that opens its bucket
// (endpoint=…&use_path_style=…), which put the store's address in the
// message. The object is in a real S3 protocol server (gofakes3).
func TestNothingToTrainNamesObjectWithoutQuery(t *testing.T) {
	dir, md, _ := setup(t)
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	name := srv.URL("bkt", "in/round1.parquet")
	// Its one conversation errored: nothing is left to train.
	gs := []trajectory.Group{{ID: "g", Trajectories: []trajectory.Trajectory{{ID: "t", Error: "env failed", Messages: []trajectory.Message{
		{Role: "user", Content: "q"}, {Role: "assistant", Content: "a"},
	}}}}}
	err := runOnObject(t, dir, md, name, gs)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "nothing to train in s3://bkt/in/round1.parquet:") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("run on an object with nothing to train: %v; want bad input naming s3://bkt/in/round1.parquet without its query", err)
	}
}

// TestMixedSplitsNamesObjectRowWithoutQuery: a group that mixes held-out
// and trained rows is bad input naming each row as "FILE row N", FILE as
// the user names the object, without the query that opens its bucket
// (endpoint=…&use_path_style=…): it printed the store's address for
// every row listed.
func TestMixedSplitsNamesObjectRowWithoutQuery(t *testing.T) {
	dir, md, _ := setup(t)
	srv := s3test.Start(t, s3test.Options{Buckets: []string{"bkt"}})
	name := srv.URL("bkt", "in/round1.parquet")
	msgs := []trajectory.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}}
	gs := []trajectory.Group{{ID: "g", Trajectories: []trajectory.Trajectory{
		{ID: "t0", Messages: msgs},
		{ID: "t1", Split: trajectory.SplitVal, Messages: msgs},
	}}}
	err := runOnObject(t, dir, md, name, gs)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), "s3://bkt/in/round1.parquet row 1") || strings.Contains(err.Error(), "endpoint=") {
		t.Errorf("run on an object whose group mixes splits: %v; want bad input naming s3://bkt/in/round1.parquet row 1 without its query", err)
	}
}

// runOnObject writes gs to the object name and runs one step of sft on
// it alone (rank 4, batch 2, the CPU backend), returning Run's error.
func runOnObject(t *testing.T, dir, md, name string, gs []trajectory.Group) error {
	t.Helper()
	ctx := context.Background()
	if err := trajectory.WriteFile(ctx, name, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	cb, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	var o Options
	o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
	o.Model, o.Out, o.Name, o.Inputs = md, dir, "r", fileset.Files(name)
	o.Rank, o.Steps, o.BatchSize, o.Backend = 4, 1, 2, cb
	return Run(ctx, o)
}
