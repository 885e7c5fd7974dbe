package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestKwargsDiffShownAsJSON: a resume refused for another
// --chat-template-kwargs shows both values as the JSON the user typed,
// not as Go-escaped strings ("{\"prefix\":\"P\"}"), which could not be
// pasted back as the flag.
func TestKwargsDiffShownAsJSON(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	plain := filepath.Join(dir, "in", "plain.parquet")
	writeKwargsRows(t, plain, "", "")
	out := filepath.Join(dir, "adapters")
	train := func(steps string, more ...string) (int, string) {
		args := []string{"grpo", "--model", md, "--run", "r", "--out", out, "--rank", "2", "--threads", "1", "--groups-per-step", "1", "--steps", steps}
		return runMain(t, append(append(args, more...), plain)...)
	}
	if code, msg := train("1", "--chat-template-kwargs", `{"prefix": "P"}`); code != 0 {
		t.Fatalf("first call: exit %d\n%s", code, msg)
	}
	code, msg := train("2", "--resume", "--chat-template-kwargs", `{"prefix": "Q"}`)
	want := `option "chat_template_kwargs" differs: run has {"prefix":"P"}, command gives {"prefix":"Q"}`
	if code != cli.ExitUsage || !strings.Contains(msg, want) {
		t.Errorf("resume with other kwargs: exit %d, want %d and %s\n%s", code, cli.ExitUsage, want, msg)
	}
	code, msg = train("2", "--resume")
	want = `option "chat_template_kwargs" differs: run has {"prefix":"P"}, command leaves it unset`
	if code != cli.ExitUsage || !strings.Contains(msg, want) {
		t.Errorf("resume without the kwargs: exit %d, want %d and %s\n%s", code, cli.ExitUsage, want, msg)
	}
}
