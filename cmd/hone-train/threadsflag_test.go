package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestNegativeThreadsRefused runs hone-train as a process: --threads -4
// is a usage error naming it, before anything is written, and --threads 0
// trains on all cores, as the help now says (hone-serve's --threads reads
// 0 the same way). Before, any value ≤ 0 was quietly taken as all cores,
// and the help named no such value.
func TestNegativeThreadsRefused(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	out := filepath.Join(dir, "adapters")
	for _, job := range []string{"grpo", "sft"} {
		code, text := runMain(t, job, "--model", md, "--run", "neg", "--out", out, "--rank", "2", "--steps", "1", "--threads", "-4", in)
		if code != cli.ExitUsage || !strings.Contains(text, "--threads -4") {
			t.Errorf("%s --threads -4: exit %d, want %d naming --threads -4; output:\n%s", job, code, cli.ExitUsage, text)
		}
		if _, err := os.Stat(filepath.Join(out, "neg")); !os.IsNotExist(err) {
			t.Fatalf("%s --threads -4 left a run folder (%v)", job, err)
		}
		if code, text := runMain(t, job, "--model", md, "--run", job+"-all", "--out", out, "--rank", "2", "--steps", "1", "--threads", "0", in); code != 0 {
			t.Errorf("%s --threads 0: exit %d, want 0\n%s", job, code, text)
		}
		if _, help := runMain(t, job, "--help"); !strings.Contains(help, "0: all cores") {
			t.Errorf("%s --help does not say what --threads 0 means", job)
		}
	}
}
