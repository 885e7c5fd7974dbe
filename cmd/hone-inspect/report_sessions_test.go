package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReportSessionFiles: README's round by hand names each round's file
// to hone-train grpo --resume (no --watch-dir), so manifest.json lists the
// files under its sessions, not as consumed. The report must draw each
// file at the step its session trained, as it does for --watch-dir files;
// it used to draw them at step 0 saying no manifest.json lists them.
func TestReportSessionFiles(t *testing.T) {
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
	stage("hone-train", "init-model", "--family", "qwen3", "--hidden", "64", "--layers", "2", "--heads", "4", "--seed", "1", "-o", "tiny")
	for r := 1; r <= 2; r++ {
		file := filepath.Join(work, fmt.Sprintf("r%d.parquet", r))
		stage("hone-collect", "--env", "guess", "--policy", "scripted:mix", "--groups", "4", "-G", "2", "--seed", fmt.Sprint(r), "-o", file)
		stage("hone-train", "grpo", "--model", "tiny", "--run", "rl", "--out", "adapters", "--resume", file)
	}
	out := filepath.Join(work, "report.html")
	mustRun(t, nil, "report", filepath.Join(work, "adapters", "rl"), "--trajectories", filepath.Join(work, "r*.parquet"), "-o", out)
	_, d := readPage(t, out)
	for _, c := range d.Charts {
		if c.ID != "traj-reward" {
			continue
		}
		tr := c.Lines[0]
		if len(tr.X) != 2 || tr.X[0] != 1 || tr.X[1] != 2 ||
			!strings.Contains(tr.Note[0], "trained at step 1") || !strings.Contains(tr.Note[1], "trained at step 2") {
			t.Fatalf("rounds drawn at %v, notes %q; want steps 1 and 2, each trained at its step", tr.X, tr.Note)
		}
		return
	}
	t.Fatalf("report has no traj-reward chart: %q", chartIDs(d))
}
