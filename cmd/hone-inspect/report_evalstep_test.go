package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An eval row's or a metrics row's step that is not a JSON integer is
// named as written: the string "3" used to be refused as "step 3 is not an
// integer from 0 to 2^53", which reads as nonsense, and null as "<nil>".
func TestReportEvalStepNamedAsWritten(t *testing.T) {
	dir := t.TempDir()
	runDir, _, _ := writeRunFolder(t, dir, 2)
	for text, want := range map[string]string{
		`{"label":"a","step":"3","x":1}`:  `evals.jsonl:1: step "3" is not an integer from 0 to 2^53`,
		`{"label":"a","step":1.5,"x":1}`:  `evals.jsonl:1: step 1.5 is not an integer from 0 to 2^53`,
		`{"label":"a","step":null,"x":1}`: `evals.jsonl:1: step null is not an integer from 0 to 2^53`,
	} {
		eval := filepath.Join(dir, "evals.jsonl")
		if err := os.WriteFile(eval, []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, nil, "report", runDir, "--eval", eval, "-o", filepath.Join(dir, "r.html"))
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", text, r.code, r.stderr, want)
		}
	}
	// The same for a row of metrics.jsonl.
	metrics := filepath.Join(runDir, "metrics.jsonl")
	if err := os.WriteFile(metrics, []byte(`{"step":"7","loss":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `metrics.jsonl:1: step "7" is not an integer from 0 to 2^53`
	if r := run(t, nil, "report", runDir, "-o", filepath.Join(dir, "r.html")); r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("metrics.jsonl: exit %d, stderr %q; want exit 2 and %q", r.code, r.stderr, want)
	}
}
