package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReportWarnsOfAFileNamedTwice: report reads an --eval or
// --trajectories file named twice once, as every command reads its
// inputs, and says so on stderr as the others do (warnRepeated); it
// dropped the repeat without a word.
func TestReportWarnsOfAFileNamedTwice(t *testing.T) {
	dir := t.TempDir()
	run, eval, glob := writeRunFolder(t, dir, 4)
	evalAgain := dir + "/./eval.jsonl"
	trajAgain := dir + "/./runs/r1-step-001.scored.parquet"
	out := filepath.Join(t.TempDir(), "r.html")
	r := mustRun(t, nil, "report", run, "--eval", eval, "--eval", evalAgain, "--trajectories", glob, "--trajectories", trajAgain, "-o", out)
	for _, again := range []string{evalAgain, trajAgain} {
		if want := "hone-inspect report: " + again + ": named again, read once"; !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q lacks %q", r.stderr, want)
		}
	}
	if r = mustRun(t, nil, "report", run, "--eval", eval, "--trajectories", glob, "-o", out); strings.Contains(r.stderr, "read once") {
		t.Errorf("report without a repeat warned: %q", r.stderr)
	}
}
