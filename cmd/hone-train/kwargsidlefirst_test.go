package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestKwargsFlagAfterIdleFirstSession: a grpo run whose sessions so far
// trained only rows that record their chat template kwargs never laid a
// row out under --chat-template-kwargs, so the value its first session
// saved (usually none) is no choice of the user's: a later session on
// rows that record none may give the flag, and the run takes it from
// there. It was refused as a changed option ("run has it unset"), and
// the rows could be trained in that run only without the kwargs they
// need. Once a session lays rows out under the flag, a later one that
// gives another value is still refused.
func TestKwargsFlagAfterIdleFirstSession(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	rec := filepath.Join(dir, "in", "rec.parquet")
	plain := filepath.Join(dir, "in", "plain.parquet")
	later := filepath.Join(dir, "in", "later.parquet")
	writeKwargsRows(t, rec, `{"prefix":"P"}`, `{"prefix":"P"}`)
	writeKwargsRows(t, plain, "", "")
	writeKwargsRows(t, later, "", "")
	out := filepath.Join(dir, "adapters")
	flag := []string{"--chat-template-kwargs", `{"prefix":"P"}`}
	train := func(in string, extra ...string) (int, string) {
		args := []string{"grpo", "--model", md, "--run", "r", "--out", out, "--rank", "2", "--threads", "1", "--groups-per-step", "1", "--steps", "1", "--resume"}
		return runMain(t, append(append(args, extra...), in)...)
	}
	if code, msg := train(rec); code != 0 {
		t.Fatalf("first session, on recorded rows: exit %d\n%s", code, msg)
	}
	if code, msg := train(rec); code != 0 {
		t.Fatalf("the same session again: exit %d\n%s", code, msg)
	}
	if code, msg := train(plain, flag...); code != 0 {
		t.Fatalf("a session on unrecorded rows with the flag, after sessions that laid out none: exit %d, want 0\n%s", code, msg)
	}
	if n := len(stepMetrics(t, filepath.Join(out, "r"))); n != 2 {
		t.Errorf("%d steps, want 2", n)
	}
	code, msg := train(later)
	if code != cli.ExitUsage || !strings.Contains(msg, `option "chat_template_kwargs" differs`) {
		t.Errorf("a session on unrecorded rows without the flag the run laid rows out under: exit %d, want %d naming the option\n%s", code, cli.ExitUsage, msg)
	}
}
