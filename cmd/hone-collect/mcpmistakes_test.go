package main

import (
	"os"
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

// TestMCPTaskMissing: a task line without "task" (docs/mcp-env.md: "only
// task is required") failed its episode with `payload needs {"task": ...}
// (<nil>)`, a nil error printed into the message. It must name the
// scenario and what is missing, and nothing nil.
func TestMCPTaskMissing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tasks.jsonl")
	lines := `{"id":"no-task","environment":"mcp","payload":{"answer":"Paris"}}` + "\n" +
		`{"id":"not-object","environment":"mcp","payload":"What is the capital of France?"}` + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	server, err := filepath.Abs("../../pipelines/mcp-env-example/server.py")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "o.parquet")
	r := collectBin(t, "--scenarios", file, "--env-opt", "cmd=python3 "+server, "-G", "1", "--policy", "scripted:replay", "-o", out)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (every episode failed): %s", r.code, r.stderr)
	}
	want := map[string]string{
		"no-task":    `scenario no-task: payload has no "task"`,
		"not-object": `scenario not-object: payload: json: cannot unmarshal string`,
	}
	for _, g := range read(t, out) {
		for _, tr := range g.Trajectories {
			if !strings.Contains(tr.Error, want[tr.ScenarioID]) || strings.Contains(tr.Error, "<nil>") {
				t.Errorf("%s: error %q, want it to contain %q", tr.ScenarioID, tr.Error, want[tr.ScenarioID])
			}
		}
	}
}

// TestMCPCmdUnbalancedQuote: an MCP command with an unbalanced quote was
// refused as "stdio: unbalanced quote ...", naming the stdio environment
// the user never asked for. `scenarios --mcp-cmd` names its flag, and
// `--env mcp` its environment, with no word of stdio.
func TestMCPCmdUnbalancedQuote(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"scenarios", "--mcp-cmd", "'a", "--model", "m", "-o", filepath.Join(t.TempDir(), "t.jsonl")}, `--mcp-cmd: unbalanced quote in "'a"`},
		{[]string{"--env", "mcp", "--env-opt", "cmd='a", "--groups", "1", "--policy", "scripted:replay", "-o", filepath.Join(t.TempDir(), "o.parquet")}, `environment mcp: --env-opt cmd: unbalanced quote in "'a"`},
	} {
		r := collectBin(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "stdio") {
			t.Errorf("%q: exit %d, want 2 and %q, no word of stdio:\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
}
