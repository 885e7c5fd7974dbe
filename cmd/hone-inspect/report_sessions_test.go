package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
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

// TestReportUnfinishedSession: manifest.json lists a session before it
// trains its first step, so a session still training, or killed before
// its end, is listed with the last step it is to reach. Its file was
// drawn at that step, which the run never reached ("trained at step
// 1001" beside a curve that ends at step 2); it is no file the run
// trained, as a --watch-dir session's pending files are none.
func TestReportUnfinishedSession(t *testing.T) {
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stage := func(name string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, name), args...)
		cmd.Dir = work
		return cmd
	}
	must := func(cmd *exec.Cmd) {
		t.Helper()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%q: %v\n%s", cmd.Args, err, out)
		}
	}
	must(stage("hone-train", "init-model", "--family", "qwen3", "--hidden", "64", "--layers", "2", "--heads", "4", "--seed", "1", "-o", "tiny"))
	for r := 1; r <= 2; r++ {
		must(stage("hone-collect", "--env", "guess", "--policy", "scripted:mix", "--groups", "4", "-G", "2", "--seed", fmt.Sprint(r), "-o", filepath.Join(work, fmt.Sprintf("r%d.parquet", r))))
	}
	must(stage("hone-train", "grpo", "--model", "tiny", "--run", "rl", "--out", "adapters", "--resume", filepath.Join(work, "r1.parquet")))
	// Round 2 asks for 1000 steps and is killed once it trained one.
	metrics := filepath.Join(work, "adapters", "rl", "metrics.jsonl")
	long := stage("hone-train", "grpo", "--model", "tiny", "--run", "rl", "--out", "adapters", "--resume", "--steps", "1000", filepath.Join(work, "r2.parquet"))
	var logs waitfor.Buffer
	long.Stdout, long.Stderr = &logs, &logs
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, time.Minute, "round 2's first step in metrics.jsonl", func() bool {
		b, _ := os.ReadFile(metrics)
		return strings.Count(string(b), "\n") >= 2
	})
	if err := long.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = long.Wait()
	out := filepath.Join(work, "report.html")
	mustRun(t, nil, "report", filepath.Join(work, "adapters", "rl"), "--trajectories", filepath.Join(work, "r*.parquet"), "-o", out)
	_, d := readPage(t, out)
	for _, c := range d.Charts {
		if c.ID != "traj-reward" {
			continue
		}
		tr := c.Lines[0]
		for i, x := range tr.X {
			if x > 100 || strings.Contains(tr.Note[i], "trained at step 1001") {
				t.Fatalf("rounds drawn at %v, notes %q; the killed session's file drawn at a step the run never reached\n%s", tr.X, tr.Note, logs.String())
			}
		}
		if !slices.ContainsFunc(tr.Note, func(n string) bool {
			return strings.Contains(n, "trained at step 1 ") && strings.Contains(n, "r1.parquet")
		}) {
			t.Fatalf("rounds drawn at %v, notes %q; want round 1 trained at step 1", tr.X, tr.Note)
		}
		return
	}
	t.Fatalf("report has no traj-reward chart: %q", chartIDs(d))
}
