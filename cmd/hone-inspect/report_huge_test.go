package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/trajectory"
)

// Rewards and metrics near the float64 limit (a scorer's sentinel, a
// metric in bytes) are drawn, not fatal: their sum overflowed to +Inf,
// which JSON has no number for, and report failed with "chart data: json:
// unsupported value: +Inf", writing nothing.
func TestReportHugeRewardsAndMetrics(t *testing.T) {
	dir := t.TempDir()
	run, _, _ := writeRunFolder(t, dir, 2)
	var grp trajectory.Group
	grp.ID = "g"
	for i, r := range []float64{1e308, 1e308, -1e308, 1e308} {
		r := r
		grp.Trajectories = append(grp.Trajectories, trajectory.Trajectory{ID: string(rune('a' + i)), GroupID: "g", Env: "demo", Reward: &r,
			Metrics:  map[string]float64{"bytes": 1.5e308},
			Messages: []trajectory.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}}})
	}
	traj := filepath.Join(dir, "huge.parquet")
	if err := trajectory.WriteFile(context.Background(), traj, []trajectory.Group{grp}, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	mustRun(t, nil, "report", run, "--trajectories", traj, "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="hone-data">(.*?)</script>`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no chart data")
	}
	var d struct {
		Charts []struct {
			ID    string `json:"id"`
			Lines []struct {
				Y      []float64 `json:"y"`
				Lo, Hi []float64
			} `json:"lines"`
		} `json:"charts"`
	}
	if err := json.Unmarshal(m[1], &d); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"traj-reward": 0.5e308, "env-bytes": 1.5e308}
	for _, c := range d.Charts {
		if w, ok := want[c.ID]; ok {
			delete(want, c.ID)
			if y := c.Lines[0].Y[0]; y < w*(1-1e-12) || y > w*(1+1e-12) {
				t.Errorf("%s: mean %v, want %v", c.ID, y, w)
			}
		}
	}
	for id := range want {
		t.Errorf("no chart %s", id)
	}
}

// A step past 2^53 (1e300 in a hand-edited metrics.jsonl or eval file) is
// refused, naming the file and line: float64 cannot tell such steps
// apart, so the chart's x axis merged them, and its padding overflowed
// near 1.8e308.
func TestReportRefusesHugeSteps(t *testing.T) {
	for _, file := range []string{"metrics", "eval"} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			runDir, eval, _ := writeRunFolder(t, dir, 2)
			target, row, line := filepath.Join(runDir, "metrics.jsonl"), `{"step":1e300,"loss":1}`, "metrics.jsonl:3:"
			if file == "eval" {
				target, row, line = eval, `{"label":"x","step":1e300,"accuracy":1}`, "eval.jsonl:5:"
			}
			f, err := os.OpenFile(target, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(row + "\n"); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "report.html")
			r := run(t, nil, "report", runDir, "--eval", eval, "-o", out)
			if r.code == 0 || !strings.Contains(r.stderr, line) || !strings.Contains(r.stderr, "1e300") {
				t.Errorf("report with step 1e300 in %s: exit %d, stderr %q; want a refusal naming %s", file, r.code, r.stderr, line)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("report written despite the bad step")
			}
		})
	}
}

