package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestFormulaReadsGroupMetrics: a group's own metrics (group_metrics in
// the file: ART's TrajectoryGroup(metrics=…), a proxied group's close)
// were out of a formula's reach: group_metrics["difficulty"] failed to
// compile, and no other name read them. A formula now reads them as
// group_metrics["name"] (or group_metrics.name), as it reads a row's as
// metrics["name"]: missing and unguarded, the row fails naming the
// group's metrics; guarded and on no row, the run warns with the
// closest name.
func TestFormulaReadsGroupMetrics(t *testing.T) {
	dir := t.TempDir()
	in := oneGroupEdited(t, dir, "g.parquet", func(gs []trajectory.Group) {
		gs[0].Metrics = map[string]float64{"difficulty": 3}
	})
	out := filepath.Join(dir, "out.parquet")
	for _, src := range []string{`win * group_metrics["difficulty"] + 1`, `win * group_metrics.difficulty + 1`, `win * (group_metrics?.difficulty ?? 0) + 1`} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", "f=formula:"+src, in)
		if r.code != 0 {
			t.Fatalf("%s: exit %d:\n%s", src, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "on no row") {
			t.Errorf("%s: warned of a name the group has:\n%s", src, r.stderr)
		}
		gs := readBack(t, out)
		if len(gs) != 1 || gs[0].Metrics["difficulty"] != 3 {
			t.Fatalf("%s: group metrics not kept: %+v", src, gs)
		}
		for _, tr := range gs[0].Trajectories {
			if v, _ := component(tr, "f"); v != tr.Metrics["win"]*3+1 {
				t.Errorf("%s: %s: f = %v, want %v", src, tr.ID, v, tr.Metrics["win"]*3+1)
			}
		}
	}
	r := runBin(t, nil, nil, "-o", out, "--scorer", `f=formula:win + group_metrics["difficult"]`, in)
	if r.code == 0 || !strings.Contains(r.stderr, `no group metric named "difficult" (has group metrics difficulty; metrics illegal, win`) ||
		!strings.Contains(r.stderr, `group_metrics["difficult"] ?? 0`) {
		t.Errorf("a missing group metric: exit %d, want a failure naming it and the group's metrics:\n%s", r.code, r.stderr)
	}
	r = runBin(t, nil, nil, "-o", out, "--scorer", `f=formula:win + (group_metrics["difficult"] ?? 0)`, in)
	if r.code != 0 || !strings.Contains(r.stderr, `name="group_metrics[\"difficult\"]"`) || !strings.Contains(r.stderr, "closest=difficulty") ||
		!strings.Contains(r.stderr, "group metrics difficulty") {
		t.Errorf("a guarded group metric on no row: exit %d, want 0 and a warning naming the closest:\n%s", r.code, r.stderr)
	}
	// A bare name is the row's metric or component, never the group's.
	r = runBin(t, nil, nil, "-o", out, "--scorer", `f=formula:difficulty`, in)
	if r.code == 0 || !strings.Contains(r.stderr, `no metric or component named "difficulty"`) {
		t.Errorf("a bare group metric's name: exit %d, want a failure:\n%s", r.code, r.stderr)
	}
}
