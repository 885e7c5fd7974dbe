package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/train/checkpoint"
)

// TestLogEvalAfterResumeAddsBestMetric: README's "Best step by a
// validation split" adds --best-metric val/reward --keep-last 1 to the
// loop's --resume command, which a run started without them refused
// (option "keep_last" differs, exit 2). With the real hone-train on a tiny
// model: the resume names the best of the steps already evaluated and
// prunes by --keep-last 1, and log-eval and report then read the new
// options from the run's saved config, moving best and pruning by them.
func TestLogEvalAfterResumeAddsBestMetric(t *testing.T) {
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stage := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, name), args...)
		cmd.Dir = work
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, stderr.String())
		}
		return stderr.String()
	}
	stage("hone-train", "init-model", "--family", "qwen3", "--hidden", "32", "--layers", "1", "--heads", "4", "--seed", "1", "-o", "tiny")
	stage("hone-collect", "--env", "guess", "--policy", "scripted:mix", "--groups", "8", "-G", "1", "--seed", "101", "-o", "sft.parquet")
	sft := []string{"sft", "--model", "tiny", "--run", "rl", "--out", "adapters", "--steps", "3", "--batch-size", "4", "--threads", "1", "sft.parquet"}
	stage("hone-train", sft...)
	run := &checkpoint.Run{Dir: filepath.Join(work, "adapters", "rl")}
	evals := map[int][]*float64{1: {f(0)}, 2: {f(1)}, 3: {f(2)}}
	file := func(s int) string {
		p := filepath.Join(work, "val-"+strconv.Itoa(s)+".parquet")
		evalFile(t, p, "rl@"+strconv.Itoa(s), evals[s]...)
		return p
	}
	stage("hone-inspect", "log-eval", "--run", run.Dir, file(1))
	stage("hone-inspect", "log-eval", "--run", run.Dir, file(2))
	if steps, _ := run.Steps(); !slices.Equal(steps, []int{1, 2, 3}) {
		t.Fatalf("steps before the resume %v, want all 3 (no --keep-last yet)", steps)
	}

	log := stage("hone-train", append(sft, "--resume", "--best-metric", "val/reward", "--keep-last", "1")...)
	if !strings.Contains(log, "other checkpoint options") || !strings.Contains(log, `keep_last="0 -> 1"`) ||
		!strings.Contains(log, `best_metric="\"\" -> \"val/reward\""`) {
		t.Errorf("the resume does not log the changed options:\n%s", log)
	}
	// Step 2 has the higher val/reward; 3 is latest (and not evaluated).
	if b, ok, err := run.Best(); err != nil || !ok || b != 2 {
		t.Errorf("best after the resume %d (%v %v), want 2", b, ok, err)
	}
	if steps, _ := run.Steps(); !slices.Equal(steps, []int{2, 3}) {
		t.Errorf("steps after the resume %v, want [2 3]", steps)
	}

	// log-eval reads the new options: step 3 scores higher, so best moves
	// to it and step 2 goes by --keep-last 1.
	log = stage("hone-inspect", "log-eval", "--run", run.Dir, file(3))
	if !strings.Contains(log, "best_metric=val/reward best_step=3") {
		t.Errorf("log-eval does not name the best by the resumed run's --best-metric:\n%s", log)
	}
	if steps, _ := run.Steps(); !slices.Equal(steps, []int{3}) {
		t.Errorf("steps after log-eval of step 3 %v, want [3]", steps)
	}
	stage("hone-inspect", "report", run.Dir, "-o", "report.html")
	page, _ := os.ReadFile(filepath.Join(work, "report.html"))
	if want := "best step by --best-metric val/reward (max)</th><td>3 (val/reward "; !strings.Contains(string(page), want) {
		t.Errorf("the report has no %q", want)
	}
}
