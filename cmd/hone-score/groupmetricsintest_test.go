package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestGroupMetricInTestedOnNoRowWarns: a misspelt group metric that an
// in test leads to ("difficult" in group_metrics ? group_metrics.difficult
// : win) made the test false on every row without a word, where the same
// formula over metrics warned: the in test marked the key tested for the
// row's maps only. It now warns as for metrics, with the closest name.
func TestGroupMetricInTestedOnNoRowWarns(t *testing.T) {
	dir := t.TempDir()
	in := oneGroupEdited(t, dir, "g.parquet", func(gs []trajectory.Group) {
		gs[0].Metrics = map[string]float64{"difficulty": 3}
	})
	out := filepath.Join(dir, "out.parquet")
	for _, src := range []string{
		`"difficult" in group_metrics ? group_metrics["difficult"] : win`,
		`"difficult" in keys(group_metrics) ? group_metrics.difficult * win : win`,
		`"difficult" in group_metrics ? 1 : 0`,
	} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", "f=formula:"+src, in)
		if r.code != 0 {
			t.Errorf("%s: exit %d, want 0:\n%s", src, r.code, r.stderr)
			continue
		}
		var lines []string
		for _, line := range strings.Split(r.stderr, "\n") {
			if strings.Contains(line, "on no row") {
				lines = append(lines, line)
			}
		}
		if len(lines) != 1 || !strings.Contains(lines[0], `name="group_metrics[\"difficult\"]"`) ||
			!strings.Contains(lines[0], "test found it on no row") || !strings.Contains(lines[0], "closest=difficulty") {
			t.Errorf("%s: want one warning that the test found group_metrics[\"difficult\"] on no row, closest difficulty:\n%s", src, r.stderr)
		}
	}
}

// TestBareGroupMetricNameHint: a bare name that is one of the group's
// metrics, not the row's, failed the row with "where a row may lack it,
// write metrics["difficulty"] ?? 0": advice that reads 0 on every row;
// so did metrics["difficulty"]. The error now points at
// group_metrics["difficulty"].
func TestBareGroupMetricNameHint(t *testing.T) {
	dir := t.TempDir()
	in := oneGroupEdited(t, dir, "g.parquet", func(gs []trajectory.Group) {
		gs[0].Metrics = map[string]float64{"difficulty": 3}
	})
	for src, says := range map[string]string{
		`win * difficulty`:            `no metric or component named "difficulty"`,
		`win * metrics["difficulty"]`: `no metric named "difficulty"`,
	} {
		r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "f=formula:"+src, in)
		if r.code == 0 || !strings.Contains(r.stderr, says) ||
			!strings.Contains(r.stderr, `group_metrics["difficulty"]`) || strings.Contains(r.stderr, ` metrics["difficulty"] ?? 0`) {
			t.Errorf("%s: exit %d, want a failure pointing at group_metrics[\"difficulty\"]:\n%s", src, r.code, r.stderr)
		}
	}
}

// TestGuardedBareGroupMetricNameWarnsOfIt: a guarded bare name that is
// one of the group's metrics ((difficulty ?? 1) * win) read nil on every
// row, and the warning named no closest name, the row's names being far
// from it (so too metrics["difficulty"] ?? 1). It now names
// group_metrics["difficulty"] as the closest.
func TestGuardedBareGroupMetricNameWarnsOfIt(t *testing.T) {
	dir := t.TempDir()
	in := oneGroupEdited(t, dir, "g.parquet", func(gs []trajectory.Group) {
		gs[0].Metrics = map[string]float64{"difficulty": 3}
	})
	for src, name := range map[string]string{`(difficulty ?? 1) * win`: `name=difficulty`, `(metrics.difficulty ?? 1) * win`: `name="metrics[\"difficulty\"]"`} {
		r := runBin(t, nil, nil, "-o", filepath.Join(dir, "out.parquet"), "--scorer", "f=formula:"+src, in)
		if r.code != 0 || !strings.Contains(r.stderr, name) || !strings.Contains(r.stderr, `closest="group_metrics[\"difficulty\"]"`) {
			t.Errorf("%s: exit %d, want 0 and a warning naming group_metrics[\"difficulty\"] as the closest:\n%s", src, r.code, r.stderr)
		}
	}
}

// TestInTestMarksOnlyItsMap: an in test marked its key tested in every
// map, whatever it tested against: "difficult" in components ?
// group_metrics.difficult : 0 warned that "the test found"
// group_metrics["difficult"] on no row, a test the formula never makes
// (so too a test against a list of names). Only the map tested is
// watched now; a misspelt group metric read behind an in test of
// metrics, guarded, is still warned of as a name it reads.
func TestInTestMarksOnlyItsMap(t *testing.T) {
	dir := t.TempDir()
	in := oneGroupEdited(t, dir, "g.parquet", func(gs []trajectory.Group) {
		gs[0].Metrics = map[string]float64{"difficulty": 3}
		for i := range gs[0].Trajectories {
			gs[0].Trajectories[i].Metrics["difficult"] = 1
		}
	})
	out := filepath.Join(dir, "out.parquet")
	for src, want := range map[string]string{
		`"difficult" in components ? group_metrics.difficult : 0`: `name="components[\"difficult\"]"`,
		`"difficult" in ["a"] ? group_metrics.difficult : 0`:      "",
	} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", "f=formula:"+src, in)
		if r.code != 0 || strings.Contains(r.stderr, `group_metrics[\"difficult\"]`) || want != "" && !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, want 0 and no warning of group_metrics[\"difficult\"], which it never tests for:\n%s", src, r.code, r.stderr)
		}
	}
	src := `"difficult" in metrics ? (group_metrics.difficult ?? 0) : 0`
	r := runBin(t, nil, nil, "-o", out, "--scorer", "f=formula:"+src, in)
	if r.code != 0 || !strings.Contains(r.stderr, "a name it reads was on no row") ||
		!strings.Contains(r.stderr, `name="group_metrics[\"difficult\"]"`) || !strings.Contains(r.stderr, "closest=difficulty") {
		t.Errorf("%s: exit %d, want 0 and a warning that group_metrics[\"difficult\"] was on no row, closest difficulty:\n%s", src, r.code, r.stderr)
	}
}
