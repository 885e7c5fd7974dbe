package main

import (
	"os"
	"os/exec"
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

// Regression: --policy scripted on a stdio program whose hello lists no
// policies asked the program for its scenarios (and warned that it made
// fewer than --groups) before refusing the policy. The refusal now comes
// first, the program asked for nothing past its hello.
func TestScriptedWithoutPoliciesRefusedFirst(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 not on PATH: %v", err)
		}
		t.Skip("python3 not on PATH")
	}
	dir := t.TempDir()
	asked := filepath.Join(dir, "asked")
	script := filepath.Join(dir, "env.py")
	// One scenario, whatever n: a run of --groups 3 warns of fewer.
	if err := os.WriteFile(script, []byte(`import sys, json
for line in sys.stdin:
    r = json.loads(line)
    if r["op"] == "hello":
        print(json.dumps({"name": "np"}), flush=True)
    elif r["op"] == "scenarios":
        open(sys.argv[1], "w").close()
        print(json.dumps({"scenarios": [{"id": "s0"}]}), flush=True)
    elif r["op"] == "reset":
        print(json.dumps({"messages": [{"role": "user", "content": "hi"}]}), flush=True)
    else:
        print(json.dumps({"done": True, "reward": 1}), flush=True)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := collectBin(t, "--env", "stdio", "--env-opt", "cmd="+py+" -S "+script+" "+asked, "--groups", "3", "-G", "1",
		"--policy", "scripted", "-o", filepath.Join(dir, "out.parquet"))
	if r.code != 2 || !strings.Contains(r.stderr, "no scripted policy") {
		t.Fatalf("exit %d (want 2, no scripted policy):\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(asked); err == nil || strings.Contains(r.stderr, "fewer scenarios") {
		t.Fatalf("scenarios were generated before the refusal:\n%s", r.stderr)
	}
}
