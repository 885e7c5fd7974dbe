package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// warnLines are the level=WARN lines of a run's output that contain s.
func warnLines(text, s string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// TestResumeWithoutStepsWarns runs hone-train as a process with --resume
// on run folders that have no step yet (a mistyped --run, or the first
// round of a loop that always passes --resume, as the README's does): it
// trains a fresh run and warns, naming the run folder, that there was
// nothing to continue. Before, it started the fresh run without a word,
// so a typo in --run trained from scratch unnoticed (transformers' Trainer
// raises there; Hone warns, since the README's loop relies on it). A
// --watch-dir call, which resumes on its own, starts a run quietly, and
// a --resume that finds steps does not warn.
func TestResumeWithoutStepsWarns(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	out := filepath.Join(dir, "adapters")
	for _, job := range []string{"grpo", "sft"} {
		run := job + "-typo"
		args := []string{job, "--model", md, "--run", run, "--out", out, "--rank", "2", "--threads", "1", "--steps", "1", "--resume", in}
		code, text := runMain(t, args...)
		if code != 0 {
			t.Fatalf("%s --resume on a run without steps: exit %d\n%s", job, code, text)
		}
		if w := warnLines(text, "--resume"); len(w) != 1 || !strings.Contains(w[0], filepath.Join(out, run)) || !strings.Contains(w[0], "fresh") {
			t.Errorf("%s --resume on a run without steps: warnings %q, want one naming %s and a fresh start\n%s", job, w, filepath.Join(out, run), text)
		}
		if _, err := os.Stat(filepath.Join(out, run, "step-000001")); err != nil {
			t.Errorf("%s: the fresh run saved no step 1: %v", job, err)
		}
		args[len(args)-3] = "2" // --steps 2: continue the run just started
		code, text = runMain(t, args...)
		if code != 0 || len(warnLines(text, "--resume")) != 0 {
			t.Errorf("%s --resume on a run with a step: exit %d, warnings %q\n%s", job, code, warnLines(text, "--resume"), text)
		}
	}
	code, text := runMain(t, "grpo", "--model", md, "--run", "watched", "--out", out, "--rank", "2", "--threads", "1", "--steps", "1", "--watch-dir", filepath.Join(dir, "s"))
	if code != 0 || len(warnLines(text, "--resume")) != 0 {
		t.Errorf("first --watch-dir call: exit %d, warnings %q, want 0 and none\n%s", code, warnLines(text, "--resume"), text)
	}
}
