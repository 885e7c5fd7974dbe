package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestWatchKwargsFlagOnRecordedRows: in --watch-dir mode, as on named
// files (TestResumeWithRecordedKwargsFlag), a call whose new rows all
// record their chat template kwargs may add --chat-template-kwargs, drop
// it or spell it another way (it lays out none of them), and the run
// keeps its saved value, so that a later call on rows that record none,
// given the run's flag, goes on. Watch mode compared the flag with the
// run's before reading any row, and refused such a call ("option
// "chat_template_kwargs" differs"). Where the flag lays out a new row,
// or no row is read (nothing new), a flag that differs stays refused,
// unless no call of the run laid out a row under its value (the first
// call's rows all recorded their own): that value was no choice of the
// user's, and the call that first lays out rows under the flag gives the
// run's (it was refused too, TestKwargsFlagAfterIdleFirstSession).
func TestWatchKwargsFlagOnRecordedRows(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	out := filepath.Join(dir, "adapters")
	flag := []string{"--chat-template-kwargs", `{"prefix": "P"}`}
	for _, c := range []struct {
		name          string
		first, then   []string
		thenRecords   string // what the second call's new rows record
		want          int
		laterWithFlag bool // a third call, on unrecorded rows, with the first's flag
	}{
		{"add", nil, flag, `{"prefix":"P"}`, 0, false},
		{"drop", flag, nil, `{"prefix":"P"}`, 0, true},
		{"add-unrecorded", nil, flag, "", 0, false},
		{"add-after-unrecorded", []string{}, flag, "", cli.ExitUsage, false}, // first: no flag, on unrecorded rows
		{"drop-nothing-new", flag, nil, "-", cli.ExitUsage, false},
	} {
		watch := filepath.Join(dir, "w-"+c.name)
		writeKwargsRows(t, filepath.Join(watch, "r1.parquet"), "", "")
		if c.first == nil {
			writeKwargsRows(t, filepath.Join(watch, "r1.parquet"), `{"prefix":"P"}`, `{"prefix":"P"}`)
		}
		train := func(extra []string) (int, string) {
			args := []string{"grpo", "--model", md, "--run", c.name, "--out", out, "--rank", "2", "--threads", "1", "--groups-per-step", "1", "--steps", "1", "--watch-dir", watch}
			return runMain(t, append(args, extra...)...)
		}
		if code, msg := train(c.first); code != 0 {
			t.Fatalf("%s: first call: exit %d\n%s", c.name, code, msg)
		}
		if c.thenRecords != "-" {
			writeKwargsRows(t, filepath.Join(watch, "r2.parquet"), c.thenRecords, c.thenRecords)
		}
		code, msg := train(c.then)
		if code != c.want {
			t.Errorf("%s: second call: exit %d, want %d\n%s", c.name, code, c.want, msg)
			continue
		}
		if c.want != 0 {
			if !strings.Contains(msg, `option "chat_template_kwargs" differs`) {
				t.Errorf("%s: refused without naming the option:\n%s", c.name, msg)
			}
			continue
		}
		if n := len(stepMetrics(t, filepath.Join(out, c.name))); n != 2 {
			t.Errorf("%s: %d steps after the second call, want 2", c.name, n)
		}
		if c.laterWithFlag {
			writeKwargsRows(t, filepath.Join(watch, "r3.parquet"), "", "")
			if code, msg := train(c.first); code != 0 {
				t.Errorf("%s: a later call on unrecorded rows with the run's flag: exit %d, want 0\n%s", c.name, code, msg)
			}
			if n := len(stepMetrics(t, filepath.Join(out, c.name))); n != 3 {
				t.Errorf("%s: %d steps, want 3", c.name, n)
			}
		}
	}
}
