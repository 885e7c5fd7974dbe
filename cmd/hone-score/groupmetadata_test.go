package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestFormulaReadsGroupMetadata: a group's own metadata (group_metadata
// in the file: ART's TrajectoryGroup(metadata=…), hone-collect's
// scenario_id, env, split and seed, a proxied group's close) was out of
// a formula's reach: group_metadata["split"] failed every row as a
// missing metric. A formula now reads it as group_metadata["key"] (or
// group_metadata.key), as it reads the row's as metadata["key"]: a
// missing key is nil, not an error; "k" in group_metadata tests it; a
// bare name is never a group metadata key.
func TestFormulaReadsGroupMetadata(t *testing.T) {
	dir := t.TempDir()
	in := oneGroupEdited(t, dir, "g.parquet", func(gs []trajectory.Group) {
		gs[0].Metadata = map[string]string{"split": "hard"}
	})
	out := filepath.Join(dir, "out.parquet")
	for _, c := range []struct {
		src  string
		want func(win float64) float64
	}{
		{`group_metadata["split"] == "hard" ? 2*win : win`, func(w float64) float64 { return 2 * w }},
		{`group_metadata.split == "hard" ? 2*win : win`, func(w float64) float64 { return 2 * w }},
		{`"split" in group_metadata ? win + 1 : win`, func(w float64) float64 { return w + 1 }},
		{`group_metadata["nope"] == nil ? win + 5 : win`, func(w float64) float64 { return w + 5 }},
		{`(group_metadata["nope"] ?? "easy") == "easy" ? win + 3 : win`, func(w float64) float64 { return w + 3 }},
		// The group's metadata is not the row's.
		{`metadata["split"] == "hard" ? 2*win : win`, func(w float64) float64 { return w }},
	} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", "f=formula:"+c.src, in)
		if r.code != 0 {
			t.Fatalf("%s: exit %d:\n%s", c.src, r.code, r.stderr)
		}
		gs := readBack(t, out)
		if len(gs) != 1 || gs[0].Metadata["split"] != "hard" {
			t.Fatalf("%s: group metadata not kept: %+v", c.src, gs)
		}
		for _, tr := range gs[0].Trajectories {
			if v, _ := component(tr, "f"); v != c.want(tr.Metrics["win"]) {
				t.Errorf("%s: %s: f = %v, want %v", c.src, tr.ID, v, c.want(tr.Metrics["win"]))
			}
		}
	}
	// A bare name is the row's metric or component, never a group
	// metadata key.
	r := runBin(t, nil, nil, "-o", out, "--scorer", `f=formula:split == "hard" ? 1 : 0`, in)
	if r.code == 0 || !strings.Contains(r.stderr, `no metric or component named "split"`) {
		t.Errorf("a bare group metadata key: exit %d, want a failure:\n%s", r.code, r.stderr)
	}
}

// TestBareGroupMetadataKeyHint: split == "hard", a bare name the group's
// metadata holds, failed advising metrics["split"] ?? 0, which is 0 on
// every row (split is no metric); the error now names the read that
// finds it, group_metadata["split"] (metadata["key"] for the row's own).
func TestBareGroupMetadataKeyHint(t *testing.T) {
	dir := t.TempDir()
	in := oneGroupEdited(t, dir, "g.parquet", func(gs []trajectory.Group) {
		gs[0].Metadata = map[string]string{"split": "hard"}
		for i := range gs[0].Trajectories {
			gs[0].Trajectories[i].Metadata = map[string]string{"tier": "gold"}
		}
	})
	out := filepath.Join(dir, "out.parquet")
	for src, want := range map[string]string{
		`split == "hard" ? 1 : 0`: `the group's metadata key "split" is group_metadata["split"]`,
		`tier == "gold" ? 1 : 0`:  `the row's metadata key "tier" is metadata["tier"]`,
	} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", "f=formula:"+src, in)
		if r.code != 2 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "?? 0") {
			t.Errorf("%s: exit %d, want 2 naming %s:\n%s", src, r.code, want, r.stderr)
		}
	}
}
