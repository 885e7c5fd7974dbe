package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Two shards of a scoring run over two input files score disjoint whole
// groups, which together are the unsharded run's output.
func TestShards(t *testing.T) {
	dir := t.TempDir()
	a := scenario(t, dir, "a.parquet", 0, 3, 4)
	b := scenario(t, dir, "b.parquet", 3, 2, 3)
	scorers := []string{"--scorer", "env", "--scorer", "final=formula:env - 0.1*illegal"}
	whole := filepath.Join(dir, "whole.parquet")
	if r := runBin(t, nil, nil, append(append([]string{"-o", whole}, scorers...), a, b)...); r.code != 0 {
		t.Fatalf("unsharded: exit %d\n%s", r.code, r.stderr)
	}
	parts := filepath.Join(dir, "scored") + "/"
	if err := os.Mkdir(parts, 0o755); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for i, spec := range []string{"0/2", "1/2"} {
		r := runBin(t, []string{"JOB_COMPLETION_INDEX=1"}, nil, append(append([]string{"-o", filepath.Join(dir, "part"+spec[:1]+".parquet"), "--shard", spec}, scorers...), a, b)...)
		if r.code != 0 {
			t.Fatalf("shard %s: exit %d\n%s", spec, r.code, r.stderr)
		}
		gs := readBack(t, filepath.Join(dir, "part"+spec[:1]+".parquet"))
		if want := []int{3, 2}[i]; len(gs) != want {
			t.Errorf("shard %s scored %d groups, want %d", spec, len(gs), want)
		}
		for _, g := range gs {
			if _, dup := got[g.ID]; dup {
				t.Errorf("group %s in two shards", g.ID)
			}
			for _, tr := range g.Trajectories {
				got[tr.ID] = *tr.Reward
			}
			got[g.ID] = 0
		}
	}
	want := map[string]float64{}
	for _, g := range readBack(t, whole) {
		for _, tr := range g.Trajectories {
			want[tr.ID] = *tr.Reward
		}
		want[g.ID] = 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shards scored %v\nunsharded %v", got, want)
	}
	r := runBin(t, []string{"JOB_COMPLETION_INDEX=1"}, nil, append(append([]string{"-o", parts, "--shard", "auto/2"}, scorers...), a, b)...)
	if r.code != 0 {
		t.Fatalf("auto/2 into a folder: exit %d\n%s", r.code, r.stderr)
	}
	if gs := readBack(t, filepath.Join(dir, "scored", "part-00001-of-00002.parquet")); len(gs) != 2 {
		t.Errorf("auto/2 with JOB_COMPLETION_INDEX=1 wrote %d groups, want 2", len(gs))
	}
	if r := runBin(t, nil, nil, append(append([]string{"-o", whole, "--shard", "2/2"}, scorers...), a)...); r.code != 2 || !strings.Contains(r.stderr, "2/2") {
		t.Errorf("--shard 2/2: exit %d, %q; want a usage error naming it", r.code, r.stderr)
	}
}
