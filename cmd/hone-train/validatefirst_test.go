package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestUsageErrorsBeforeBackend runs hone-train as a process with flags
// it refuses (--out-cache with a local --out, a negative --lr, a negative
// --rank, grpo's --packed-sequence-length without --norm art): each is a
// usage error (exit 2) naming the flag, given before the backend is opened
// (no "backend" log line), also with --device cuda, so that a bad flag
// costs no device initialisation and, on a machine without a GPU, is
// reported as itself. Before, the backend was opened first: the CPU run
// logged it, and the --device cuda run failed (exit 1) on the device
// instead of naming the flag.
func TestUsageErrorsBeforeBackend(t *testing.T) {
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	out := filepath.Join(dir, "adapters")
	for _, tc := range []struct {
		job  string
		args []string
		want string
	}{
		{"grpo", []string{"--out-cache", filepath.Join(dir, "cache")}, "--out-cache"},
		{"sft", []string{"--out-cache", filepath.Join(dir, "cache")}, "--out-cache"},
		{"grpo", []string{"--lr", "-1"}, "--lr -1"},
		{"sft", []string{"--rank", "-2"}, "--rank -2"},
		{"grpo", []string{"--packed-sequence-length", "64"}, "--packed-sequence-length"},
	} {
		for _, device := range []string{"cpu", "cuda"} {
			args := append([]string{tc.job, "--model", md, "--run", "u", "--out", out, "--threads", "1", "--device", device}, tc.args...)
			code, text := runMain(t, append(args, in)...)
			if code != cli.ExitUsage || !strings.Contains(text, tc.want) || strings.Contains(text, "msg=backend") {
				t.Errorf("%s %v --device %s: exit %d, want %d naming %s before any backend line; output:\n%s", tc.job, tc.args, device, code, cli.ExitUsage, tc.want, text)
			}
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused call left %s (%v)", out, err)
	}
}
