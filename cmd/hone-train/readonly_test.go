package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// --out in a bucket these credentials may only read is an error before
// training, naming the URL and the refusal. Before, the run trained, each
// publish failed with a warning, and only the last one, at the end, failed
// the run: hours of training whose steps were never published, in a pod
// whose local copy went with it.
func TestOutReadOnlyFailsBeforeTraining(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the temporary --out-cache's folder
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	local := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, local, "r1")
	uploadScored(t, s3, local, "r1.parquet")
	// Credentials that may only read: the store answers every write and
	// delete 403 AccessDenied, as S3 does.
	s3.RefuseWrites(true)
	out := s3.URL("hone", "adapters")
	var log bytes.Buffer
	args := []string{"grpo", "--model", md, "--out", out, "--run", "cron", "--watch-dir", s3.URL("hone", "scored/"),
		"--rank", "2", "--threads", "1"}
	err := cli.ExecuteCommand(context.Background(), newRootCmd(&log, &log), args)
	if err == nil || !strings.Contains(err.Error(), "s3://hone/adapters/cron/") || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("--out where writes are refused: %v; want an error naming the run's URL and the refusal\n%s", err, log.String())
	}
	if strings.Contains(log.String(), "training done") {
		t.Errorf("the run trained before the refused writes were noticed:\n%s", log.String())
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "hone-train-out-*")); len(left) > 0 {
		t.Errorf("left in $TMPDIR: %q", left)
	}
}
