package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// stats groups rows by what served them, the adapter then the step: it
// grouped by the step number alone, so a warm-up's step 12 ("warmup3@12")
// was listed as "step 12" after rl's step 1, as if it came later, and two
// runs' step 1 were added up as one. by_step stays as it was for readers
// of the JSON; by_adapter tells the runs apart.
func TestStatsGroupsByServedAdapter(t *testing.T) {
	served := []struct {
		adapter string
		step    int64
		reward  float64
	}{
		{"warmup3@12", 12, 0.75}, {"rl@1", 1, 0.5}, {"warmup3@1", 1, -1}, {"rl@10", 10, 1},
		{"rl@2", 2, 0.25}, {"tiny", 0, 0}, {"", 0, 0.125},
	}
	var groups []trajectory.Group
	for i, s := range served {
		id := fmt.Sprintf("t%d", i)
		tr := traj(id, "math", s.step, f(s.reward), 2)
		tr.Adapter = s.adapter
		groups = append(groups, trajectory.Group{ID: "g" + id, Trajectories: []trajectory.Trajectory{tr}})
	}
	path := filepath.Join(t.TempDir(), "served.parquet")
	if err := trajectory.WriteFile(context.Background(), path, groups, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}

	r := mustRun(t, nil, "stats", "--json", path)
	// Decoded as any reader of the JSON would, by its keys.
	var s struct {
		ByAdapter []struct {
			Adapter      string `json:"adapter"`
			Step         int64  `json:"step"`
			Groups       int64  `json:"groups"`
			Trajectories int64  `json:"trajectories"`
			Reward       struct {
				Mean float64 `json:"mean"`
			} `json:"reward"`
		} `json:"by_adapter"`
		ByStep []struct {
			Step         int64 `json:"step"`
			Trajectories int64 `json:"trajectories"`
		} `json:"by_step"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, r.stdout)
	}
	// Sorted by run, then by step as a number (rl@2 before rl@10); the
	// base model's served name and "" (nothing named a model) apart.
	want := []string{`"" 0: 0.125`, `"rl@1" 1: 0.5`, `"rl@2" 2: 0.25`, `"rl@10" 10: 1`, `"tiny" 0: 0`, `"warmup3@1" 1: -1`, `"warmup3@12" 12: 0.75`}
	var got []string
	for _, a := range s.ByAdapter {
		if a.Groups != 1 || a.Trajectories != 1 {
			t.Errorf("%s step %d: %d groups, %d trajectories, want 1", a.Adapter, a.Step, a.Groups, a.Trajectories)
		}
		got = append(got, fmt.Sprintf("%q %d: %g", a.Adapter, a.Step, a.Reward.Mean))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("by_adapter %v\nwant %v\n%s", got, want, r.stdout)
	}
	// by_step is what it was: one entry a step number, runs added up.
	var steps []string
	for _, st := range s.ByStep {
		steps = append(steps, fmt.Sprintf("%d:%d", st.Step, st.Trajectories))
	}
	if fmt.Sprint(steps) != "[0:2 1:2 2:1 10:1 12:1]" {
		t.Errorf("by_step %v, want [0:2 1:2 2:1 10:1 12:1]", steps)
	}

	r = mustRun(t, nil, "stats", path)
	var labels []string
	for _, l := range strings.Split(r.stdout, "\n") {
		l = strings.TrimLeft(l, " ") // the table is right-aligned
		if strings.HasPrefix(l, "model ") {
			labels = append(labels, l[:strings.Index(l, "  ")])
		}
		if strings.HasPrefix(l, "step ") {
			t.Errorf("table line %q names a step without what served it", l)
		}
	}
	wantLabels := []string{"model (none) step 0", "model rl@1", "model rl@2", "model rl@10", "model tiny step 0", "model warmup3@1", "model warmup3@12"}
	if fmt.Sprint(labels) != fmt.Sprint(wantLabels) {
		t.Errorf("table lines %q\nwant %q\n%s", labels, wantLabels, r.stdout)
	}
}
