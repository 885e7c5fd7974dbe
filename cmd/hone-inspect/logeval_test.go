package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/train/checkpoint"
)

// evalRun makes a run folder "rl" with steps 1..n saved, whose config asks
// for the best step by val/reward and keeps the last step only.
func evalRun(t *testing.T, n int) *checkpoint.Run {
	t.Helper()
	return evalRunBest(t, n, "val/reward")
}

// evalRunBest is evalRun with another --best-metric.
func evalRunBest(t *testing.T, n int, best string) *checkpoint.Run {
	t.Helper()
	run := &checkpoint.Run{Dir: filepath.Join(t.TempDir(), "rl")}
	ad := &peft.Adapter{Config: peft.Config{R: 1, LoraAlpha: 2, TargetModules: []string{"q_proj"}}}
	ad.Set(0, "q_proj", peft.LoRA{A: []float32{1, 2}, B: []float32{3, 4}, R: 1, In: 2, Out: 2})
	cfg := map[string]any{"run": "rl", "best_metric": best, "best_mode": "max", "keep_last": 1}
	for s := 1; s <= n; s++ {
		if err := run.Save(ad, nil, checkpoint.State{Step: s}, cfg); err != nil {
			t.Fatal(err)
		}
		if err := run.AppendMetrics(map[string]float64{"step": float64(s), "loss": 1 / float64(s)}); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

// evalFile writes episodes answered by adapter with the given rewards (nil:
// a failed episode) and a "found" metric of 1 for a positive reward.
func evalFile(t *testing.T, path, adapter string, rewards ...*float64) {
	t.Helper()
	evalFileIDs(t, path, adapter, "", rewards...)
}

// evalFileIDs is evalFile with trajectory ids prefixed by prefix, for
// inputs logged together, whose ids must differ.
func evalFileIDs(t *testing.T, path, adapter, prefix string, rewards ...*float64) {
	t.Helper()
	var g trajectory.Group
	for i, r := range rewards {
		tr := trajectory.Trajectory{ID: fmt.Sprintf("%se%d", prefix, i), Split: trajectory.SplitVal, Env: "guess", Adapter: adapter, Reward: r,
			Messages: []trajectory.Message{{Role: "user", Content: "guess"}, {Role: "assistant", Content: "7", AnswerModel: adapter}}}
		if r == nil {
			tr.Error = "turn 1: policy: HTTP 500"
		} else {
			tr.Metrics = map[string]float64{"found": 0}
			if *r > 0 {
				tr.Metrics["found"] = 1
			}
		}
		g.Trajectories = append(g.Trajectories, tr)
	}
	g.ID = "val-" + filepath.Base(path)
	if err := trajectory.WriteFile(context.Background(), path, []trajectory.Group{g}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestLogEval(t *testing.T) {
	rl := evalRun(t, 3)
	dir := t.TempDir()
	p1, p2, p3 := filepath.Join(dir, "s1.parquet"), filepath.Join(dir, "s2.parquet"), filepath.Join(dir, "s3.parquet")
	evalFile(t, p1, "rl@1", f(1), f(0), f(-1), nil)
	evalFile(t, p2, "rl@2", f(1), f(1), f(0))
	evalFile(t, p3, "rl@3", f(0), f(0))

	// Step 1: mean over the 3 episodes that did not fail; 1 of 4 failed.
	r := mustRun(t, nil, "log-eval", "--run", rl.Dir, p1)
	var row map[string]float64
	if err := json.Unmarshal([]byte(r.stdout), &row); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	want := map[string]float64{"step": 1, "val/reward": 0, "val/reward_std_dev": math.Sqrt(2.0 / 3), "val/exception_rate": 0.25, "val/episodes": 4, "val/found": 1.0 / 3}
	for k, v := range want {
		if math.Abs(row[k]-v) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, row[k], v)
		}
	}
	if len(row) != len(want) {
		t.Errorf("row %v, want the keys of %v", row, want)
	}
	evals, err := rl.ReadEval()
	if err != nil || evals[1]["val/reward_std_dev"] != row["val/reward_std_dev"] {
		t.Errorf("eval.jsonl %v %v, want the row printed", evals, err)
	}
	// Steps 1..3 were saved before any eval: 2 and 3 are kept until
	// evaluated; 1 is best.
	if b, ok, _ := rl.Best(); !ok || b != 1 {
		t.Errorf("best %d %v, want 1", b, ok)
	}
	// Step 2 scores higher: best moves to it, and step 1 (evaluated, not
	// best, not latest) is pruned by keep_last 1.
	mustRun(t, nil, "log-eval", "--run", rl.Dir, p2)
	mustRun(t, nil, "log-eval", "--run", rl.Dir, p3)
	if b, ok, _ := rl.Best(); !ok || b != 2 {
		t.Errorf("best %d %v, want 2", b, ok)
	}
	if steps, _ := rl.Steps(); !slices.Equal(steps, []int{2, 3}) {
		t.Errorf("steps %v, want [2 3]", steps)
	}
	// Logged again for step 3 under another split, and replaced: val stays.
	p2at3 := filepath.Join(dir, "s2at3.parquet")
	evalFile(t, p2at3, "rl@3", f(1), f(1), f(0))
	mustRun(t, nil, "log-eval", "--run", rl.Dir, "--split", "test", "--step", "3", p2at3)
	mustRun(t, nil, "log-eval", "--run", rl.Dir, "--split", "test", "--step", "3", p3)
	evals, _ = rl.ReadEval()
	if evals[3]["test/reward"] != 0 || evals[3]["val/reward"] != 0 || evals[3]["test/episodes"] != 2 {
		t.Errorf("step 3 row %v", evals[3])
	}
	// The report draws the splits and names the best step.
	page := filepath.Join(dir, "r.html")
	mustRun(t, nil, "report", rl.Dir, "-o", page)
	b, _ := os.ReadFile(page)
	for _, s := range []string{`id="chart-split-val_reward"`, "best step by --best-metric val/reward (max)</th><td>2 (val/reward 0.66667)"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("report has no %q", s)
		}
	}
}

func TestLogEvalBadInput(t *testing.T) {
	rl := evalRun(t, 2)
	dir := t.TempDir()
	unscored, other, mixed := filepath.Join(dir, "u.parquet"), filepath.Join(dir, "o.parquet"), filepath.Join(dir, "m.parquet")
	evalFile(t, unscored, "rl@1", f(1), nil)
	gs, _ := trajectory.ReadFile(context.Background(), unscored)
	gs[0].Trajectories[0].Reward = nil
	trajectory.WriteFile(context.Background(), unscored, gs, trajectory.WriterOptions{})
	evalFile(t, other, "warmup@60", f(1))
	evalFile(t, mixed, "rl@1", f(1), f(0))
	gs, _ = trajectory.ReadFile(context.Background(), mixed)
	gs[0].Trajectories[1].Adapter = "rl@2"
	trajectory.WriteFile(context.Background(), mixed, gs, trajectory.WriterOptions{})
	future := filepath.Join(dir, "f.parquet")
	evalFile(t, future, "rl@5", f(1))
	// A NaN or infinite reward (a file scored outside Hone) is named, not
	// reported as an eval.jsonl that cannot hold the mean (exit 1).
	nan, inf := filepath.Join(dir, "nan.parquet"), filepath.Join(dir, "inf.parquet")
	evalFile(t, nan, "rl@1", f(1), f(math.NaN()))
	evalFile(t, inf, "rl@1", f(math.Inf(-1)), f(1))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{unscored}, "u.parquet row 0 (group val-u.parquet, trajectory e0): no reward: score the episodes first"},
		{[]string{other}, `answered by "warmup@60", not by a step of run rl`},
		{[]string{mixed}, "m.parquet row 1 (group val-m.parquet, trajectory e1): answered by step 2, but "},
		{[]string{future}, "step 5 is after the run's latest, step-000002"},
		{[]string{nan}, "nan.parquet row 1 (group val-nan.parquet, trajectory e1): reward is NaN, not a finite number"},
		{[]string{inf}, "inf.parquet row 0 (group val-inf.parquet, trajectory e0): reward is -Inf, not a finite number"},
		{[]string{"--split", "Val", unscored}, `split "Val"`},
	} {
		r := run(t, nil, append([]string{"log-eval", "--run", rl.Dir}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if r := run(t, nil, "log-eval", other); r.code != 2 || !strings.Contains(r.stderr, "--run DIR is required") {
		t.Errorf("no --run: exit %d %q", r.code, r.stderr)
	}
	if r := run(t, nil, "log-eval", "--run", dir, other); r.code != 2 || !strings.Contains(r.stderr, "is not a training run folder") {
		t.Errorf("not a run folder: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(rl.Dir, runfolder.EvalName)); !os.IsNotExist(err) {
		t.Errorf("a refused eval wrote %s: %v", runfolder.EvalName, err)
	}
}

// TestLogEvalWarnsWhenTheSplitLacksTheBestMetric: a run whose --best-metric
// names an environment metric hone-train could not check (inputs that need
// not come from the environment) is told, once the split is logged without
// it, that no step can be best by it; a split that has it, or another
// split, says nothing.
func TestLogEvalWarnsWhenTheSplitLacksTheBestMetric(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s1.parquet")
	evalFile(t, p, "rl@1", f(1), f(0))
	for _, tc := range []struct {
		best, split string
		warn        bool
	}{
		{"val/solved", "val", true},
		{"val/found", "val", false},
		{"val/solved", "test", false},
	} {
		rl := evalRunBest(t, 1, tc.best)
		r := mustRun(t, nil, "log-eval", "--run", rl.Dir, "--split", tc.split, p)
		warned := strings.Contains(r.stderr, "no step can be best by it")
		if warned != tc.warn {
			t.Errorf("--best-metric %s, split %s: warned %v, want %v\n%s", tc.best, tc.split, warned, tc.warn, r.stderr)
		}
		if warned && !strings.Contains(r.stderr, "val/found") {
			t.Errorf("the warning does not list what the split has:\n%s", r.stderr)
		}
	}
}

// TestLogEvalRunDot: the run is named after its folder, so --run . from
// inside it (or ../rl from a sibling) names it as hone-serve does, "rl";
// it was named "." and every episode, answered by rl@1, was refused.
func TestLogEvalRunDot(t *testing.T) {
	rl := evalRun(t, 1)
	p := filepath.Join(t.TempDir(), "s1.parquet")
	evalFile(t, p, "rl@1", f(1), f(0))
	cmd := exec.Command(binary, "log-eval", "--run", ".", p)
	cmd.Dir = rl.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("log-eval --run . in the run folder: %v\n%s", err, out)
	}
	if evals, err := rl.ReadEval(); err != nil || evals[1]["val/reward"] != 0.5 {
		t.Errorf("eval.jsonl %v %v, want val/reward 0.5 at step 1", evals, err)
	}
}

// TestLogEvalWarnsOfRowsOutsideTheSplit: rows labelled with another split,
// or rows without a split beside rows of the one logged, are counted but
// warned of: hone-train trains both kinds, so they are not held out. A
// file collected from docs/mcp-env.md's task file without --split val
// (three unlabelled tasks and the val one) was once logged as val with no
// word. A file of unlabelled rows only (a proxy's eval) is not warned of.
func TestLogEvalWarnsOfRowsOutsideTheSplit(t *testing.T) {
	rl := evalRun(t, 1)
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		splits []string
		warn   string // in stderr; "" for no warning
	}{
		{"mixed", []string{"", trajectory.SplitVal, "", ""}, "rows_split=none rows=3"},
		{"train", []string{trajectory.SplitTrain, trajectory.SplitVal}, "rows_split=train rows=1"},
		{"unlabelled", []string{"", ""}, ""},
		{"val", []string{trajectory.SplitVal, trajectory.SplitVal}, ""},
	} {
		p := filepath.Join(dir, c.name+".parquet")
		rewards := make([]*float64, len(c.splits))
		for i := range rewards {
			rewards[i] = f(float64(i % 2))
		}
		evalFile(t, p, "rl@1", rewards...)
		gs, err := trajectory.ReadFile(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range gs[0].Trajectories {
			gs[0].Trajectories[i].Split = c.splits[i]
		}
		if err := trajectory.WriteFile(context.Background(), p, gs, trajectory.WriterOptions{}); err != nil {
			t.Fatal(err)
		}
		r := mustRun(t, nil, "log-eval", "--run", rl.Dir, p)
		warned := strings.Contains(r.stderr, "level=WARN")
		if c.warn == "" && warned || c.warn != "" && !strings.Contains(r.stderr, c.warn) {
			t.Errorf("%s: want warning %q, stderr:\n%s", c.name, c.warn, r.stderr)
		}
		if !strings.Contains(r.stdout, fmt.Sprintf(`"val/episodes":%d`, len(c.splits))) {
			t.Errorf("%s: every row is still counted: %s", c.name, r.stdout)
		}
	}
}

// Rewards and metrics near the float64 limit are averaged to what they
// are: their sum overflowed to +Inf, and log-eval failed to record the
// split (eval.jsonl holds no infinity), or recorded a deviation of +Inf.
func TestLogEvalHugeRewards(t *testing.T) {
	rl := evalRun(t, 1)
	p := filepath.Join(t.TempDir(), "huge.parquet")
	var g trajectory.Group
	g.ID = "val-huge"
	for i, r := range []float64{1e308, 1e308, -1e308, 1e308} {
		r := r
		g.Trajectories = append(g.Trajectories, trajectory.Trajectory{ID: fmt.Sprintf("e%d", i), Split: trajectory.SplitVal, Env: "guess", Adapter: "rl@1", Reward: &r,
			Metrics:  map[string]float64{"bytes": 1.5e308},
			Messages: []trajectory.Message{{Role: "user", Content: "guess"}, {Role: "assistant", Content: "7", AnswerModel: "rl@1"}}})
	}
	if err := trajectory.WriteFile(context.Background(), p, []trajectory.Group{g}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, nil, "log-eval", "--run", rl.Dir, p)
	var row map[string]float64
	if err := json.Unmarshal([]byte(r.stdout), &row); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-12*math.Abs(want) }
	// Population deviation of 1, 1, -1, 1 (×1e308): sqrt(0.75).
	if !near(row["val/reward"], 0.5e308) || !near(row["val/reward_std_dev"], math.Sqrt(0.75)*1e308) || !near(row["val/bytes"], 1.5e308) {
		t.Errorf("row %v; want reward 5e307, std dev %g, bytes 1.5e308", row, math.Sqrt(0.75)*1e308)
	}
}

// TestLogEvalOneFailedEpisodeWording: a file of one episode, failed, is
// refused in words for one: it said "every one of the 1 episodes failed".
func TestLogEvalOneFailedEpisodeWording(t *testing.T) {
	rl := evalRun(t, 1)
	p := filepath.Join(t.TempDir(), "s1.parquet")
	evalFile(t, p, "rl@1", nil)
	r := run(t, nil, "log-eval", "--run", rl.Dir, p)
	if r.code == 0 || strings.Contains(r.stderr, "1 episodes") || !strings.Contains(r.stderr, "the only episode failed") {
		t.Errorf("exit %d, stderr %q; want a refusal saying the only episode failed", r.code, r.stderr)
	}
}
