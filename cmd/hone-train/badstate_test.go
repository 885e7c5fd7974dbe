package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestResumeBadStateRefused runs hone-train --resume as a process on a run
// whose latest step's trainer_state.json is cut short, not JSON, or holds
// a field of the wrong type: bad input (exit 2) naming the file (and the
// field, where one is wrong), as a bad adapter or optimizer file of the
// same step is. Before, it was an internal failure, exit 1, naming the
// field as Go's "State.step".
func TestResumeBadStateRefused(t *testing.T) {
	md, in, out, step := warmAdapter(t)
	path := filepath.Join(step, "trainer_state.json")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, body, field string }{
		{"truncated", string(good[:len(good)/2]), ""},
		{"not JSON", "step: 1\n", ""},
		{"step a string", `{"step": "1", "optimizer_step": 1}`, `"step"`},
		{"metrics a list", `{"step": 1, "optimizer_step": 1, "metrics": [1]}`, `"metrics"`},
		{"a list", `[1]`, "a JSON array, want an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			code, text := runMain(t, "sft", "--model", md, "--run", "warm", "--out", out, "--rank", "2", "--threads", "1", "--steps", "2", "--resume", in)
			if code != cli.ExitUsage {
				t.Errorf("exit %d, want %d\n%s", code, cli.ExitUsage, text)
			}
			for _, want := range []string{path, tc.field} {
				if !strings.Contains(text, want) {
					t.Errorf("output does not name %s:\n%s", want, text)
				}
			}
			if strings.Contains(text, "Go struct") {
				t.Errorf("output names Go's types, not the file's field:\n%s", text)
			}
		})
	}
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, text := runMain(t, "sft", "--model", md, "--run", "warm", "--out", out, "--rank", "2", "--threads", "1", "--steps", "2", "--resume", in); code != 0 {
		t.Fatalf("--resume of the good step: exit %d\n%s", code, text)
	}
}
