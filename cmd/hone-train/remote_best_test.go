package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// TestObjectStoreBestFollowsResume: a resume that drops --best-metric
// removes the run's best pointer (the run names none), and --keep-last 1
// prunes the step it named; the store kept its copy of best, since
// Publish uploads the local files but removed none, so the store's best
// named a step it had deleted, and a fresh trainer's Pull copied the
// dangling pointer back.
func TestObjectStoreBestFollowsResume(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	local := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, local, "r1")
	out, watch := s3.URL("hone", "adapters"), s3.URL("hone", "scored/")
	train := func(cache string, extra ...string) {
		t.Helper()
		var log bytes.Buffer
		args := append([]string{"grpo", "--model", md, "--out", out, "--run", "cron", "--watch-dir", watch, "--rank", "2", "--threads", "1", "--out-cache", cache}, extra...)
		if err := cli.ExecuteCommand(context.Background(), newRootCmd(&log, &log), args); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, log.String())
		}
	}
	uploadScored(t, s3, local, "r1.parquet")
	train(filepath.Join(dir, "cache1"), "--best-metric", "reward_mean")
	run := s3.URL("hone", "adapters/cron")
	if b, err := fileset.ReadFile(context.Background(), fileset.Join(run, "best")); err != nil || strings.TrimSpace(string(b)) != "step-000001" {
		t.Fatalf("after the first call the store's best is %q (%v), want step-000001", b, err)
	}

	scoredFixture(t, dir, local, "r2")
	uploadScored(t, s3, local, "r2.parquet")
	train(filepath.Join(dir, "cache2"), "--keep-last", "1")
	if _, err := os.Stat(filepath.Join(dir, "cache2", "cron", "best")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the resume without --best-metric left a local best: %v", err)
	}
	b, err := fileset.ReadFile(context.Background(), fileset.Join(run, "best"))
	if err == nil {
		name := strings.TrimSpace(string(b))
		_, serr := fileset.ReadFile(context.Background(), fileset.Join(run, name, "adapter_config.json"))
		t.Errorf("the store's best names %s (its adapter: %v), though the run names no best step now", name, serr)
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}
