package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/trajectory"
)

// Three shards (two by i/n, one by auto/n with JOB_COMPLETION_INDEX, as a
// Kubernetes Indexed Job runs them) write their parts into a folder; read
// as the folder, the parts hold the same groups, ids and episodes as one
// unsharded run.
func TestShardsCoverTheRun(t *testing.T) {
	dir := t.TempDir()
	common := []string{"--env", "guess", "--groups", "7", "-G", "2", "--policy", "scripted:bisect", "--seed", "3"}
	whole := filepath.Join(dir, "whole.parquet")
	if r := collectBin(t, append(common, "-o", whole)...); r.code != 0 {
		t.Fatalf("unsharded: exit %d: %s", r.code, r.stderr)
	}
	parts := filepath.Join(dir, "parts") + "/"
	if err := os.Mkdir(parts, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if r := collectBin(t, append(common, "--shard", fmt.Sprintf("%d/3", i), "-o", parts)...); r.code != 0 {
			t.Fatalf("shard %d/3: exit %d: %s", i, r.code, r.stderr)
		}
	}
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	if r := collectBin(t, append(common, "--shard", "auto/3", "-o", parts)...); r.code != 0 {
		t.Fatalf("shard auto/3: exit %d: %s", r.code, r.stderr)
	}
	names, err := fileset.List(context.Background(), parts, ".parquet")
	if err != nil {
		t.Fatal(err)
	}
	var bases []string
	for _, n := range names {
		bases = append(bases, filepath.Base(n))
	}
	if want := []string{"part-00000-of-00003.parquet", "part-00001-of-00003.parquet", "part-00002-of-00003.parquet"}; !slices.Equal(bases, want) {
		t.Fatalf("parts %q, want %q", bases, want)
	}
	got, err := trajectory.ReadAll(context.Background(), fileset.Files(names...))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(read(t, names[0])); n != 3 { // places 0, 3, 6
		t.Errorf("shard 0/3 of 7 groups wrote %d groups, want 3", n)
	}
	byID := func(gs []trajectory.Group) map[string][]string {
		m := map[string][]string{}
		for _, g := range gs {
			for _, tr := range g.Trajectories {
				var turns []string
				for _, msg := range tr.Messages {
					turns = append(turns, msg.Content)
				}
				m[g.ID] = append(m[g.ID], tr.ID+": "+strings.Join(turns, " | "))
			}
		}
		return m
	}
	if w, g := byID(read(t, whole)), byID(got); !reflect.DeepEqual(w, g) {
		t.Errorf("the parts differ from the unsharded run:\n%v\nwant\n%v", g, w)
	}
	for _, args := range [][]string{
		append(common, "--shard", "3/3", "-o", whole),
		append(common, "--shard", "1", "-o", whole),
		append(common, "-o", parts), // a folder output needs --shard
	} {
		if r := collectBin(t, args...); r.code != 2 || !strings.Contains(r.stderr, "shard") && !strings.Contains(r.stderr, "folder") {
			t.Errorf("%q: exit %d, %q; want a usage error", args, r.code, r.stderr)
		}
	}
	t.Setenv("JOB_COMPLETION_INDEX", "")
	if r := collectBin(t, append(common, "--shard", "auto/3", "-o", whole)...); r.code != 2 || !strings.Contains(r.stderr, "JOB_COMPLETION_INDEX") {
		t.Errorf("auto without an index: exit %d, %q", r.code, r.stderr)
	}
}

// --shard 0/1 with a folder output writes the one part, as round.yaml's
// collect step runs with -p shards=1 (--shard 0/1 -o STORE/…/collected/).
// Before, a count of 1 was taken for no --shard at all, and the step failed
// with "only a sharded run (--shard) writes a part into" a folder.
func TestOneShardWritesAPart(t *testing.T) {
	parts := t.TempDir() + "/"
	args := []string{"--env", "guess", "--groups", "3", "-G", "2", "--policy", "scripted:bisect", "--seed", "3", "--shard", "0/1", "-o", parts}
	if r := collectBin(t, args...); r.code != 0 {
		t.Fatalf("%q: exit %d: %s", args, r.code, r.stderr)
	}
	if n := len(read(t, filepath.Join(parts, "part-00000-of-00001.parquet"))); n != 3 {
		t.Errorf("the one part holds %d groups, want all 3", n)
	}
}
