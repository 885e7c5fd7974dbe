package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyMissingNamesFirstPassedInInputOrder: the warning that
// --only-missing passed through groups another chain scored names the
// first of them, which was the first a worker happened to finish, not the
// first of the input: with --concurrency above 1 it named another group
// from one run to the next. It names the first in input order.
func TestOnlyMissingNamesFirstPassedInInputOrder(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 64, 1)
	scored := filepath.Join(dir, "scored.parquet")
	if r := runBin(t, nil, nil, "-o", scored, "--scorer", "final=formula:win", in); r.code != 0 {
		t.Fatalf("first scoring: exit %d:\n%s", r.code, r.stderr)
	}
	for try := range 5 {
		out := filepath.Join(dir, "again.parquet")
		r := runBin(t, nil, nil, "-o", out, "--only-missing", "--concurrency", "32", "--scorer", "final=formula:win * 2", scored)
		if r.code != 0 || !strings.Contains(r.stderr, "groups=64") {
			t.Fatalf("exit %d, want 0 and 64 groups passed through:\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "first=g0 ") {
			t.Fatalf("run %d: the warning does not name g0, the first group of the input:\n%s", try+1, r.stderr)
		}
	}
}
