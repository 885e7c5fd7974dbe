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

// TestNegativeLimitsRefused: a negative --max-body-bytes or --drain-timeout
// is bad usage (exit 2) naming the flag, with --model and with
// --upstream, as hone-collect proxy refuses its negative size limits. The
// server started with the default in its place, without a word, where
// the user had asked for a limit of their own.
func TestNegativeLimitsRefused(t *testing.T) {
	for _, tc := range []struct {
		flag string
		args []string
	}{
		{"--max-body-bytes", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--max-body-bytes", "-1"}},
		{"--max-body-bytes", []string{"--upstream", "http://127.0.0.1:1", "--max-body-bytes", "-1"}},
		{"--drain-timeout", []string{"--model", "../../serve/testdata/tiny", "--threads", "1", "--drain-timeout", "-1s"}},
		{"--drain-timeout", []string{"--upstream", "http://127.0.0.1:1", "--drain-timeout", "-5s"}},
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
