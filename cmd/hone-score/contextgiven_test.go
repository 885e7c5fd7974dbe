package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestJudgeContextHintWhenFlagGiven: a ruler prompt the judge refuses as
// longer than its context got the hint "--judge-context-tokens N (the
// judge's context length) cuts it to fit" even when the flag was given,
// larger than the judge's context (100000 against hone-serve's 4096), so
// the hint asked for what the user had done. With the flag given it now
// names the value given and asks for the judge's context length or less,
// and for --judge-tokenizer where none was given.
func TestJudgeContextHintWhenFlagGiven(t *testing.T) {
	base, _ := startHoneServe(t)
	dir := t.TempDir()
	g := trajectory.Group{ID: "long"}
	for i, answer := range []string{"WIN", "lose"} {
		g.Trajectories = append(g.Trajectories, trajectory.Trajectory{
			ID: fmt.Sprintf("long-%d", i), GroupID: "long", Env: "guess",
			Messages: []trajectory.Message{
				{Role: "system", Content: "Find the secret in the notes."},
				{Role: "user", Content: strings.Repeat(fmt.Sprintf("note %d: nothing here. ", i), 150)},
				{Role: "assistant", Content: answer, Trainable: true},
			},
			Reward: trajectory.Float64(0),
		})
	}
	in := filepath.Join(dir, "long.parquet")
	if err := trajectory.WriteFile(context.Background(), in, []trajectory.Group{g}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--judge-base-url", base, "--judge-model", "tiny-judge", "--no-judge-cache",
		"--judge-max-tokens", "64", "--judge-retries", "0", "--judge-context-tokens", "100000", "--scorer", "ruler", in)
	if r.code != 1 || !strings.Contains(r.stderr, "maximum context length is 4096 tokens") {
		t.Fatalf("exit %d, want 1, refused by the judge for its context:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "--judge-context-tokens N (the judge's context length) cuts it to fit") {
		t.Errorf("the hint asks for --judge-context-tokens, which was given:\n%s", r.stderr)
	}
	for _, want := range []string{"fits --judge-context-tokens 100000 but not the judge's context", "the judge's context length or less", "--judge-tokenizer"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the hint lacks %q:\n%s", want, r.stderr)
		}
	}
}
