package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestInboxSearcherScoresOne: the searcher finds, reads, cites and answers
// every question, so each row's reward is 1, the top of the range the
// package states; it was 0.9999999999999999 (0.7 + 0.1 + 0.1 + 0.1 summed
// as floats), below a `hone-train sft --min-reward 1` filter.
func TestInboxSearcherScoresOne(t *testing.T) {
	out := filepath.Join(t.TempDir(), "inbox.parquet")
	if r := collectBin(t, "--env", "inbox", "--groups", "6", "-G", "1", "--policy", "scripted:searcher", "-o", out); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	rows := 0
	for _, g := range read(t, out) {
		for _, tr := range g.Trajectories {
			rows++
			if tr.Reward == nil {
				t.Fatalf("%s: no reward", tr.ScenarioID)
			}
			if *tr.Reward != 1 || tr.Metrics["correct"] != 1 || tr.Metrics["cited_source"] != 1 {
				t.Errorf("%s: reward %v, metrics %v: want 1 for a found, read, cited and correct answer", tr.ScenarioID, *tr.Reward, tr.Metrics)
			}
		}
	}
	if rows != 6 {
		t.Errorf("%d rows, want 6", rows)
	}
}

// TestInboxReplayOfAnotherSeed: scenarios collected with inbox-seed=3 and
// replayed without it were played on inbox 1, whose emails m0001… do not
// hold their answers: exit 0 and reward 0 for every row, without a word.
// The run now fails naming inbox-seed; with the seed given it scores.
func TestInboxReplayOfAnotherSeed(t *testing.T) {
	dir := t.TempDir()
	made := filepath.Join(dir, "inbox3.parquet")
	if r := collectBin(t, "--env", "inbox", "--env-opt", "inbox-seed=3", "--groups", "3", "-G", "1", "--policy", "scripted:searcher", "-o", made); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	r := collectBin(t, "--env", "inbox", "--scenarios", made, "--groups", "3", "-G", "1", "--policy", "scripted:searcher", "-o", filepath.Join(dir, "wrong.parquet"))
	if r.code == 0 || !strings.Contains(r.stderr, "inbox-seed") {
		t.Errorf("replay on inbox 1: exit %d, stderr %s: want a failure naming inbox-seed", r.code, r.stderr)
	}
	right := filepath.Join(dir, "right.parquet")
	if r := collectBin(t, "--env", "inbox", "--env-opt", "inbox-seed=3", "--scenarios", made, "--groups", "3", "-G", "1", "--policy", "scripted:searcher", "-o", right); r.code != 0 {
		t.Fatalf("replay with inbox-seed=3: exit %d: %s", r.code, r.stderr)
	}
	for _, g := range read(t, right) {
		for _, tr := range g.Trajectories {
			if tr.Reward == nil || *tr.Reward != 1 {
				t.Errorf("%s replayed on its own inbox: reward %v, want 1", tr.ScenarioID, tr.Reward)
			}
		}
	}
}
