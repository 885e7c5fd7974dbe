package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/openaitest"
	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/train/checkpoint"
)

// TestLogEvalLoop runs the eval split between rounds with the real stages
// on a tiny model: each round hone-train trains one more step (run rl,
// --best-metric val/reward, --keep-last 1), hone-serve picks it up,
// hone-collect plays greedy held-out episodes with rl@N, and log-eval
// records them. The logged val/reward of each step must be the mean
// reward hone-inspect stats computes from the same file; best must be the
// first step with the highest val/reward; only best and latest are left.
func TestLogEvalLoop(t *testing.T) {
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
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
		return stdout.String()
	}
	stage("hone-train", "init-model", "--family", "qwen3", "--hidden", "64", "--layers", "2", "--heads", "4", "--init-std", "0.3", "--seed", "1", "-o", "tiny")
	stage("hone-collect", "--env", "guess", "--policy", "scripted:mix", "--groups", "64", "-G", "1", "--seed", "101", "-o", "sft.parquet")
	addr := openaitest.StartProcess(t, filepath.Join(binDir, "hone-serve"), "--model", filepath.Join(work, "tiny"),
		"--adapters", filepath.Join(work, "adapters"), "--port", "0", "--threads", "1", "--max-tokens", "8", "--poll-interval", "100ms")
	base := "http://" + addr + "/v1"
	served := func(model string) bool {
		resp, err := http.Get(base + "/models")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"`+model+`"`)
	}
	runDir := filepath.Join(work, "adapters", "rl")
	val := func(model, file string) {
		stage("hone-collect", "--env", "guess", "--split", "val", "--groups", "8", "-G", "1", "--model", model, "--base-url", base,
			"--temperature", "0", "--max-tokens", "4", "--seed", "800001", "--run", "val", "-o", file)
	}
	logged := map[int]map[string]float64{}
	for r := 1; r <= 3; r++ {
		stage("hone-train", "sft", "--model", "tiny", "--run", "rl", "--out", "adapters", "--resume", "--steps", fmt.Sprint(r),
			"--batch-size", "16", "--lr", "2e-2", "--max-grad-norm", "1", "--best-metric", "val/reward", "--keep-last", "1", "sft.parquet")
		model := fmt.Sprintf("rl@%d", r)
		if !waitfor.Within(time.Minute, func() bool { return served(model) }) {
			t.Fatalf("hone-serve does not serve %s", model)
		}
		file := fmt.Sprintf("val-%d.parquet", r)
		val(model, file)
		var row map[string]float64
		if err := json.Unmarshal([]byte(stage("hone-inspect", "log-eval", "--run", runDir, file)), &row); err != nil {
			t.Fatal(err)
		}
		logged[r] = row
		if r == 1 { // the base model as the run's starting point: step 0
			val("tiny", "val-0.parquet")
			var row0 map[string]float64
			if err := json.Unmarshal([]byte(stage("hone-inspect", "log-eval", "--run", runDir, "--step", "0", "val-0.parquet")), &row0); err != nil {
				t.Fatal(err)
			}
			logged[0] = row0
		}
	}
	ck := &checkpoint.Run{Dir: runDir}
	evals, err := ck.ReadEval()
	if err != nil {
		t.Fatal(err)
	}
	bestStep, bestV := 0, 0.0
	for s := 0; s <= 3; s++ {
		file := filepath.Join(work, fmt.Sprintf("val-%d.parquet", s))
		var st struct {
			Reward struct {
				Mean *float64 `json:"mean"`
			} `json:"reward"`
		}
		if err := json.Unmarshal([]byte(stage("hone-inspect", "stats", "--json", file)), &st); err != nil || st.Reward.Mean == nil {
			t.Fatalf("stats of %s: %v", file, err)
		}
		got := evals[s]
		if got["val/reward"] != *st.Reward.Mean || got["val/episodes"] != 8 || got["val/exception_rate"] != 0 {
			t.Errorf("step %d: eval.jsonl row %v, want val/reward %v (stats) over 8 episodes", s, got, *st.Reward.Mean)
		}
		if logged[s]["val/reward"] != got["val/reward"] || logged[s]["step"] != float64(s) {
			t.Errorf("step %d: log-eval printed %v, eval.jsonl holds %v", s, logged[s], got)
		}
		if s > 0 && (s == 1 || got["val/reward"] > bestV) {
			bestStep, bestV = s, got["val/reward"]
		}
	}
	if b, ok, err := ck.Best(); err != nil || !ok || b != bestStep {
		t.Errorf("best %d %v %v, want step %d (val/reward %v)", b, ok, err, bestStep, bestV)
	}
	want := []int{bestStep, 3}
	if bestStep == 3 {
		want = []int{3}
	}
	if steps, _ := ck.Steps(); !slices.Equal(steps, want) {
		t.Errorf("step folders %v, want %v (best and latest)", steps, want)
	}
	stage("hone-inspect", "report", runDir, "-o", "report.html")
	page, _ := os.ReadFile(filepath.Join(work, "report.html"))
	if wantRow := fmt.Sprintf("best step by --best-metric val/reward (max)</th><td>%d (val/reward ", bestStep); !strings.Contains(string(page), wantRow) {
		t.Errorf("the report has no %q", wantRow)
	}
	t.Logf("val/reward by step: %v %v %v %v; best step %d", evals[0]["val/reward"], evals[1]["val/reward"], evals[2]["val/reward"], evals[3]["val/reward"], bestStep)
}
