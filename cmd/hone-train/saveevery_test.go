package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSaveEveryZeroSavesOnlyTheLast runs hone-train as a process with
// --save-every 0 over 3 steps: only the last step is saved (as with a
// --save-every past the run's end, and as save_strategy "no" plus the
// final save_model of a TRL script), every step still has its metrics
// row, and the help says what 0 means. Before, 0 was taken as 1, saving
// every step, and the help said nothing of 0.
func TestSaveEveryZeroSavesOnlyTheLast(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	out := filepath.Join(dir, "adapters")
	for _, job := range []string{"grpo", "sft"} {
		code, text := runMain(t, job, "--model", md, "--run", job, "--out", out, "--rank", "2", "--threads", "1",
			"--steps", "3", "--save-every", "0", in)
		if code != 0 {
			t.Fatalf("%s --save-every 0: exit %d\n%s", job, code, text)
		}
		ents, err := os.ReadDir(filepath.Join(out, job))
		if err != nil {
			t.Fatal(err)
		}
		var steps []string
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "step-") {
				steps = append(steps, e.Name())
			}
		}
		if !slices.Equal(steps, []string{"step-000003"}) {
			t.Errorf("%s --save-every 0 over 3 steps saved %v, want only step-000003", job, steps)
		}
		if rows := stepMetrics(t, filepath.Join(out, job)); len(rows) != 3 {
			t.Errorf("%s: %d metrics rows, want 3", job, len(rows))
		}
		_, help := runMain(t, job, "--help")
		if !strings.Contains(help, "0: only the last") {
			t.Errorf("%s --help does not say what --save-every 0 means:\n%s", job, help)
		}
	}
}
