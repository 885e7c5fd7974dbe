package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// report given hone-train's --out folder (adapters/, which holds the run
// folders) said "no step has been trained in adapters yet" after a run
// had trained there; it now says the folder holds runs and names those
// that can be reported.
func TestReportAdaptersFolderNamesItsRuns(t *testing.T) {
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stage := func(name string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, name), args...)
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, out)
		}
	}
	stage("hone-train", "init-model", "--family", "qwen3", "--hidden", "32", "--layers", "1", "--heads", "2", "--seed", "1", "-o", "tiny")
	stage("hone-collect", "--env", "guess", "--policy", "scripted:mix", "--groups", "4", "-G", "1", "--seed", "1", "-o", "sft.parquet")
	stage("hone-train", "sft", "--model", "tiny", "--run", "warmup", "--out", "adapters", "--steps", "1", "--batch-size", "4", "sft.parquet")

	adapters := filepath.Join(work, "adapters")
	r := run(t, nil, "report", adapters, "-o", filepath.Join(work, "r.html"))
	if r.code != 2 {
		t.Fatalf("report %s: exit %d, want 2; stderr %q", adapters, r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "no step has been trained") || !strings.Contains(r.stderr, filepath.Join(adapters, "warmup")) {
		t.Errorf("stderr %q: want the run folder it holds, %s, named", r.stderr, filepath.Join(adapters, "warmup"))
	}
	// The run itself reports.
	mustRun(t, nil, "report", filepath.Join(adapters, "warmup"), "-o", filepath.Join(work, "r.html"))
}
