package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A metrics file whose "tokens" sum past the float64 range failed the
// report with "chart data: json: unsupported value: +Inf": the file and
// the key it came from were named nowhere.
func TestReportSumOverflowNamesFileAndKey(t *testing.T) {
	dir := t.TempDir()
	metrics := filepath.Join(dir, "metrics.jsonl")
	if err := os.WriteFile(metrics, []byte("{\"step\":1,\"tokens\":1.7e308}\n{\"step\":2,\"tokens\":1.7e308}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "report", metrics, "-o", filepath.Join(dir, "r.html"))
	if r.code == 0 || !strings.Contains(r.stderr, metrics) || !strings.Contains(r.stderr, `"tokens"`) || !strings.Contains(r.stderr, "step 2") {
		t.Errorf("exit %d, stderr %q; want a failure naming %s, \"tokens\" and step 2", r.code, r.stderr, metrics)
	}
}
