package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// writeRunFolder writes a GRPO-like run: adapters/r1/metrics.jsonl with
// steps steps, an eval file and one trajectory file per step.
func writeRunFolder(t *testing.T, dir string, steps int) (run, eval, trajGlob string) {
	t.Helper()
	run = filepath.Join(dir, "adapters", "r1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 1; i <= steps; i++ {
		x := float64(i)
		row := map[string]any{
			"step": i, "loss": 0.5 * math.Exp(-x/8), "policy_loss": -0.02 * math.Sin(x), "kl": 0.002 * x, "entropy": 1.2 - 0.02*x,
			"clip_frac": 0.05 + 0.02*math.Cos(x), "ratio_mean": 1 + 0.003*math.Sin(3*x), "grad_norm": 0.8 + 0.3*math.Sin(x/2),
			"lr": 2e-5 * math.Min(1, x/4), "reward_mean": 0.2 + 0.5*(1-math.Exp(-x/6)), "reward_std": 0.25 - 0.01*x,
			"groups": 8, "groups_trainable": 6 + i%3, "tokens": 20000 + 100*i, "trainable_tokens": 6000 + 50*i,
			"tokens_per_s": 900 + 10*x, "seconds": 22.5,
		}
		line, _ := json.Marshal(row)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(run, "metrics.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	eval = filepath.Join(dir, "eval.jsonl")
	evals := fmt.Sprintf(`{"label":"base","step":0,"accuracy":0.31,"mean_reward":0.18}
{"label":"after-sft","step":0,"accuracy":0.42,"mean_reward":0.27}
{"label":"after-grpo","step":%d,"accuracy":0.63,"mean_reward":0.66}
{"label":"after-grpo","step":%d,"accuracy":0.55,"mean_reward":0.5}
`, steps, steps/2)
	if err := os.WriteFile(eval, []byte(evals), 0o644); err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= steps; s++ {
		var groups []trajectory.Group
		for g := 0; g < 4; g++ {
			grp := trajectory.Group{ID: fmt.Sprintf("s%d-g%d", s, g)}
			for k := 0; k < 4; k++ {
				r := 0.2 + 0.5*(1-math.Exp(-float64(s)/6)) + 0.1*float64(k-2) + 0.03*float64(g)
				grp.Trajectories = append(grp.Trajectories, trajectory.Trajectory{Run: "r1", Step: int64(s), GroupID: grp.ID,
					ID: fmt.Sprintf("%s-%d", grp.ID, k), Env: "demo", Reward: &r,
					Messages: []trajectory.Message{{Role: "user", Content: "2+2?"}, {Role: "assistant", Content: "4"}}})
			}
			groups = append(groups, grp)
		}
		p := filepath.Join(dir, "runs", fmt.Sprintf("step-%03d.scored.parquet", s))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := trajectory.WriteFile(context.Background(), p, groups, trajectory.WriterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return run, eval, filepath.Join(dir, "runs", "*.scored.parquet")
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	run, eval, glob := writeRunFolder(t, dir, 24)
	outDir := t.TempDir()
	out := filepath.Join(outDir, "report.html")
	mustRun(t, nil, "report", run, "--eval", eval, "--trajectories", glob, "-o", out)
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	imgs := regexp.MustCompile(`src="data:image/png;base64,([A-Za-z0-9+/=]+)"`).FindAllStringSubmatch(html, -1)
	// 9 training plots, 2 eval metrics, 2 trajectory plots, 6 others
	// (groups, groups_trainable, seconds, tokens, tokens_per_s,
	// trainable_tokens).
	if len(imgs) != 19 {
		t.Fatalf("%d plots in the page, want 19", len(imgs))
	}
	for i, m := range imgs {
		b, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil || !strings.HasPrefix(string(b), "\x89PNG\r\n\x1a\n") {
			t.Fatalf("image %d is not a PNG (err %v)", i, err)
		}
	}
	for _, frag := range []string{"<title>Hone run r1</title>", "24 (step 1 to 24)", "best step", "9m0s", "Eval: Accuracy", "Reward (trajectories, mean ± std)"} {
		if !strings.Contains(html, frag) {
			t.Errorf("page lacks %q", frag)
		}
	}
	if names, _ := os.ReadDir(outDir); len(names) != 1 {
		t.Errorf("output folder holds %d entries, want only report.html", len(names))
	}
	if keep := os.Getenv("HONE_REPORT_SAMPLE"); keep != "" {
		if err := os.WriteFile(keep, page, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The metrics file named directly works too, and - writes to stdout.
	r := mustRun(t, nil, "report", filepath.Join(run, "metrics.jsonl"), "-o", "-")
	if !strings.HasPrefix(r.stdout, "<!DOCTYPE html>") || !strings.Contains(r.stdout, "Hone run r1") {
		t.Errorf("stdout page starts %.60q", r.stdout)
	}
}

func TestReportCommandBadInput(t *testing.T) {
	dir := t.TempDir()
	runDir, eval, _ := writeRunFolder(t, dir, 3)
	metrics := filepath.Join(runDir, "metrics.jsonl")
	b, _ := os.ReadFile(metrics)
	lines := strings.SplitAfter(string(b), "\n")
	garbled := lines[0] + lines[1][:len(lines[1])/2] + "\n" + lines[2]
	if err := os.WriteFile(metrics, []byte(garbled), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.html")
	r := run(t, nil, "report", runDir, "--eval", eval, "-o", out)
	if r.code != 2 || !strings.Contains(r.stderr, metrics+":2:") {
		t.Fatalf("garbled metrics: exit %d, stderr %q; want 2 and %s:2:", r.code, r.stderr, metrics)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed report left %s behind", out)
	}
	r = run(t, nil, "report", filepath.Join(dir, "missing"), "-o", out)
	if r.code != 2 {
		t.Errorf("missing run folder: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(t, nil, "report", dir, "-o", out) // a folder without metrics.jsonl
	if r.code != 2 || !strings.Contains(r.stderr, "metrics.jsonl") {
		t.Errorf("folder without metrics: exit %d, stderr %q", r.code, r.stderr)
	}
}
