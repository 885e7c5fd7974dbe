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
