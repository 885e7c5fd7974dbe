package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestIgnoredFlagsWarned runs hone-train as a process with flags the call
// does not read: --rank, --alpha, --rslora or --targets with
// --init-adapter (whose adapter has its own shape), and --publish-every
// or --publish-timeout with a local --out (nothing is published). Each trains and warns once,
// naming the flag and why it does nothing; the same call without them
// warns about none. Before, all were ignored without a word: a user who
// asked for --rank 16 on top of a rank-2 --init-adapter trained rank 2.
func TestIgnoredFlagsWarned(t *testing.T) {
	md, in, out, init := warmAdapter(t)
	for i, tc := range []struct {
		extra []string
		want  []string // a warning line containing each; none: no "does nothing" warning
	}{
		{[]string{"--init-adapter", init, "--rank", "16", "--alpha", "32"}, []string{"--rank", "--alpha", "--init-adapter"}},
		{[]string{"--init-adapter", init, "--rslora", "--targets", "q_proj"}, []string{"--rslora", "--targets"}},
		{[]string{"--publish-every", "5s"}, []string{"--publish-every", "--out"}},
		{[]string{"--publish-timeout", "1m"}, []string{"--publish-timeout", "--out"}},
		{[]string{"--init-adapter", init}, nil},
	} {
		for _, job := range []string{"grpo", "sft"} {
			args := append([]string{job, "--model", md, "--run", job + string(rune('a'+i)), "--out", out, "--threads", "1", "--steps", "1"}, tc.extra...)
			code, text := runMain(t, append(args, in)...)
			if code != 0 {
				t.Fatalf("%s %v: exit %d\n%s", job, tc.extra, code, text)
			}
			checkDoesNothing(t, job, tc.extra, text, tc.want)
		}
	}
}

// TestIdleChoiceFlagsWarned runs hone-train as a process with flags that
// only refine a choice the call did not make: --best-mode without
// --best-metric (no step is picked as best), --norm-constant without
// --norm constant, --tis-mode with --tis 0 (no importance weight), and
// --kl-penalty-source current_learner without --kl-penalty-coef (no
// advantage shift: docs/art.md said it was refused, as sample is, but it
// trained without a word), and --epochs with --steps N (--steps counts the
// call's steps; --epochs is read only with --steps 0, so a TRL port's
// num_train_epochs beside max_steps trained --steps without a word).
// Each trains and warns once, naming the flag and the one it needs; with
// that choice made, none warns. Before, all were ignored without a word.
func TestIdleChoiceFlagsWarned(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	out := filepath.Join(dir, "adapters")
	for i, tc := range []struct {
		jobs  []string
		extra []string
		want  []string // a warning line containing each; none: no "does nothing" warning
	}{
		{[]string{"grpo", "sft"}, []string{"--best-mode", "min"}, []string{"--best-mode", "--best-metric"}},
		{[]string{"grpo", "sft"}, []string{"--best-mode", "min", "--best-metric", "loss"}, nil},
		{[]string{"grpo"}, []string{"--norm-constant", "512"}, []string{"--norm-constant", "--norm constant"}},
		{[]string{"grpo"}, []string{"--norm", "constant", "--norm-constant", "512"}, nil},
		{[]string{"grpo"}, []string{"--tis-mode", "sampler"}, []string{"--tis-mode", "--tis"}},
		{[]string{"grpo"}, []string{"--tis", "0", "--tis-mode", "recomputed"}, []string{"--tis-mode", "--tis"}},
		{[]string{"grpo"}, []string{"--kl-penalty-source", "current_learner"}, []string{"--kl-penalty-source", "--kl-penalty-coef"}},
		{[]string{"grpo"}, []string{"--norm", "art", "--kl-penalty-coef", "0.1", "--kl-penalty-source", "current_learner"}, nil},
		{[]string{"grpo", "sft"}, []string{"--epochs", "2"}, []string{"--epochs 2", "--steps 1"}},
		{[]string{"grpo", "sft"}, []string{"--steps", "0", "--epochs", "1"}, nil},
	} {
		for _, job := range tc.jobs {
			args := append([]string{job, "--model", md, "--run", job + string(rune('a'+i)), "--out", out, "--threads", "1", "--steps", "1"}, tc.extra...)
			code, text := runMain(t, append(args, in)...)
			if code != 0 {
				t.Fatalf("%s %v: exit %d\n%s", job, tc.extra, code, text)
			}
			checkDoesNothing(t, job, tc.extra, text, tc.want)
		}
	}
}

// checkDoesNothing checks the "does nothing" warnings of a call of job with
// extra flags that wrote text: none when want is nil, else exactly one
// naming each of want.
func checkDoesNothing(t *testing.T, job string, extra []string, text string, want []string) {
	t.Helper()
	w := warnLines(text, "does nothing")
	if want == nil {
		if len(w) != 0 {
			t.Errorf("%s %v: warned %q, want none", job, extra, w)
		}
		return
	}
	if len(w) != 1 {
		t.Errorf("%s %v: warnings %q, want one\n%s", job, extra, w, text)
		return
	}
	for _, s := range want {
		if !strings.Contains(w[0], s) {
			t.Errorf("%s %v: warning %q does not name %s", job, extra, w[0], s)
		}
	}
}
