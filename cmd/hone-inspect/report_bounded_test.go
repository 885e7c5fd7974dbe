package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// writeLongRun writes run r1 with steps steps of metrics and one
// trajectory file whose group k (k = 1..steps) was sampled by r1@k: each
// step has a rollout to show. Every episode failed with errText and its
// reward component explains itself with explText.
func writeLongRun(t *testing.T, steps int, errText, explText string) (run, traj string) {
	t.Helper()
	dir := t.TempDir()
	run = filepath.Join(dir, "adapters", "r1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	var metrics strings.Builder
	var groups []trajectory.Group
	for s := 1; s <= steps; s++ {
		fmt.Fprintf(&metrics, "{\"step\":%d,\"loss\":%g}\n", s, 1/float64(s))
		g := trajectory.Group{ID: fmt.Sprintf("g%d", s)}
		for k := 0; k < 2; k++ {
			r := float64(k)
			g.Trajectories = append(g.Trajectories, trajectory.Trajectory{Run: "r1", Step: int64(s), Adapter: fmt.Sprintf("r1@%d", s), GroupID: g.ID,
				ID: fmt.Sprintf("g%d-%d", s, k), Env: "demo", Reward: &r, Error: errText,
				RewardComponents: []trajectory.RewardComponent{{Name: "judge", Value: r, Explanation: explText}},
				Messages:         []trajectory.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "a"}}})
		}
		groups = append(groups, g)
	}
	if err := os.WriteFile(filepath.Join(run, "metrics.jsonl"), []byte(metrics.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	traj = filepath.Join(dir, "r1.parquet")
	if err := trajectory.WriteFile(context.Background(), traj, groups, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	return run, traj
}

// An episode's error and its reward components' explanations are cut like
// its messages: a traceback or a judge's essay of a megabyte used to go
// into the page whole, twice a step (best and worst episode).
func TestReportCutsLongErrorsAndExplanations(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	run, traj := writeLongRun(t, 3, "E"+long, "J"+long)
	out := filepath.Join(t.TempDir(), "r.html")
	mustRun(t, nil, "report", run, "--trajectories", traj, "-o", out)
	page, _ := readPage(t, out)
	if len(page) > 1<<20 {
		t.Errorf("page of 3 short steps is %d bytes", len(page))
	}
	for _, frag := range []string{"error: E" + strings.Repeat("x", 3999) + " … (1044577 more characters)", `title="J` + strings.Repeat("x", 3999) + ` … (1044577 more characters)"`} {
		if !strings.Contains(page, frag) {
			t.Errorf("page lacks the cut text %.20q…%q", frag, frag[len(frag)-30:])
		}
	}
}

// A turn's tool calls are bounded like its messages: a turn of a thousand
// parallel calls used to go into the page whole, each call's arguments up
// to 4000 characters, twice a step.
func TestReportBoundsToolCalls(t *testing.T) {
	run, traj := writeLongRun(t, 1, "", "")
	var calls []trajectory.ToolCall
	for i := range 1000 {
		calls = append(calls, trajectory.ToolCall{ID: fmt.Sprintf("c%d", i), Type: "function", Name: "look", Arguments: `{"q":"` + strings.Repeat("y", 3000) + `"}`})
	}
	groups, err := trajectory.ReadFile(context.Background(), traj)
	if err != nil {
		t.Fatal(err)
	}
	for i := range groups[0].Trajectories {
		groups[0].Trajectories[i].Messages[1].ToolCalls = calls
	}
	if err := trajectory.WriteFile(context.Background(), traj, groups, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.html")
	mustRun(t, nil, "report", run, "--trajectories", traj, "-o", out)
	page, _ := readPage(t, out)
	if len(page) > 1<<20 {
		t.Errorf("page of one step is %d bytes", len(page))
	}
	if n := strings.Count(page, `<div class="toolcall">`); n != 2*20 {
		t.Errorf("%d tool calls shown, want 20 of each episode's turn", n)
	}
	if !strings.Contains(page, `<div class="omitted">… 980 more tool calls left out …</div>`) {
		t.Errorf("the page does not say that 980 tool calls are left out")
	}
}
