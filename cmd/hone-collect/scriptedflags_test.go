package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// warnings are the WARN lines of a run's stderr.
func warnings(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "WARN") {
			out = append(out, l)
		}
	}
	return out
}

// Regression: --model and --base-url given with a scripted policy were
// dropped without a word, and a user who meant the model to play got
// scripted rows. The run still plays the script, and warns once naming
// the flags given; an endpoint from $OPENAI_BASE_URL, which a shell may
// set for every command, is not warned about.
func TestModelFlagsScriptedWarned(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	for i, c := range []struct {
		flags []string
		want  []string // the flags the one warning names; none: no warning
	}{
		{[]string{"--model", "myrun", "--base-url", "http://127.0.0.1:1/v1"}, []string{"--model", "--base-url"}},
		{[]string{"--temperature", "1"}, []string{"--temperature"}},
		{nil, nil},
	} {
		out := filepath.Join(dir, string(rune('a'+i))+".parquet")
		args := append([]string{"--env", "guess", "--groups", "2", "-G", "2", "--policy", "scripted:bisect", "-o", out}, c.flags...)
		r := collectBin(t, args...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d: %s", c.flags, r.code, r.stderr)
		}
		if gs := read(t, out); len(gs) != 2 {
			t.Fatalf("%q: %d groups, want 2", c.flags, len(gs))
		}
		warns := warnings(r.stderr)
		if len(c.want) == 0 {
			if len(warns) != 0 {
				t.Errorf("%q: warned %q, want none", c.flags, warns)
			}
			continue
		}
		if len(warns) != 1 || !strings.Contains(warns[0], "scripted") {
			t.Fatalf("%q: warnings %q, want one naming the flags and the scripted policy", c.flags, warns)
		}
		for _, f := range c.want {
			if !strings.Contains(warns[0], f) {
				t.Errorf("%q: warning %q does not name %s", c.flags, warns[0], f)
			}
		}
	}
}
