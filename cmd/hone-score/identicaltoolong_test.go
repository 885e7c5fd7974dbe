package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestTooLongIdenticalGroupCountsShown: a group of identical
// trajectories is shown to the judge as one attempt, yet the error of a
// prompt that cannot fit --judge-context-tokens counted every row: "3
// trajectories of 240 messages", which sent a user to shrink groups
// (hone-collect -G) that were not what made the prompt long. It now
// counts the one attempt and its 80 messages, and says it stands for the
// 3 identical trajectories. No judge call is made.
func TestTooLongIdenticalGroupCountsShown(t *testing.T) {
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	dir := t.TempDir()
	g := trajectory.Group{ID: "same"}
	for i := range 3 {
		tr := trajectory.Trajectory{ID: fmt.Sprintf("same-%d", i), GroupID: "same", Env: "guess", Reward: trajectory.Float64(0)}
		for k := range 40 {
			tr.Messages = append(tr.Messages, trajectory.Message{Role: "user", Content: fmt.Sprintf("guess %d", k)},
				trajectory.Message{Role: "assistant", Content: "no", Trainable: true})
		}
		g.Trajectories = append(g.Trajectories, tr)
	}
	in := filepath.Join(dir, "same.parquet")
	if err := trajectory.WriteFile(context.Background(), in, []trajectory.Group{g}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--judge-base-url", srv.BaseURL(), "--judge-model", "m", "--no-judge-cache",
		"--judge-context-tokens", "1000", "--judge-max-tokens", "64", "--scorer", "ruler", in)
	if r.code != 1 || !strings.Contains(r.stderr, "over the budget of") {
		t.Fatalf("exit %d, want 1 for a prompt that cannot fit:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "3 trajectories of 240 messages") {
		t.Errorf("the error counts every row, not what the judge is shown:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "80 messages shown for the one attempt that stands for the group's 3 identical trajectories") {
		t.Errorf("the error does not count the one attempt shown:\n%s", r.stderr)
	}
	if n := srv.Hits(); n != 0 {
		t.Errorf("the judge was called %d times for a prompt that does not fit", n)
	}
}
