package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/fakes3d"
)

// Incremental training with everything in object storage: --watch-dir and
// --out name S3 folders (a real S3 protocol server). The first call trains
// step 1 and publishes it, latest last; the second, on a fresh local
// cache as a new pod would have, pulls the run (manifest included), trains
// only on the new file and publishes step 2.
func TestTrainWithObjectStore(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	local := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, local, "r1")
	upload := func(name string) {
		b, err := os.ReadFile(filepath.Join(local, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := fileset.WriteFile(context.Background(), s3.URL("hone", "scored/"+name), b); err != nil {
			t.Fatal(err)
		}
	}
	upload("r1.parquet")
	out, watch := s3.URL("hone", "adapters"), s3.URL("hone", "scored/")
	train := func(cache string) string {
		t.Helper()
		var log bytes.Buffer
		args := []string{"grpo", "--model", md, "--out", out, "--run", "cron", "--watch-dir", watch, "--rank", "2", "--threads", "1", "--out-cache", cache}
		if err := cli.ExecuteCommand(context.Background(), newRootCmd(&log, &log), args); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, log.String())
		}
		return log.String()
	}
	train(filepath.Join(dir, "cache1"))
	run := s3.URL("hone", "adapters/cron")
	latest := func() string {
		b, err := fileset.ReadFile(context.Background(), fileset.Join(run, "latest"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if got := latest(); got != "step-000001" {
		t.Fatalf("after the first call the published latest is %q", got)
	}
	files, err := fileset.List(context.Background(), fileset.Join(run, "step-000001"), "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(strings.Split(f, "?")[0]))
	}
	for _, want := range []string{"adapter_config.json", "adapter_model.safetensors", "optimizer.safetensors", "trainer_state.json", "train_config.json"} {
		if !slices.Contains(names, want) {
			t.Errorf("published step 1 lacks %s: %q", want, names)
		}
	}

	scoredFixture(t, dir, local, "r2")
	upload("r2.parquet")
	log := train(filepath.Join(dir, "cache2"))
	if got := latest(); got != "step-000002" {
		t.Fatalf("after the second call the published latest is %q\n%s", got, log)
	}
	if _, err := os.Stat(filepath.Join(dir, "cache2", "cron", "step-000001", "adapter_model.safetensors")); err != nil {
		t.Errorf("the second call did not pull step 1: %v", err)
	}
	m, err := fileset.ReadFile(context.Background(), fileset.Join(run, "manifest.json"))
	if err != nil || !strings.Contains(string(m), "r1.parquet") || !strings.Contains(string(m), "r2.parquet") {
		t.Errorf("published manifest: %s %v", m, err)
	}

	var errLog bytes.Buffer
	err = cli.ExecuteCommand(context.Background(), newRootCmd(&errLog, &errLog), []string{"grpo", "--model", md, "--out", filepath.Join(dir, "plain"), "--run", "x", "--out-cache", dir, local})
	if cli.ExitCode(err) != cli.ExitUsage {
		t.Errorf("--out-cache with a local --out: %v", err)
	}
}
