package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestEnvOnRescoredRowWithoutEnvReward re-scores with env a file whose
// rows had no environment reward when a formula first scored them: the
// rows now hold a reward (the formula's), so the error must not say that
// the reward is null, but that the run which scored them kept no env.
func TestEnvOnRescoredRowWithoutEnvReward(t *testing.T) {
	dir := t.TempDir()
	noEnv := oneGroupEdited(t, dir, "noenv.parquet", func(gs []trajectory.Group) {
		for i := range gs[0].Trajectories {
			gs[0].Trajectories[i].Reward = nil
		}
	})
	scored := filepath.Join(dir, "scored.parquet")
	if r := runBin(t, nil, nil, "-o", scored, "--scorer", "formula:win", noEnv); r.code != 0 {
		t.Fatalf("first scoring: exit %d:\n%s", r.code, r.stderr)
	}
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "again.parquet"), "--scorer", "env", scored)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "reward is null") || !strings.Contains(r.stderr, "formula:win") {
		t.Fatalf("the rows hold formula:win's reward; want the error to say that the run that scored them kept no env reward, naming its chain:\n%s", r.stderr)
	}
}

// TestEnvOnRescoredRowWithNullReward: a row an earlier chain scored
// whose reward was since cleared (to re-score it) holds no reward: the
// env scorer's error said "its reward now is the one formula:win gave",
// a reward the row no longer has; it says the reward is null.
func TestEnvOnRescoredRowWithNullReward(t *testing.T) {
	dir := t.TempDir()
	noEnv := oneGroupEdited(t, dir, "noenv.parquet", func(gs []trajectory.Group) {
		for i := range gs[0].Trajectories {
			gs[0].Trajectories[i].Reward = nil
		}
	})
	scored := filepath.Join(dir, "scored.parquet")
	if r := runBin(t, nil, nil, "-o", scored, "--scorer", "formula:win", noEnv); r.code != 0 {
		t.Fatalf("first scoring: exit %d:\n%s", r.code, r.stderr)
	}
	gs := readBack(t, scored)
	for i := range gs[0].Trajectories {
		gs[0].Trajectories[i].Reward = nil
	}
	cleared := filepath.Join(dir, "cleared.parquet")
	if err := trajectory.WriteFile(context.Background(), cleared, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "again.parquet"), "--scorer", "env", cleared)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "its reward now is") || !strings.Contains(r.stderr, "reward is null") {
		t.Fatalf("the rows' reward is null; want the error to say so:\n%s", r.stderr)
	}
}
