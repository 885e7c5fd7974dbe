package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputNameNotParquetWarned: -o out.jsonl writes Parquet, as every
// output of hone-collect is; the name promises JSON lines and the stages
// reading a folder take only its *.parquet files, so the run says so.
// It wrote the Parquet file without a word. A name without an extension
// (a FIFO, /dev/stdout) or ending in .parquet is not warned of.
func TestOutputNameNotParquetWarned(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--env", "guess", "--groups", "1", "-G", "1", "--policy", "scripted", "-o"}
	jsonl := filepath.Join(dir, "out.jsonl")
	r := collectBin(t, append(args, jsonl)...)
	if r.code != 0 || !strings.Contains(r.stderr, "out.jsonl") || !strings.Contains(r.stderr, "writes Parquet") {
		t.Fatalf("exit %d, stderr %q; want a warning that out.jsonl gets Parquet", r.code, r.stderr)
	}
	if gs := read(t, jsonl); len(gs) != 1 {
		t.Errorf("%d groups in %s, want 1", len(gs), jsonl)
	}
	for _, name := range []string{"out.parquet", "out"} {
		if r := collectBin(t, append(args, filepath.Join(dir, name))...); r.code != 0 || strings.Contains(r.stderr, "writes Parquet") {
			t.Errorf("-o %s: exit %d, stderr %q; want no warning", name, r.code, r.stderr)
		}
	}
}
