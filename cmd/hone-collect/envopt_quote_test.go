package main

import (
	"strings"
	"testing"
)

// TestUnquotedEnvOpt: `--env-opt cmd=python3 env.py` (the quotes of
// docs/stdio-env.md's cmd='python3 env.py' left out) leaves env.py as a
// stray argument. The refusal used to say only "scenario files go to
// --scenarios", which sends a user writing a stdio program the wrong way;
// it must name the setting that took one word and show the quoting.
func TestUnquotedEnvOpt(t *testing.T) {
	for _, args := range [][]string{
		{"--env", "stdio", "--env-opt", "cmd=python3", "env.py", "--groups", "1", "--policy", "scripted"},
		{"--env", "stdio", "--env-opt=cmd=python3", "env.py", "--groups", "1", "--policy", "scripted"},
	} {
		r := collectBin(t, args...)
		if r.code != 2 || !strings.Contains(r.stderr, `--env-opt "cmd=python3" took one word`) ||
			!strings.Contains(r.stderr, `--env-opt cmd='python3 env.py'`) {
			t.Errorf("%q: exit %d, want 2 naming the unquoted --env-opt: %s", args, r.code, r.stderr)
		}
	}
	// A stray word after anything else keeps the plain refusal.
	r := collectBin(t, "--env", "guess", "--groups", "1", "--policy", "scripted", "tasks.jsonl")
	if r.code != 2 || !strings.Contains(r.stderr, "scenario files go to --scenarios") || strings.Contains(r.stderr, "took one word") {
		t.Errorf("stray file: exit %d: %s", r.code, r.stderr)
	}
}
