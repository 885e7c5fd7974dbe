package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPURLWithoutScheme: `--env-opt url=localhost:3000/mcp` (the
// http:// of docs/mcp-env.md's example left out) used to reach the
// transport and fail the run with exit 1 and Go's `unsupported protocol
// scheme "localhost"`, as if the server were down. It is a setting the
// user mistyped: exit 2 before anything starts, naming the form wanted;
// `scenarios --mcp-url` the same.
func TestMCPURLWithoutScheme(t *testing.T) {
	tasks, err := filepath.Abs("../../pipelines/mcp-env-example/tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--env", "mcp", "--env-opt", "url=localhost:3000/mcp", "--env-opt", "tasks=" + tasks, "--groups", "1", "--policy", "scripted:replay", "-o", filepath.Join(t.TempDir(), "o.parquet")},
		{"--env", "mcp", "--env-opt", "url=ftp://localhost:3000/mcp", "--env-opt", "tasks=" + tasks, "--groups", "1", "--policy", "scripted:replay", "-o", filepath.Join(t.TempDir(), "o.parquet")},
		{"scenarios", "--mcp-url", "localhost:3000/mcp", "--model", "m", "--base-url", "http://127.0.0.1:1/v1", "-o", filepath.Join(t.TempDir(), "t.jsonl")},
	} {
		r := collectBin(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "want an http:// or https:// URL") || strings.Contains(r.stderr, "unsupported protocol scheme") {
			t.Errorf("%q: exit %d, want 2 naming the URL form: %s", args, r.code, r.stderr)
		}
	}
}
