package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An environment that fails as it starts is a failure of the run (exit 1,
// its own words, no pointer to --help): a program that crashes at start,
// an MCP server that cannot be reached, as `hone-collect scenarios` says
// of the same server. Settings the environment refuses before it starts
// anything (a missing cmd, an unknown key, a program that is not there)
// stay bad usage (exit 2, pointing to --help).
func TestEnvStartFailureExitCode(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "o.parquet")
	common := []string{"--groups", "1", "-G", "1", "--policy", "scripted", "-o", out}
	if err := os.WriteFile(out+".file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--env", "stdio", "--env-opt", "cmd=sh -c 'echo boom-at-start >&2; exit 3'"}, 1, "boom-at-start"},
		{[]string{"--env", "mcp", "--env-opt", "url=http://127.0.0.1:1/mcp"}, 1, "connect"},
		{[]string{"--env", "stdio"}, 2, "cmd="},
		{[]string{"--env", "stdio", "--env-opt", "cmd=/nonexistent/envprog"}, 2, "/nonexistent/envprog"},
		{[]string{"--env", "guess", "--env-opt", "nn=3"}, 2, "nn"},
		{[]string{"--env", "tictactoe", "--env-opt", "opponent=nobody"}, 2, "nobody"},
		{[]string{"--env", "inbox", "--env-opt", "db=" + tmp}, 2, "is a folder"},
		// A working folder that is not there was blamed on the program
		// ("fork/exec /usr/bin/sh: no such file or directory"), and one
		// that is a file failed the run (exit 1, "not a directory").
		{[]string{"--env", "stdio", "--env-opt", "cmd=sh -c 'exit 0'", "--env-opt", "dir=/nonexistent/envdir"}, 2, "dir=/nonexistent/envdir"},
		{[]string{"--env", "stdio", "--env-opt", "cmd=sh -c 'exit 0'", "--env-opt", "dir=" + out + ".file"}, 2, "dir=" + out + ".file: not a folder"},
	} {
		r := collectBin(t, append(c.args, common...)...)
		help := strings.Contains(r.stderr, "--help")
		if r.code != c.code || !strings.Contains(r.stderr, c.says) || help != (c.code == 2) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q, pointing to --help only for exit 2", c.args, r.code, r.stderr, c.code, c.says)
		}
	}
}
