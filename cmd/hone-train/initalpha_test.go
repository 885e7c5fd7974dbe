package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// warmAdapter trains one sft step (rank 2) of the run "warm" on a scored
// fixture, for the tests of --init-adapter, and returns the model folder,
// the scored file, the --out folder and the step's folder.
func warmAdapter(t *testing.T) (md, in, out, init string) {
	t.Helper()
	dir := t.TempDir()
	md = scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in = filepath.Join(dir, "s", "a.parquet")
	out = filepath.Join(dir, "adapters")
	if code, text := runMain(t, "sft", "--model", md, "--run", "warm", "--out", out, "--rank", "2", "--threads", "1", "--steps", "1", in); code != 0 {
		t.Fatalf("sft: exit %d\n%s", code, text)
	}
	return md, in, out, filepath.Join(out, "warm", "step-000001")
}

// TestInitAdapterAlphaMustBeFinite runs hone-train as a process with
// --init-adapter and --alpha NaN or Inf: a usage error naming --alpha,
// before anything is written, as without --init-adapter. Before, the
// check of --alpha was skipped with --init-adapter (whose adapter has its
// own scale), the value went into the run's config, and the run trained
// its first step and then failed to save it (JSON holds no NaN), exit 1.
func TestInitAdapterAlphaMustBeFinite(t *testing.T) {
	md, in, out, init := warmAdapter(t)
	for _, alpha := range []string{"NaN", "+Inf"} {
		code, text := runMain(t, "grpo", "--model", md, "--run", "rl", "--out", out, "--threads", "1", "--steps", "1",
			"--init-adapter", init, "--alpha", alpha, in)
		if code != cli.ExitUsage || !strings.Contains(text, "--alpha") {
			t.Errorf("--init-adapter with --alpha %s: exit %d, want %d naming --alpha; output:\n%s", alpha, code, cli.ExitUsage, text)
		}
		if _, err := os.Stat(filepath.Join(out, "rl")); !os.IsNotExist(err) {
			t.Fatalf("--alpha %s left a run folder (%v)", alpha, err)
		}
	}
}
