package sft

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/spf13/pflag"
)

// conversationsPerStep reads the "conversations" of each metrics row of
// the run folder.
func conversationsPerStep(t *testing.T, run string) []float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(run, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var row struct {
			Conversations float64 `json:"conversations"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		out = append(out, row.Conversations)
	}
	return out
}

// TestEpochEndsOnItsOwnStep: 6 chats in batches of 4 are steps of 4 and 2
// per epoch (the second holds the epoch's rest, no chat twice), and the
// run saves "steps_cross_epochs": false. A run whose saved config lacks
// the key, saved before, resumes in the order it was trained in: every
// step of 4, crossing into the next epoch, and keeps the key as true.
func TestEpochEndsOnItsOwnStep(t *testing.T) {
	dir, md, data := setup(t)
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	run := func(steps int, resume bool) error {
		var o Options
		o.AddFlags(pflag.NewFlagSet("t", pflag.ContinueOnError))
		o.Model, o.Out, o.Name, o.Inputs = md, dir, "warm", fileset.Files(data)
		o.Rank, o.Steps, o.BatchSize, o.Resume, o.Backend = 4, steps, 4, resume, be
		return Run(context.Background(), o)
	}
	if err := run(3, false); err != nil {
		t.Fatal(err)
	}
	r := &checkpoint.Run{Dir: filepath.Join(dir, "warm")}
	if got := conversationsPerStep(t, r.Dir); len(got) != 3 || got[0] != 4 || got[1] != 2 || got[2] != 4 {
		t.Errorf("conversations per step %v, want [4 2 4]", got)
	}
	cfg, err := r.ReadConfig(3)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"steps_cross_epochs": false`).Match(cfg) {
		t.Errorf("a new run's config lacks \"steps_cross_epochs\": false:\n%s", cfg)
	}

	// The same run as saved before the key existed, at step 1.
	if err := os.RemoveAll(filepath.Join(dir, "warm")); err != nil {
		t.Fatal(err)
	}
	if err := run(1, false); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(r.StepDir(1), checkpoint.ConfigName)
	cfg, err = os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	old := regexp.MustCompile(`\s*"steps_cross_epochs": false,`).ReplaceAll(cfg, nil)
	if len(old) == len(cfg) {
		t.Fatalf("no steps_cross_epochs key to remove in %s", cfg)
	}
	if err := os.WriteFile(name, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(3, true); err != nil {
		t.Fatalf("resume of a run saved before the key: %v", err)
	}
	if got := conversationsPerStep(t, r.Dir); len(got) != 3 || got[1] != 4 || got[2] != 4 {
		t.Errorf("conversations per step of the older run %v, want [4 4 4]", got)
	}
	if cfg, err = r.ReadConfig(3); err != nil || !regexp.MustCompile(`"steps_cross_epochs": true`).Match(cfg) {
		t.Errorf("the older run's config at step 3 (%v) lacks \"steps_cross_epochs\": true:\n%s", err, cfg)
	}
}
