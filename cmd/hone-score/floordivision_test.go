package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFormulaFloorDivisionRefused scores with a Python floor division,
// illegal // 2: in expr, // starts a comment, so the formula was illegal
// alone and every row silently got that reward. A // outside a string
// is now a usage error saying how to divide and round down; one inside
// a string (a metadata key) is text, as before.
func TestFormulaFloorDivisionRefused(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	out := filepath.Join(dir, "out.parquet")
	r := runBin(t, nil, nil, "-o", out, "--scorer", "formula:1 + illegal // 2", in)
	if r.code != 2 || !strings.Contains(r.stderr, "the rest of its line is ignored") || !strings.Contains(r.stderr, "floor(") {
		t.Fatalf("exit %d, want 2 saying // starts a comment, and to write floor(a / b):\n%s", r.code, r.stderr)
	}
	// A comment line of a formula written over several lines ignores that
	// line alone, which the message says (it said the rest of the formula).
	r = runBin(t, nil, nil, "-o", out, "--scorer", "formula:illegal\n// the illegal moves\n+ 1", in)
	if r.code != 2 || !strings.Contains(r.stderr, "the rest of its line is ignored") || !strings.Contains(r.stderr, "/* ... */") {
		t.Fatalf("a // comment line: exit %d, want 2 saying the rest of its line is ignored, and how to comment:\n%s", r.code, r.stderr)
	}
	r = runBin(t, nil, nil, "-o", out, "--scorer", `formula:metadata["a//b"] == nil ? floor(illegal / 2) /* half */ : 0`, in)
	if r.code != 0 {
		t.Fatalf("a // within a string, or within /* */: exit %d, want 0:\n%s", r.code, r.stderr)
	}
}
