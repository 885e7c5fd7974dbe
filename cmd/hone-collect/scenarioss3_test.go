package main

import (
	"strings"
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

// TestScenariosObjectHidesEndpointPassword: the messages naming a
// --scenarios object (a split none of its scenarios has, fewer
// scenarios than --groups) mask its endpoint's password. They printed
// the URL as given, password and all, into the run's log.
func TestScenariosObjectHidesEndpointPassword(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	first := s3.URL("hone", "runs/first.parquet")
	if r := collectBin(t, "--env", "guess", "--groups", "2", "-G", "1", "--policy", "scripted:bisect", "-o", first); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	const secret = "PWSECRET77"
	scs := strings.Replace(first, "endpoint=http://", "endpoint=http://me:"+secret+"@", 1)
	out := t.TempDir() + "/again.parquet"
	for _, tc := range []struct {
		flag, value, want string
		code              int
	}{
		{"--split", "val", `is of split "val"`, 2},
		{"--groups", "5", "fewer scenarios than --groups", 0},
	} {
		r := collectBin(t, "--scenarios", scs, tc.flag, tc.value, "-G", "1", "--policy", "scripted:bisect", "-o", out)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "s3://hone/runs/first.parquet") {
			t.Fatalf("%s %s: exit %d, want %d saying %q and naming the file: %s", tc.flag, tc.value, r.code, tc.code, tc.want, r.stderr)
		}
		if strings.Contains(r.stderr, secret) {
			t.Errorf("%s %s: the endpoint's password is printed: %s", tc.flag, tc.value, r.stderr)
		}
	}
}
