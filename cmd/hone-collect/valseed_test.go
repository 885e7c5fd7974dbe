package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedHeldOutDefaultSeedWarned: generated scenarios labelled
// val (or test) under the default --seed are the very scenarios a train
// run with the default seed plays, so the held-out set is no held-out
// set; the run warns, naming --seed. It said nothing. An explicit --seed
// (even 1), --split train, and a scenario file's split are not warned of.
func TestGeneratedHeldOutDefaultSeedWarned(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.parquet")
	base := []string{"--env", "guess", "--groups", "2", "-G", "1", "--policy", "scripted", "-o", out}
	r := collectBin(t, append(base, "--split", "val")...)
	if r.code != 0 || !strings.Contains(r.stderr, "same scenarios") || !strings.Contains(r.stderr, "--seed") {
		t.Fatalf("exit %d, stderr %q; want a warning naming --seed", r.code, r.stderr)
	}
	for _, extra := range [][]string{{"--split", "val", "--seed", "1"}, {"--split", "train"}, {"--split", "test", "--seed", "800001"}} {
		if r := collectBin(t, append(base, extra...)...); r.code != 0 || strings.Contains(r.stderr, "same scenarios") {
			t.Errorf("%q: exit %d, stderr %q; want no warning", extra, r.code, r.stderr)
		}
	}
}
