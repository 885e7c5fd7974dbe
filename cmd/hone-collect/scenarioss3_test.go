package main

import (
	"testing"

	"github.com/hone-rl/hone/internal/fakes3d"
)

// A trajectory Parquet file in an object store, named by its URL with the
// store's query at the end, replays its scenarios as a local one does.
func TestParquetScenariosFromObjectStore(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	first := s3.URL("hone", "runs/first.parquet")
	if r := collectBin(t, "--env", "guess", "--groups", "3", "-G", "1", "--policy", "scripted:bisect", "-o", first); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	out := t.TempDir() + "/again.parquet"
	r := collectBin(t, "--scenarios", first, "-G", "2", "--policy", "scripted:bisect", "-o", out)
	if r.code != 0 {
		t.Fatalf("replaying %s: exit %d: %s", first, r.code, r.stderr)
	}
	gs := read(t, out)
	if len(gs) != 3 {
		t.Fatalf("%d groups, want the 3 scenarios of the first run", len(gs))
	}
	for i, g := range gs {
		if g.Metadata["env"] != "guess" || len(g.Trajectories) != 2 {
			t.Errorf("group %d: env %q, %d trajectories; want guess, 2", i, g.Metadata["env"], len(g.Trajectories))
		}
	}
}
