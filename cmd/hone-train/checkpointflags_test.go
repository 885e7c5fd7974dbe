package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestNegativeCheckpointFlagsRefused runs hone-train as a process: a
// negative --save-every or --keep-last has no meaning (the help gives
// "every N steps" and "0: all"), and is a usage error naming the flag and
// its value, before anything is written. Before, both trained: a negative
// --save-every as 1 and a negative --keep-last as 0 (keep all).
func TestNegativeCheckpointFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	out := filepath.Join(dir, "adapters")
	for _, job := range []string{"grpo", "sft"} {
		for _, flag := range []string{"--save-every", "--keep-last"} {
			code, text := runMain(t, job, "--model", md, "--run", "neg", "--out", out, "--rank", "2", "--threads", "1", "--steps", "1", flag, "-3", in)
			if code != cli.ExitUsage || !strings.Contains(text, flag+" -3") {
				t.Errorf("%s %s -3: exit %d, want %d naming %s -3; output:\n%s", job, flag, code, cli.ExitUsage, flag, text)
			}
			if _, err := os.Stat(filepath.Join(out, "neg")); !os.IsNotExist(err) {
				t.Fatalf("%s %s -3 left a run folder (%v)", job, flag, err)
			}
		}
	}
}

// TestScheduleFlagsNamedWhenRefused runs hone-train as a process: a
// refused --lr, --min-lr or --warmup-steps is a usage error naming that
// flag and its value alone. Before, each gave "lr …, min lr … and warmup
// … must be positive", naming no flag, and calling the default --min-lr 0
// wrong.
func TestScheduleFlagsNamedWhenRefused(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	for _, tc := range []struct{ flag, value, want string }{
		{"--lr", "0", "--lr 0 must be positive"},
		{"--lr", "-1e-5", "--lr -1e-05 must be positive"},
		{"--min-lr", "-1e-6", "--min-lr -1e-06 must not be negative"},
		{"--warmup-steps", "-2", "--warmup-steps -2 must not be negative"},
	} {
		code, text := runMain(t, "sft", "--model", md, "--run", "sched", "--out", filepath.Join(dir, "adapters"), "--rank", "2", "--threads", "1",
			"--lr-schedule", "cosine", tc.flag, tc.value, in)
		if code != cli.ExitUsage || !strings.Contains(text, tc.want) {
			t.Errorf("%s %s: exit %d, want %d saying %q; output:\n%s", tc.flag, tc.value, code, cli.ExitUsage, tc.want, text)
		}
	}
}
