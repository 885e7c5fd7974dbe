package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFormulaNumberAsCondition scores with formulas that use a metric, a
// number, as a condition, as Python would (win and not illegal,
// win ? 1 : 0): the row failed with Go's "interface conversion:
// interface {} is float64, not bool", which says nothing of the formula.
// The error now says a number stands where a condition is wanted and
// how to write one.
func TestFormulaNumberAsCondition(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	out := filepath.Join(dir, "out.parquet")
	for _, f := range []string{"formula:win == 1 and not illegal", "formula:win ? 1 : 0"} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", f, in)
		if r.code != 2 || strings.Contains(r.stderr, "interface") || !strings.Contains(r.stderr, "a number where a condition") ||
			!strings.Contains(r.stderr, "!= 0") {
			t.Errorf("%s: exit %d, want 2 saying a number stands where a condition is wanted, without Go's words:\n%s", f, r.code, r.stderr)
		}
	}
}
