package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/runfolder"
)

// TestWatchRefusedKwargsChangePrunesNothing: a --watch-dir call refused
// for a changed --chat-template-kwargs (here with nothing new to read)
// changes nothing of the run, as a refused resume does, though it also
// gives another --keep-last. Watch mode compares the flag only once the
// rows are read (trainer.DeferKwargs), after Setup had applied the new
// checkpoint options: the refused call pruned the run's older steps by
// the --keep-last of a command it refused. A call that goes on applies
// them still.
func TestWatchRefusedKwargsChangePrunesNothing(t *testing.T) {
	dir := t.TempDir()
	watch := filepath.Join(dir, "w")
	md := scoredFixture(t, dir, watch, "a")
	out := filepath.Join(dir, "adapters")
	train := func(extra ...string) (int, string) {
		args := []string{"grpo", "--model", md, "--run", "r", "--out", out, "--rank", "2", "--threads", "1", "--groups-per-step", "1", "--steps", "2", "--watch-dir", watch}
		return runMain(t, append(args, extra...)...)
	}
	if code, msg := train(); code != 0 {
		t.Fatalf("first call: exit %d\n%s", code, msg)
	}
	run := filepath.Join(out, "r")
	code, msg := train("--chat-template-kwargs", `{"prefix": "P"}`, "--keep-last", "1")
	if code != cli.ExitUsage {
		t.Fatalf("a call adding --chat-template-kwargs with nothing new: exit %d, want %d\n%s", code, cli.ExitUsage, msg)
	}
	if _, err := os.Stat(filepath.Join(run, runfolder.StepName(1))); err != nil {
		t.Errorf("the refused call pruned %s by its --keep-last 1: %v\n%s", runfolder.StepName(1), err, msg)
	}
	// A call that goes on still makes --keep-last the run's, though it
	// finds nothing new.
	if code, msg := train("--keep-last", "1"); code != 0 {
		t.Fatalf("a call giving --keep-last 1 alone: exit %d\n%s", code, msg)
	}
	if _, err := os.Stat(filepath.Join(run, runfolder.StepName(1))); err == nil {
		t.Errorf("a call giving --keep-last 1 kept %s", runfolder.StepName(1))
	}
}
