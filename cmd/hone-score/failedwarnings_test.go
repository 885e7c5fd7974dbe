package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

// TestFailedRunPrintsOnlyItsError: a run that a formula fails on a later
// group still printed, beside its error, the run's closing warnings of
// what it did before: the ruler's "groups whose trajectories are all
// identical" and "--only-missing passed through groups that another
// chain scored". Its output is not kept, so they describe nothing, and
// drew the eye from the error (as the unseen-name warning did before
// it was held back). A failed run now prints only its error; a run that
// completes, or is stopped and keeps its output, still warns.
func TestFailedRunPrintsOnlyItsError(t *testing.T) {
	dir := t.TempDir()
	// g0: two identical tries, for the ruler's warning.
	same := oneGroupEdited(t, dir, "same.parquet", func(gs []trajectory.Group) {
		gs[0].Trajectories[1].Messages = gs[0].Trajectories[0].Messages
	})
	// g1: tries up to illegal 7, on which the failing formula reads a
	// metric no row has.
	late := scenario(t, dir, "late.parquet", 1, 1, 8)
	srv := judgetest.NewServer(t, judgetest.KeywordJudge("WIN"))
	judge := []string{"--judge-base-url", srv.BaseURL(), "--judge-model", "m", "--no-judge-cache", "--concurrency", "1"}
	out := filepath.Join(dir, "out.parquet")
	const identical = "groups whose trajectories are all identical"
	run := func(formula string) result {
		return runBin(t, nil, nil, append([]string{"-o", out, "--scorer", "ruler", "--scorer", "f=formula:" + formula, same, late}, judge...)...)
	}
	r := run(`ruler + (metrics["illegal"] > 5 ? metrics["nope"] : 0)`)
	if r.code == 0 || !strings.Contains(r.stderr, `no metric named "nope"`) {
		t.Fatalf("exit %d, want a failure naming the missing metric:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, identical) {
		t.Errorf("a failed run warned of identical groups beside its error:\n%s", r.stderr)
	}
	if r = run(`ruler`); r.code != 0 || !strings.Contains(r.stderr, identical) {
		t.Errorf("exit %d, want 0 and the identical-groups warning:\n%s", r.code, r.stderr)
	}
	// A stopped run keeps the groups before the stop, and the warnings
	// of what they hold.
	both := filepath.Join(dir, "both.parquet")
	if err := trajectory.WriteFile(context.Background(), both, append(readBack(t, same), readBack(t, late)...), trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	if stderr := interruptAfterFirstGroup(t, out, both); !strings.Contains(stderr, identical) {
		t.Errorf("an interrupted run, whose output is kept, did not warn of the identical group:\n%s", stderr)
	}

	// --only-missing passes g0 through (scored by another chain) and
	// fails on g1, which the new chain scores.
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	scored := filepath.Join(dir, "scored.parquet")
	if r := runBin(t, nil, nil, "-o", scored, "--scorer", "env", "--scorer", "final=formula:win", in); r.code != 0 {
		t.Fatalf("first scoring: exit %d:\n%s", r.code, r.stderr)
	}
	const passed = "--only-missing passed through groups that another chain scored"
	again := func(formula string) result {
		return runBin(t, nil, nil, "-o", out, "--only-missing", "--concurrency", "1", "--scorer", "env", "--scorer", "final=formula:"+formula, scored, late)
	}
	r = again(`win * 2 + (metrics["illegal"] > 5 ? metrics["nope"] : 0)`)
	if r.code == 0 || !strings.Contains(r.stderr, `no metric named "nope"`) {
		t.Fatalf("--only-missing: exit %d, want a failure naming the missing metric:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, passed) {
		t.Errorf("a failed run warned of groups passed through beside its error:\n%s", r.stderr)
	}
	if r = again(`win * 2`); r.code != 0 || !strings.Contains(r.stderr, passed) {
		t.Errorf("--only-missing: exit %d, want 0 and the passed-through warning:\n%s", r.code, r.stderr)
	}
}