// Every id in the page is unique and has no whitespace, so a link to a
// chart goes to that chart: metrics "a b" and "a_b" in an eval file both
// got the id chart-eval-a_b, and in metrics.jsonl "a b" got "chart-a b",
// which no URL fragment names.
func TestReportChartIDsUnique(t *testing.T) {
	dir := t.TempDir()
	runDir, _, _ := writeRunFolder(t, dir, 2)
	var m strings.Builder
	for i := 1; i <= 2; i++ {
		fmt.Fprintf(&m, `{"step":%d,"a b":%d,"a_b":%d,"eval-a_b":%d}`+"\n", i, i, 2*i, 3*i)
	}
	if err := os.WriteFile(filepath.Join(runDir, "metrics.jsonl"), []byte(m.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	eval := filepath.Join(dir, "e.jsonl")
	if err := os.WriteFile(eval, []byte(`{"label":"x","step":1,"a b":0.5,"a_b":0.25}
{"label":"x","step":2,"a b":0.75,"a_b":0.5}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	mustRun(t, nil, "report", runDir, "--eval", eval, "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	charts := 0
	for _, m := range regexp.MustCompile(`\sid="([^"]*)"`).FindAllSubmatch(b, -1) {
		id := string(m[1])
		if seen[id] || strings.ContainsAny(id, " \t\n") {
			t.Errorf("id %q repeated or with whitespace", id)
		}
		seen[id] = true
		if strings.HasPrefix(id, "chart-") {
			charts++
		}
	}
	// A metric whose name is a safe id keeps it, so links to it hold.
	for _, id := range []string{"chart-a_b", "chart-eval-a_b"} {
		if !bytes.Contains(b, []byte(`id="`+id+`" data-i=`)) {
			t.Errorf("no chart with id %s", id)
		}
	}
	// Metrics a b, a_b, eval-a_b; evals of a b and a_b.
	if charts < 5 {
		t.Errorf("%d charts, want the 5 of a b, a_b and eval-a_b and the 2 evals", charts)
	}
}

// Steps past 99999 are written in full: the summary said "step 1e+05 to
// 1.2346e+05" and "best step 1.2346e+05", rounded to five digits, so
// that neighbouring steps read alike.
func TestReportLargeStepsInFull(t *testing.T) {
	dir := t.TempDir()
	runDir, _, _ := writeRunFolder(t, dir, 2)
	metrics := filepath.Join(runDir, "metrics.jsonl")
	rows := `{"step":100000,"reward_mean":0.1,"loss":1}` + "\n" + `{"step":123456,"reward_mean":0.5,"loss":0.5}` + "\n"
	if err := os.WriteFile(metrics, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	mustRun(t, nil, "report", runDir, "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(step 100000 to 123456)", "123456 (reward mean 0.5)"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// A training time past time.Duration's range (292 years; here a
// hand-edited "seconds": 1e12) is written as seconds: the conversion
// overflowed, and the summary said "-2562047h47m16.854775808s".
func TestReportHugeSeconds(t *testing.T) {
	dir := t.TempDir()
	runDir, _, _ := writeRunFolder(t, dir, 2)
	rows := `{"step":1,"loss":1,"seconds":1e12}` + "\n" + `{"step":2,"loss":0.5,"seconds":1e12}` + "\n"
	if err := os.WriteFile(filepath.Join(runDir, "metrics.jsonl"), []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	mustRun(t, nil, "report", runDir, "-o", out)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte(html.UnescapeString(string(raw)))
	if !bytes.Contains(b, []byte("2e+12s")) || bytes.Contains(b, []byte("-2562047h")) {
		t.Errorf("training time of 2e12 seconds: report lacks \"2e+12s\": %s", regexp.MustCompile(`training time \(sum[^\n]*`).Find(b))
	}
}

// --trajectories <(cat FILE) places FILE's episodes at the step whose
// manifest lists it, as FILE named directly is: the pipe was hashed by
// reading it anew after the input set had read it to its end, so its
// checksum was that of nothing, and the episodes were drawn at step 0.
func TestReportTrajectoriesFromPipe(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("no bash for <(…): %v", err)
	}
	dir := t.TempDir()
	runDir, _, _ := writeRunFolder(t, dir, 2)
	round := filepath.Join(dir, "runs", "r1-step-002.scored.parquet")
	out := filepath.Join(dir, "report.html")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", `"$0" report "$1" --trajectories <(cat "$2") -o "$3"`, binary, runDir, round, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("report --trajectories <(cat %s): %v\n%s", round, err, b)
	}
	_, d := readPage(t, out)
	for _, c := range d.Charts {
		if c.ID == "traj-reward" {
			if l := c.Lines[0]; len(l.X) != 1 || l.X[0] != 2 || !strings.Contains(l.Note[0], "trained at step 2") {
				t.Errorf("episodes of a pipe drawn at %v, notes %q; want step 2, which trained on them", l.X, l.Note)
			}
			return
		}
	}
	t.Errorf("no chart traj-reward")
}
