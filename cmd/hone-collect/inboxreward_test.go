package main

import (
	"path/filepath"
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
