package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFormulaCallsNoFunction scores with a formula calling a function
// expr does not have (sqrt, log): the callee was taken for a metric, and
// each row failed as lacking a metric named "sqrt", telling the user to
// write metrics["sqrt"] ?? 0, which calls nothing either. It is now a
// usage error before any row is read, naming the function and those
// there are.
func TestFormulaCallsNoFunction(t *testing.T) {
	dir := t.TempDir()
	in := scenario(t, dir, "in.parquet", 0, 1, 2)
	out := filepath.Join(dir, "out.parquet")
	for _, f := range []string{"formula:sqrt(illegal)", "formula:win - 0.1*log(1 + illegal)", "formula:illegal(2)"} {
		r := runBin(t, nil, nil, "-o", out, "--scorer", f, in)
		name, _, _ := strings.Cut(strings.TrimPrefix(f, "formula:"), "(")
		name = name[strings.LastIndex(name, "*")+1:]
		if r.code != 2 || !strings.Contains(r.stderr, "calls "+name+", which is no function") ||
			strings.Contains(r.stderr, "metrics[") || !strings.Contains(r.stderr, "abs,") {
			t.Errorf("%s: exit %d, want 2 saying %s is no function and naming the functions there are:\n%s", f, r.code, name, r.stderr)
		}
	}
	// The builtins, and a metric named as one, still work.
	if r := runBin(t, nil, nil, "-o", out, "--scorer", "formula:abs(-win) + max(illegal, 0.5) + round(0.4)", in); r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
}
