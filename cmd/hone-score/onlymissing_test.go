package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyMissingWarnsOfAnotherChain re-runs --only-missing with a
// changed formula under the same component name. Every group has every
// component, so each is passed through with the old formula's values, as
// documented; but the run said only "2 passed through", and the output's
// footer names the new chain. It now warns, once, that the passed groups
// were scored by another chain, naming both; with the same chain it says
// nothing.
func TestOnlyMissingWarnsOfAnotherChain(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 2, 2)
	scored := filepath.Join(dir, "scored.parquet")
	if r := runBin(t, nil, nil, "-o", scored, "--scorer", "env", "--scorer", "final=formula:win", in); r.code != 0 {
		t.Fatalf("first scoring: exit %d:\n%s", r.code, r.stderr)
	}
	out := filepath.Join(dir, "again.parquet")
	r := runBin(t, nil, nil, "-o", out, "--only-missing", "--scorer", "env", "--scorer", "final=formula:win * 2", scored)
	if r.code != 0 || !strings.Contains(r.stderr, "2 passed through") {
		t.Fatalf("exit %d, want 0 with 2 groups passed through:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "--only-missing passed through groups that another chain scored") ||
		!strings.Contains(r.stderr, "groups=2") || !strings.Contains(r.stderr, `final=formula:win * 2`) {
		t.Fatalf("no warning that the changed formula was not applied:\n%s", r.stderr)
	}
	for _, g := range readBack(t, out) {
		for _, tr := range g.Trajectories {
			if v, _ := component(tr, "final"); v != tr.Metrics["win"] {
				t.Fatalf("%s: final %v, want the first run's %v (passed through untouched)", tr.ID, v, tr.Metrics["win"])
			}
		}
	}
	r = runBin(t, nil, nil, "-o", out, "--only-missing", "--scorer", "env", "--scorer", "final=formula:win", scored)
	if r.code != 0 || strings.Contains(r.stderr, "another chain") {
		t.Fatalf("same chain: exit %d, want 0 and no warning:\n%s", r.code, r.stderr)
	}
}
