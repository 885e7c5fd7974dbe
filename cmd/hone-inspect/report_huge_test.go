package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

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
