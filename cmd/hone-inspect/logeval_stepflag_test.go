package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// log-eval --step N on episodes that name another step of the same run
// (rl@2's, logged as step 3) recorded them at step N without a word, and
// best, and the pruning by it, followed the mislabelled row. It now refuses
// them (exit 2), naming both steps; --step still places rows that do not
// name a step of the run (the base model's, a name of one's own).
func TestLogEvalStepFlagDisagreesWithAdapter(t *testing.T) {
	rl := evalRun(t, 3)
	dir := t.TempDir()
	p2, base := filepath.Join(dir, "s2.parquet"), filepath.Join(dir, "base.parquet")
	evalFile(t, p2, "rl@2", f(1), f(1), f(0))
	evalFile(t, base, "tiny", f(0), f(1))

	r := run(t, nil, "log-eval", "--run", rl.Dir, "--step", "3", p2)
	if r.code != 2 || !strings.Contains(r.stderr, `"rl@2"`) || !strings.Contains(r.stderr, "--step 3") {
		t.Errorf("--step 3 on rl@2's episodes: exit %d, stderr %q; want 2, naming rl@2 and --step 3", r.code, r.stderr)
	}
	if evals, err := rl.ReadEval(); err != nil || len(evals) != 0 {
		t.Errorf("eval.jsonl %v %v, want nothing logged", evals, err)
	}
	mustRun(t, nil, "log-eval", "--run", rl.Dir, "--step", "2", p2)
	mustRun(t, nil, "log-eval", "--run", rl.Dir, "--step", "0", base)
	evals, err := rl.ReadEval()
	if err != nil || evals[2]["val/episodes"] != 3 || evals[0]["val/episodes"] != 2 {
		t.Errorf("eval.jsonl %v %v, want steps 0 and 2 logged", evals, err)
	}
}

// Episodes of the base model, logged without --step, were refused with
// "not by a step of run rl (rl@1)", which read as if rl@1 had answered; the
// message now gives rl@1 as an example of a name and says that the base
// model's episodes are step 0's.
func TestLogEvalBaseModelNeedsStepZero(t *testing.T) {
	rl := evalRun(t, 1)
	base := filepath.Join(t.TempDir(), "base.parquet")
	evalFile(t, base, "tiny", f(0), f(1))
	r := run(t, nil, "log-eval", "--run", rl.Dir, base)
	if r.code != 2 || strings.Contains(r.stderr, "(rl@1)") || !strings.Contains(r.stderr, "such as rl@1") || !strings.Contains(r.stderr, "--step 0") {
		t.Errorf("base model's episodes without --step: exit %d, stderr %q; want 2, rl@1 as an example and --step 0 for the base model", r.code, r.stderr)
	}
}

// log-eval's refusals named the group and trajectory but not the file or
// row they sit in, so among several inputs or a folder of them the
// episode was hard to find; they now start with the file
// and row, as the reader's own errors do.
func TestLogEvalErrorsNameFileAndRow(t *testing.T) {
	rl := evalRun(t, 2)
	dir := t.TempDir()
	b := filepath.Join(dir, "b.parquet")
	evalFile(t, b, "rl@1", f(1), nil, f(math.NaN()))
	r := run(t, nil, "log-eval", "--run", rl.Dir, b)
	if want := b + " row 2 (group val-b.parquet, trajectory e2): reward is NaN"; r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("NaN reward in %s: exit %d, stderr %q; want 2 and %q", b, r.code, r.stderr, want)
	}
}

// Episodes of two steps of the run, logged together, are refused saying
// to log each step's on its own. The refusal also said "or pass --step",
// which --step now refuses too (rows naming another step of the run):
// followed, it led to a second refusal.
func TestLogEvalTwoStepsHintWorks(t *testing.T) {
	rl := evalRun(t, 2)
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "s1.parquet"), filepath.Join(dir, "s2.parquet")
	evalFile(t, p1, "rl@1", f(1), f(0))
	// Trajectory ids are unique across the inputs: step 2's are others.
	evalFileIDs(t, p2, "rl@2", "s2-", f(1), f(1))
	r := run(t, nil, "log-eval", "--run", rl.Dir, p1, p2)
	if r.code != 2 || !strings.Contains(r.stderr, "on their own") || strings.Contains(r.stderr, "pass --step") {
		t.Errorf("two steps' episodes: exit %d, stderr %q; want 2, saying to log each step's on its own and not to pass --step", r.code, r.stderr)
	}
	// What the old hint said to do is refused.
	if r := run(t, nil, "log-eval", "--run", rl.Dir, "--step", "2", p1, p2); r.code != 2 {
		t.Errorf("--step 2 on both steps' episodes: exit %d, stderr %q; want 2", r.code, r.stderr)
	}
	mustRun(t, nil, "log-eval", "--run", rl.Dir, p1)
	mustRun(t, nil, "log-eval", "--run", rl.Dir, p2)
}
