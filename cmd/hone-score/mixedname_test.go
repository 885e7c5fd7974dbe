package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestBareNameComponentOnSomeRowsMetricOnOthers: a file whose name
// "judge" is an imported component on some rows (an earlier chain's, or
// another tool's) and only a metric on others: a bare judge read the
// component on the first rows and the metric on the rest, two different
// things under one name, without a word. The values are as before (a
// component shadows a metric of its name), and the run now warns once,
// naming a row of each kind and the lookups that read one of them on
// every row; a name that is the same kind on every row, or a lookup,
// draws no warning.
func TestBareNameComponentOnSomeRowsMetricOnOthers(t *testing.T) {
	dir := t.TempDir()
	gs := readBack(t, scenario(t, dir, "in.parquet", 0, 2, 2))
	for i := range gs[0].Trajectories {
		tr := &gs[0].Trajectories[i]
		tr.Metrics["judge"] = 5
		tr.RewardComponents = append(tr.RewardComponents, trajectory.RewardComponent{Name: "judge", Value: 1})
	}
	for i := range gs[1].Trajectories {
		gs[1].Trajectories[i].Metrics["judge"] = 5
	}
	mixed := filepath.Join(dir, "mixed.parquet")
	if err := trajectory.WriteFile(t.Context(), mixed, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	const warn = "a component on some rows and a metric on others"
	r := runBin(t, nil, nil, "-o", out, "--scorer", "f=formula:judge", mixed)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	for _, g := range readBack(t, out) {
		want := 5.0
		if g.ID == "g0" {
			want = 1
		}
		for _, tr := range g.Trajectories {
			if v, _ := component(tr, "f"); v != want {
				t.Errorf("%s: f = %v, want %v", tr.ID, v, want)
			}
		}
	}
	if strings.Count(r.stderr, warn) != 1 || !strings.Contains(r.stderr, "name=judge") || !strings.Contains(r.stderr, "component_row=g0-0") ||
		!strings.Contains(r.stderr, "metric_row=g1-0") || !strings.Contains(r.stderr, `components[\"judge\"]`) {
		t.Errorf("want one warning naming judge and a row of each kind:\n%s", r.stderr)
	}
	for _, src := range []string{`metrics["judge"]`, `components["judge"] ?? 0`, `win`} {
		if r := runBin(t, nil, nil, "-o", out, "--scorer", "f=formula:"+src, mixed); r.code != 0 || strings.Contains(r.stderr, warn) {
			t.Errorf("%s: exit %d, want 0 and no warning:\n%s", src, r.code, r.stderr)
		}
	}
	// The same name a metric on every row: no warning.
	plain := oneGroupEdited(t, dir, "plain.parquet", func(gs []trajectory.Group) {
		for i := range gs[0].Trajectories {
			gs[0].Trajectories[i].Metrics["judge"] = 5
		}
	})
	if r := runBin(t, nil, nil, "-o", out, "--scorer", "f=formula:judge", plain); r.code != 0 || strings.Contains(r.stderr, warn) {
		t.Errorf("a metric on every row: exit %d, want 0 and no warning:\n%s", r.code, r.stderr)
	}
}
