package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
)

// TestNegativeLimitsRefused: a negative limit (--max-body-bytes,
// --drain-timeout, --max-batch, --max-queue, --max-adapters, --max-tokens,
// --request-timeout, --poll-interval) is bad usage (exit 2) naming the
// flag, with --model and, for those --upstream reads, with --upstream, as
// hone-collect proxy refuses its negative size limits. The server started
// with the default in its place, without a word, where the user had asked
// for a limit of their own.
func TestNegativeLimitsRefused(t *testing.T) {
	for _, tc := range []struct {
		flag string
		args []string
	}{
		{"--max-body-bytes", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--max-body-bytes", "-1"}},
		{"--max-body-bytes", []string{"--upstream", "http://127.0.0.1:1", "--max-body-bytes", "-1"}},
		{"--drain-timeout", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--drain-timeout", "-1s"}},
		{"--drain-timeout", []string{"--upstream", "http://127.0.0.1:1", "--drain-timeout", "-5s"}},
		{"--max-batch", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--max-batch", "-1"}},
		{"--max-queue", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--max-queue", "-1"}},
		{"--prefill-tokens", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--prefill-tokens", "-1"}},
		{"--max-adapters", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--max-adapters", "-1"}},
		{"--max-adapters", []string{"--upstream", "http://127.0.0.1:1", "--max-adapters", "-3"}},
		{"--max-tokens", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--max-tokens", "-1"}},
		{"--request-timeout", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--request-timeout", "-1m"}},
		{"--poll-interval", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--poll-interval", "-1s"}},
		{"--poll-interval", []string{"--upstream", "http://127.0.0.1:1", "--poll-interval", "-1s"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			// A server that started instead is stopped at the deadline,
			// and the test fails on its exit status.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, append(tc.args, "--port", "0")...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitUsage || !strings.Contains(stderr.String(), tc.flag) {
				t.Fatalf("%v: %v, want exit %d naming %s; stderr:\n%s", tc.args, err, cli.ExitUsage, tc.flag, stderr.String())
			}
		})
	}
}
