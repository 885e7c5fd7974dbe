package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputNamingScenariosRefused: -o naming the --scenarios file, however
// spelled, is a usage error (exit 2) before any episode, and the scenarios
// are left as they were. The run replaced them with its trajectories: a
// JSON Lines file by Parquet, and a run stopped early kept only the groups
// it had played.
func TestOutputNamingScenariosRefused(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "scenarios.jsonl")
	want := []byte(`{"id":"s1","environment":"guess","payload":{"secret":3,"n":8}}` + "\n")
	if err := os.WriteFile(scen, want, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{scen, filepath.Join(dir, ".", "scenarios.jsonl"), "file://" + scen} {
		r := collectBin(t, "--env", "guess", "--policy", "scripted:bisect", "--scenarios", scen, "-G", "1", "-o", out)
		if r.code != 2 || !strings.Contains(r.stderr, "names the --scenarios file") {
			t.Errorf("-o %s: exit %d, stderr %q; want exit 2 saying it names the --scenarios file", out, r.code, r.stderr)
		}
		if got, err := os.ReadFile(scen); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("-o %s: the scenarios file is now %d bytes, %.40q… (%v), want it as it was", out, len(got), got, err)
		}
	}
}
