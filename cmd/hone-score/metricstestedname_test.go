package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestBareNameAfterMetricsTest: "judge" in metrics ? judge : win reads
// the bare judge only where the row has the metric, as "x" in
// components ? x : 0 reads x only where the component is, but the test
// of metrics guarded nothing: every row without judge failed with "no
// metric or component named judge". The bare name behind a metrics test
// is now read only where the test shows it, and a misspelt one is
// warned of once, as a name on no row.
func TestBareNameAfterMetricsTest(t *testing.T) {
	dir := t.TempDir()
	gs := readBack(t, scenario(t, dir, "tmp.parquet", 0, 1, 2))
	gs[0].Trajectories[1].Metrics["judge"] = 0.5 // on one row only
	in := filepath.Join(dir, "in.parquet")
	if err := trajectory.WriteFile(context.Background(), in, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.parquet")
	r := runBin(t, nil, nil, "-o", out, "--scorer", `f=formula:"judge" in metrics ? judge : win + 10`, in)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	for _, tr := range readBack(t, out)[0].Trajectories {
		want := tr.Metrics["win"] + 10
		if j, ok := tr.Metrics["judge"]; ok {
			want = j
		}
		if v, _ := component(tr, "f"); v != want {
			t.Errorf("%s: f = %v, want %v", tr.ID, v, want)
		}
	}
	r = runBin(t, nil, nil, "-o", out, "--scorer", `f=formula:"judeg" in metrics ? judeg : win`, in)
	if r.code != 0 || strings.Count(r.stderr, "level=WARN") != 1 || !strings.Contains(r.stderr, "name=judeg ") || !strings.Contains(r.stderr, "closest=judge") {
		t.Errorf("a misspelt name behind a metrics test: exit %d, want 0 and one warning naming judge:\n%s", r.code, r.stderr)
	}
}
