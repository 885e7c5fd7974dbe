package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/train/checkpoint"
)

// writeRunFolder writes a GRPO-like run the way hone-train --watch-dir
// leaves it: adapters/<name>/metrics.jsonl with steps steps, the last
// step's folder with train_config.json, latest, and a manifest.json that
// lists one trajectory file per step, trained at that step. Round 1 was
// sampled by warmup@300, round s by <name>@(s-1). It also writes an eval
// file.
func writeRunFolder(t *testing.T, dir string, steps int) (run, eval, trajGlob string) {
	t.Helper()
	return writeNamedRun(t, dir, "r1", steps, 2e-5)
}

func writeNamedRun(t *testing.T, dir, name string, steps int, lr float64) (run, eval, trajGlob string) {
	t.Helper()
	run = filepath.Join(dir, "adapters", name)
	last := filepath.Join(run, runfolder.StepName(steps))
	if err := os.MkdirAll(last, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 1; i <= steps; i++ {
		x := float64(i)
		row := map[string]any{
			"step": i, "loss": 0.5 * math.Exp(-x/8), "policy_loss": -0.02 * math.Sin(x), "kl": 0, "entropy": 1.2 - 0.02*x,
			"clip_frac": 0.05 + 0.02*math.Cos(x), "ratio_mean": 1 + 0.003*math.Sin(3*x), "grad_norm": 0.8 + 0.3*math.Sin(x/2),
			"lr": lr, "reward_mean": 0.2 + 0.5*(1-math.Exp(-x/6)), "reward_std": 0.25 - 0.01*x,
			"groups": 8, "groups_trainable": 6 + i%3, "tokens": 20000 + 100*i, "trainable_tokens": 6000 + 50*i,
			"tokens_per_s": 900 + 10*x, "seconds": 22.5,
		}
		line, _ := json.Marshal(row)
		b.Write(line)
		b.WriteByte('\n')
	}
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(run, "metrics.jsonl"), b.String())
	write(filepath.Join(last, "train_config.json"), fmt.Sprintf(`{"model":"models/tiny","run":%q,"lr":%g,"loss":{"loss":"art","beta":0}}`, name, lr))
	write(filepath.Join(run, "latest"), runfolder.StepName(steps)+"\n")
	eval = filepath.Join(dir, "eval.jsonl")
	write(eval, fmt.Sprintf(`{"label":"base","step":0,"accuracy":0.31,"mean_reward":0.18}
{"label":"after-sft","step":0,"accuracy":0.42,"mean_reward":0.27}
{"label":"after-grpo","step":%d,"accuracy":0.63,"mean_reward":0.66}
{"label":"after-grpo","step":%d,"accuracy":0.55,"mean_reward":0.5}
`, steps, steps/2))
	var man checkpoint.Manifest
	for s := 1; s <= steps; s++ {
		p := filepath.Join(dir, "runs", fmt.Sprintf("%s-step-%03d.scored.parquet", name, s))
		writeRound(t, p, name, s)
		e, err := checkpoint.HashFile(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		e.Step = s
		man.Consumed = append(man.Consumed, e)
	}
	if err := (&checkpoint.Run{Dir: run}).WriteManifest(man); err != nil {
		t.Fatal(err)
	}
	return run, eval, filepath.Join(dir, "runs", name+"-*.scored.parquet")
}

// writeRound writes round s of run name: 4 groups of 4 episodes.
func writeRound(t *testing.T, path, name string, s int) {
	t.Helper()
	adapter, step := fmt.Sprintf("%s@%d", name, s-1), int64(s-1)
	if s == 1 {
		adapter, step = "warmup@300", 300
	}
	var groups []trajectory.Group
	for g := 0; g < 4; g++ {
		grp := trajectory.Group{ID: fmt.Sprintf("%s-s%d-g%d", name, s, g)}
		for k := 0; k < 4; k++ {
			r := 0.2 + 0.5*(1-math.Exp(-float64(s)/6)) + 0.1*float64(k-2) + 0.03*float64(g)
			grp.Trajectories = append(grp.Trajectories, trajectory.Trajectory{Run: name, Step: step, Adapter: adapter, GroupID: grp.ID,
				ID: fmt.Sprintf("%s-%d", grp.ID, k), Env: "demo", Reward: &r, Metrics: map[string]float64{"found": float64(k % 2)},
				Messages: []trajectory.Message{{Role: "user", Content: "2+2?"}, {Role: "assistant", Content: "4", TokenIDs: []int32{19}}}})
		}
		groups = append(groups, grp)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := trajectory.WriteFile(context.Background(), path, groups, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pageData is the JSON the page's script draws from.
type pageData struct {
	Runs []struct {
		Name string `json:"name"`
	} `json:"runs"`
	Charts []struct {
		ID    string `json:"id"`
		Lines []struct {
			Run  int       `json:"run"`
			X    []float64 `json:"x"`
			Note []string  `json:"note"`
		} `json:"lines"`
	} `json:"charts"`
}

func readPage(t *testing.T, path string) (string, pageData) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	m := regexp.MustCompile(`(?s)<script type="application/json" id="hone-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("%s has no chart data", path)
	}
	var d pageData
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("chart data: %v", err)
	}
	return page, d
}

func chartIDs(d pageData) []string {
	var ids []string
	for _, c := range d.Charts {
		ids = append(ids, c.ID)
	}
	return ids
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	run, eval, glob := writeRunFolder(t, dir, 24)
	outDir := t.TempDir()
	out := filepath.Join(outDir, "report.html")
	// From another directory: the manifest's paths are relative to where
	// hone-train ran, so files are matched by checksum.
	mustRun(t, nil, "report", run, "--eval", eval, "--trajectories", glob, "-o", out)
	page, d := readPage(t, out)
	want := []string{"reward_mean", "traj-reward", "loss", "policy_loss", "entropy", "grad_norm", "clip_frac", "ratio_mean",
		"eval-accuracy", "eval-mean_reward",
		"groups_trainable", "tokens", "tokens_per_s", "trainable_tokens"}
	if got := chartIDs(d); !slices.Equal(got, want) {
		t.Fatalf("charts\n got %q\nwant %q", got, want)
	}
	// Round 1's rows carry step 300 (sampled by warmup@300): drawn at the
	// step that trained on them, 1, and labelled with both.
	tr := d.Charts[1].Lines[0]
	if tr.X[0] != 1 || slices.Max(tr.X) != 24 || !strings.HasPrefix(tr.Note[0], "sampled by warmup@300 · trained at step 1 · 16 episodes") ||
		!strings.HasPrefix(tr.Note[1], "sampled by r1@1 · trained at step 2") {
		t.Fatalf("trajectory reward at %v, notes %q", tr.X, tr.Note[:2])
	}
	for _, frag := range []string{"<title>Hone run r1</title>", "24 (step 1 to 24)", "best step", "9m0s", "Eval: Accuracy",
		"Reward per episode (mean, quartiles, range)", `<div><dt>loss.loss</dt><dd>art</dd></div>`, "train_config.json of r1 (step 24)",
		`<tr id="folded-kl"><th>KL to reference</th><td>0</td></tr>`, `<tr id="folded-lr"><th>Learning rate</th><td>2e-05</td></tr>`,
		`<tr id="folded-env-found"><th>Env metric: found (mean)</th><td>0.5</td></tr>`, `<section id="rollouts">`} {
		if !strings.Contains(page, frag) {
			t.Errorf("page lacks %q", frag)
		}
	}
	if names, _ := os.ReadDir(outDir); len(names) != 1 {
		t.Errorf("output folder holds %d entries, want only report.html", len(names))
	}
	if keep := os.Getenv("HONE_REPORT_SAMPLE"); keep != "" {
		if err := os.WriteFile(keep, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The metrics file named directly works too, and - writes to stdout.
	r := mustRun(t, nil, "report", filepath.Join(run, "metrics.jsonl"), "-o", "-")
	if !strings.HasPrefix(r.stdout, "<!DOCTYPE html>") || !strings.Contains(r.stdout, "Hone run r1") {
		t.Errorf("stdout page starts %.60q", r.stdout)
	}
}

// --trajectories reads its inputs by the one input rule, URLs included
// (README, "The binaries"): a folder named by a file:// URL is drawn as the
// same folder named by its path, each file at the step that trained on it.
// It used to resolve the URL and then stat it as a local path.
func TestReportTrajectoriesURL(t *testing.T) {
	dir := t.TempDir()
	run, _, glob := writeRunFolder(t, dir, 4)
	folder, err := filepath.Abs(filepath.Dir(glob))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.html")
	mustRun(t, nil, "report", run, "--trajectories", "file://"+filepath.ToSlash(folder)+"/", "-o", out)
	_, d := readPage(t, out)
	for _, c := range d.Charts {
		if c.ID == "traj-reward" {
			if x := c.Lines[0].X; !slices.Equal(x, []float64{1, 2, 3, 4}) || !strings.Contains(c.Lines[0].Note[0], "trained at step 1") {
				t.Errorf("trajectory reward at %v, notes %q; want the steps that trained on each file", x, c.Lines[0].Note)
			}
			return
		}
	}
	t.Fatalf("no trajectory chart among %q", chartIDs(d))
}

// Two runs on one page, one line each; runs that share a folder name are
// told apart by their path.
func TestReportOverlaysRuns(t *testing.T) {
	dir := t.TempDir()
	a, _, globA := writeNamedRun(t, dir, "lr-a", 6, 1e-5)
	b, _, globB := writeNamedRun(t, dir, "lr-b", 8, 3e-5)
	out := filepath.Join(t.TempDir(), "cmp.html")
	mustRun(t, nil, "report", a, b, "--trajectories", globA, "--trajectories", globB, "-o", out)
	page, d := readPage(t, out)
	if len(d.Runs) != 2 || d.Runs[0].Name != "lr-a" || d.Runs[1].Name != "lr-b" {
		t.Fatalf("runs %+v", d.Runs)
	}
	for _, c := range d.Charts {
		if c.ID == "loss" || c.ID == "traj-reward" {
			if len(c.Lines) != 2 || c.Lines[0].Run != 0 || c.Lines[1].Run != 1 || len(c.Lines[1].X) != 8 {
				t.Errorf("%s: %d lines", c.ID, len(c.Lines))
			}
		}
	}
	for _, frag := range []string{"<title>Hone run lr-a, lr-b</title>", `<tr class="diff"><th>lr</th><td>1e-05</td><td>3e-05</td></tr>`,
		`<tr id="folded-lr"><th>Learning rate</th><td>lr-a: 1e-05; lr-b: 3e-05</td></tr>`} {
		if !strings.Contains(page, frag) {
			t.Errorf("page lacks %q", frag)
		}
	}

	other := t.TempDir()
	c, _, _ := writeNamedRun(t, other, "lr-a", 3, 1e-5)
	mustRun(t, nil, "report", a, c, "-o", out)
	_, d = readPage(t, out)
	if len(d.Runs) != 2 || d.Runs[0].Name != filepath.ToSlash(a) || d.Runs[1].Name != filepath.ToSlash(c) {
		t.Errorf("runs of one name: %+v", d.Runs)
	}
	if r := run(t, nil, "report", a, b, "--run", "x", "-o", out); r.code != 2 || !strings.Contains(r.stderr, "--run names the run of one RUN_DIR") {
		t.Errorf("--run with two runs: exit %d, stderr %q", r.code, r.stderr)
	}
}

// The eval files the demo writes, and jq's default pretty-printed output
// of the same, are read by --eval (the demo's used to fail with
// ":1: unexpected EOF"); globs expand.
func TestReportEvalFiles(t *testing.T) {
	dir := t.TempDir()
	runDir, _, _ := writeRunFolder(t, dir, 4)
	evalDir := filepath.Join(dir, "eval")
	if err := os.MkdirAll(evalDir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"rl-T1.json": "{\n  \"label\": \"rl T=1\",\n  \"step\": 4,\n  \"run\": \"r1\",\n  \"model\": \"rl\",\n  \"temperature\": 1,\n  \"episodes\": 200,\n  \"success\": 0.73\n}\n",
		"rl-T0.json": `{"label":"rl T=0","step":4,"run":"r1","model":"rl","temperature":0,"episodes":200,"success":0.925}` + "\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(evalDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "r.html")
	mustRun(t, nil, "report", runDir, "--eval", filepath.Join(evalDir, "*.json"), "-o", out)
	page, d := readPage(t, out)
	if !slices.Contains(chartIDs(d), "eval-success") || slices.Contains(chartIDs(d), "eval-temperature") {
		t.Errorf("charts %q: want eval-success and no chart of the temperature", chartIDs(d))
	}
	for _, frag := range []string{"<th>rl T=0</th><td>4</td><td>200</td><td>rl</td><td>0</td><td>0.925</td>", "<th>rl T=1</th>"} {
		if !strings.Contains(html.UnescapeString(page), html.UnescapeString(frag)) {
			t.Errorf("page lacks %q", frag)
		}
	}
	// The same folder named by a file:// URL (the input rule's URLs): the
	// same table. It used to resolve the URL, then open it as a path.
	abs, err := filepath.Abs(evalDir)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, nil, "report", runDir, "--eval", "file://"+filepath.ToSlash(abs)+"/", "-o", out)
	if page, _ := readPage(t, out); !strings.Contains(html.UnescapeString(page), "<th>rl T=1</th>") {
		t.Errorf("--eval file://%s/: the page lacks the eval table", abs)
	}
	r := run(t, nil, "report", runDir, "--eval", filepath.Join(evalDir, "*.jsonl"), "-o", out)
	if r.code != 2 || !strings.Contains(r.stderr, "matches no file") {
		t.Errorf("a glob matching nothing: exit %d, stderr %q", r.code, r.stderr)
	}
	// What the demo wrote before it had a label: exit 2, saying so.
	bad := filepath.Join(evalDir, "old.json")
	if err := os.WriteFile(bad, []byte("{\n  \"model\": \"rl\",\n  \"success\": 0.73\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "report", runDir, "--eval", bad, "-o", out)
	if r.code != 2 || !strings.Contains(r.stderr, bad+`:1: missing string "label"`) {
		t.Errorf("eval without a label: exit %d, stderr %q", r.code, r.stderr)
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
	// A run folder no step was trained in yet (a --watch-dir call that
	// found nothing new leaves its lock only) says so, naming the file
	// once.
	fresh := filepath.Join(dir, "fresh")
	if err := os.MkdirAll(fresh, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(fresh, "lock"), nil, 0o644)
	r = run(t, nil, "report", fresh, "-o", out)
	missing := filepath.Join(fresh, "metrics.jsonl")
	if r.code != 2 || strings.Count(r.stderr, missing) != 1 || !strings.Contains(r.stderr, "no step has been trained") {
		t.Errorf("run folder without steps: exit %d, stderr %q; want 2, %s named once, and why", r.code, r.stderr, missing)
	}
	// A broken train_config.json is named.
	if err := os.WriteFile(metrics, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(runDir, runfolder.StepName(3), "train_config.json")
	if err := os.WriteFile(cfg, []byte(`{"lr":`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "report", runDir, "-o", out)
	if r.code != 2 || !strings.Contains(r.stderr, cfg+": unexpected EOF") {
		t.Errorf("broken train_config.json: exit %d, stderr %q", r.code, r.stderr)
	}
}

// The summary's best step by --best-metric is the one hone-train picks,
// among the steps it saved: a step --save-every left unsaved, whose row
// metrics.jsonl still has, is never best (hone-serve cannot serve it as
// run@best). The report named the unsaved step with the highest value.
func TestReportBestMetricAmongSavedSteps(t *testing.T) {
	run := filepath.Join(t.TempDir(), "adapters", "rl")
	ck := &checkpoint.Run{Dir: run}
	// --save-every 2 over 4 steps: step folders 2 and 4, rows 1 to 4, the
	// highest reward_mean at unsaved step 3.
	rewards := []float64{0.1, 0.4, 0.9, 0.5}
	var rows strings.Builder
	for i, r := range rewards {
		s := i + 1
		row := map[string]float64{"step": float64(s), "reward_mean": r, "loss": 1 / float64(s)}
		line, _ := json.Marshal(row)
		rows.Write(line)
		rows.WriteByte('\n')
		if s%2 != 0 {
			continue
		}
		if err := os.MkdirAll(ck.StepDir(s), 0o755); err != nil {
			t.Fatal(err)
		}
		st, _ := json.Marshal(checkpoint.State{Step: s, Metrics: row})
		for name, b := range map[string][]byte{
			checkpoint.StateName:  st,
			checkpoint.ConfigName: []byte(`{"run":"rl","best_metric":"reward_mean","best_mode":"max"}`),
		} {
			if err := os.WriteFile(filepath.Join(ck.StepDir(s), name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(run, runfolder.MetricsName), []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runfolder.WritePointer(run, runfolder.LatestName, 4); err != nil {
		t.Fatal(err)
	}
	// What hone-train does after each save.
	if err := ck.Prune(0, "reward_mean", true); err != nil {
		t.Fatal(err)
	}
	best, ok, err := ck.Best()
	if err != nil || !ok || best != 4 {
		t.Fatalf("hone-train's best: %d %v %v, want 4", best, ok, err)
	}
	r := mustRun(t, nil, "report", run, "-o", "-")
	want := "<td>4 (reward_mean 0.5)</td>"
	if !strings.Contains(r.stdout, want) {
		i := strings.Index(r.stdout, "best step by --best-metric")
		t.Fatalf("page lacks %q; its best row: %.200s", want, r.stdout[max(i, 0):])
	}
}
