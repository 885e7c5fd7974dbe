package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestUnseenNameHintKeepsPartOfIt: the warning of a guarded name no row
// had points at the rows' closest name as the likely intended one. For
// a one-letter name every other one-letter name was one edit away, so
// (metrics["k"] ?? 0) + win on rows with a metric n said closest=n, a
// misspelling that keeps nothing of the name. A name is hinted at now
// only when the edits leave part of it; judeg still points at judge.
func TestUnseenNameHintKeepsPartOfIt(t *testing.T) {
	dir := t.TempDir()
	gs := readBack(t, scenario(t, dir, "tmp.parquet", 0, 1, 2))
	for i := range gs[0].Trajectories {
		gs[0].Trajectories[i].Metrics["n"] = 1
		gs[0].Trajectories[i].Metrics["judge"] = 0.5
	}
	in := filepath.Join(dir, "in.parquet")
	if err := trajectory.WriteFile(context.Background(), in, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	for src, closest := range map[string]string{
		`(metrics["k"] ?? 0) + win`:     "",
		`(metrics["judeg"] ?? 0) + win`: "judge",
	} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", "formula:"+src, in)
		if r.code != 0 || strings.Count(r.stderr, "on no row") != 1 {
			t.Fatalf("%s: exit %d, want 0 and one warning:\n%s", src, r.code, r.stderr)
		}
		if got := strings.Contains(r.stderr, "closest="); got != (closest != "") || closest != "" && !strings.Contains(r.stderr, "closest="+closest+" ") {
			t.Errorf("%s: want closest %q:\n%s", src, closest, r.stderr)
		}
	}
}
