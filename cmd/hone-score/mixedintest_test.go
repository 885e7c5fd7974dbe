package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestMixedNameReadOnlyBehindComponentsTestNotWarned: a formula that
// reads a bare name only where an in test showed it a component
// ("judge" in components ? judge : metrics.judge) reads the component on
// every row it reads it at all, and the metric by its lookup elsewhere,
// as the warning asks; it was still warned of as "a component on some
// rows and a metric on others", from the rows' contents alone. A bare
// read outside such a test (judge ?? 0) is still warned of.
func TestMixedNameReadOnlyBehindComponentsTestNotWarned(t *testing.T) {
	dir := t.TempDir()
	gs := readBack(t, scenario(t, dir, "in.parquet", 0, 2, 2))
	for i := range gs[0].Trajectories {
		tr := &gs[0].Trajectories[i]
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
	for src, wantWarn := range map[string]bool{
		`"judge" in components ? judge : metrics.judge`:                  false,
		`"judge" not in components ? metrics.judge : judge`:              false,
		`"judge" in components && judge > 0 ? 1 : 0`:                     false,
		`("judge" in components ? judge : metrics.judge) + (judge ?? 0)`: true,
	} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", "f=formula:"+src, mixed)
		if r.code != 0 {
			t.Errorf("%s: exit %d:\n%s", src, r.code, r.stderr)
			continue
		}
		if strings.Contains(r.stderr, warn) != wantWarn {
			t.Errorf("%s: warned %v, want %v:\n%s", src, !wantWarn, wantWarn, r.stderr)
		}
	}
}
