package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestPublishEveryMustBePositive runs hone-train as a process with --out
// naming an object-store folder (a real S3 protocol server) and
// --publish-every 0 or below: a usage error naming the flag, before
// anything is pulled or trained. Before, the publisher's ticker panicked
// (a Go stack trace, exit 2 without a word of which flag).
func TestPublishEveryMustBePositive(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	in := filepath.Join(dir, "s", "a.parquet")
	for _, every := range []string{"0s", "-1m"} {
		code, text := runMain(t, "grpo", "--model", md, "--run", "pub", "--out", s3.URL("hone", "adapters"), "--rank", "2", "--threads", "1",
			"--out-cache", filepath.Join(dir, "cache"), "--publish-every", every, in)
		if code != cli.ExitUsage || !strings.Contains(text, "--publish-every") || strings.Contains(text, "panic") || strings.Contains(text, "training done") {
			t.Errorf("--publish-every %s: exit %d, want %d naming the flag before training; output:\n%s", every, code, cli.ExitUsage, text)
		}
	}
}
