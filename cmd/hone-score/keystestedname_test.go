package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/trajectory"
)

// TestBareNameAfterKeysTest: "judge" in keys(metrics) ? judge : win is
// the test "judge" in metrics ? judge : win makes, written with keys,
// which already marks judge tested, but the bare judge behind it was
// still read on every row: each row without the metric failed with "no
// metric or component named judge". Behind keys(metrics) or
// keys(components) the bare name is now read only where the test shows
// it, as behind the map itself.
func TestBareNameAfterKeysTest(t *testing.T) {
	dir := t.TempDir()
	gs := readBack(t, scenario(t, dir, "tmp.parquet", 0, 1, 2))
	gs[0].Trajectories[1].Metrics["judge"] = 0.5 // on one row only
	in := filepath.Join(dir, "in.parquet")
	if err := trajectory.WriteFile(context.Background(), in, gs, trajectory.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"metrics", "components"} {
		out := filepath.Join(dir, m+".parquet")
		r := runBin(t, nil, nil, "-o", out, "--scorer", `f=formula:"judge" in keys(`+m+`) ? judge : win + 10`, in)
		if r.code != 0 {
			t.Fatalf("keys(%s): exit %d:\n%s", m, r.code, r.stderr)
		}
		for _, tr := range readBack(t, out)[0].Trajectories {
			want := tr.Metrics["win"] + 10
			if j, ok := tr.Metrics["judge"]; ok && m == "metrics" {
				want = j
			}
			if v, _ := component(tr, "f"); v != want {
				t.Errorf("keys(%s): %s: f = %v, want %v", m, tr.ID, v, want)
			}
		}
	}
}
