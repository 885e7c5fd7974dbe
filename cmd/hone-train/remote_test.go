package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/trainer"
)

// uploadScored copies the scored file name from the folder local to the
// fake store's hone/scored/, the --watch-dir of the tests that train from
// object storage.
func uploadScored(t *testing.T, s3 *fakes3d.Server, local, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(local, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(context.Background(), s3.URL("hone", "scored/"+name), b); err != nil {
		t.Fatal(err)
	}
}

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
	uploadScored(t, s3, local, "r1.parquet")
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
	uploadScored(t, s3, local, "r2.parquet")
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

// TestTemporaryOutCache: without --out-cache the run is written in a new
// temporary folder, which goes once the last upload succeeds (a cron job
// left a copy of the whole run in $TMPDIR on every call before); when the
// upload fails, it stays, as the only copy of the unpublished step, and
// the error names it.
func TestTemporaryOutCache(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.MkdirTemp's folder
	// run starts publishing to s3, saves a step as the trainer would, stops
	// s3 if told to, and finishes.
	run := func(s3 *fakes3d.Server, stop bool) (local string, err error) {
		t.Helper()
		r := remoteOut{every: time.Hour}
		o := trainer.Options{Out: s3.URL("hone", "adapters"), Name: "cron"}
		finish, err := r.start(context.Background(), &o, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		local = filepath.Join(o.OutLocal, "cron")
		if !strings.HasPrefix(local, tmp+string(filepath.Separator)) {
			t.Fatalf("run folder %s is not in $TMPDIR %s", local, tmp)
		}
		if err := os.MkdirAll(filepath.Join(local, "step-000001"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range map[string]string{"step-000001/adapter_config.json": "{}", "latest": "step-000001\n"} {
			if err := os.WriteFile(filepath.Join(local, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if stop {
			if err := s3.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		return local, finish(nil)
	}

	s3 := fakes3d.StartTest(t, "hone")
	local, err := run(s3, false)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := fileset.ReadFile(context.Background(), s3.URL("hone", "adapters/cron/latest")); err != nil || strings.TrimSpace(string(b)) != "step-000001" {
		t.Fatalf("published latest %q, %v", b, err)
	}
	if _, err := os.Stat(local); !os.IsNotExist(err) {
		t.Errorf("the temporary run folder %s is still there after the upload (%v)", local, err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "hone-train-out-*")); len(left) > 0 {
		t.Errorf("left in $TMPDIR: %q", left)
	}

	down, err := fakes3d.Start("127.0.0.1:0", "hone")
	if err != nil {
		t.Fatal(err)
	}
	local, err = run(down, true)
	if err == nil || !strings.Contains(err.Error(), local) {
		t.Fatalf("upload to a stopped store: %v; want an error naming %s", err, local)
	}
	if _, err := os.Stat(filepath.Join(local, "step-000001", "adapter_config.json")); err != nil {
		t.Errorf("the unpublished step is gone after a failed upload: %v", err)
	}
}

// --out naming a bucket the store does not have (a typo, or a bucket not
// made yet) is an error before training, naming the URL. Before, reading
// the run's latest there was "not found", taken for a run not published
// yet: the whole run trained, and only its publish at the end failed, in a
// pod whose local copy of the run then went with it.
func TestOutToMissingBucketFailsBeforeTraining(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	dir := t.TempDir()
	local := filepath.Join(dir, "scored")
	md := scoredFixture(t, dir, local, "r1")
	uploadScored(t, s3, local, "r1.parquet")
	out := s3.URL("hnoe", "adapters")
	var log bytes.Buffer
	args := []string{"grpo", "--model", md, "--out", out, "--run", "cron", "--watch-dir", s3.URL("hone", "scored/"),
		"--rank", "2", "--threads", "1", "--out-cache", filepath.Join(dir, "cache")}
	err := cli.ExecuteCommand(context.Background(), newRootCmd(&log, &log), args)
	if err == nil || !strings.Contains(err.Error(), "the bucket s3://hnoe/ does not exist") {
		t.Fatalf("--out to a missing bucket: %v; want an error naming it\n%s", err, log.String())
	}
	if strings.Contains(log.String(), "training done") {
		t.Errorf("the run trained before the missing bucket was noticed:\n%s", log.String())
	}
	// As a process it exits 2, bad input, as hone-collect's and
	// hone-score's -o and hone-serve's --adapters in a missing bucket do:
	// round.yaml and cron.yaml do not retry a step that exits 2, and a
	// mistyped store fails the same way again (it exited 1, retried).
	code, outText := runMain(t, args...)
	if code != 2 || !strings.Contains(outText, "the bucket s3://hnoe/ does not exist") || !strings.Contains(outText, "create the bucket") {
		t.Errorf("hone-train --out to a missing bucket: exit %d, want 2 naming the bucket and what to do:\n%s", code, outText)
	}
}

// A pull that fails before training (the store's latest names a step it
// does not hold) leaves no temporary run folder behind: a cron job that
// met such a store every half hour left one in $TMPDIR each time.
func TestFailedPullLeavesNoTemporaryFolder(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.MkdirTemp's folder
	s3 := fakes3d.StartTest(t, "hone")
	if err := fileset.WriteFile(context.Background(), s3.URL("hone", "adapters/cron/latest"), []byte("step-000003\n")); err != nil {
		t.Fatal(err)
	}
	if err := fileset.WriteFile(context.Background(), s3.URL("hone", "adapters/cron/step-000001/adapter_config.json"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	r := remoteOut{every: time.Hour}
	o := trainer.Options{Out: s3.URL("hone", "adapters"), Name: "cron"}
	if _, err := r.start(context.Background(), &o, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("the pull of a store whose latest names a missing step succeeded")
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "hone-train-out-*")); len(left) > 0 {
		t.Errorf("left in $TMPDIR after the failed pull: %q", left)
	}
}

// TestSharedOutCacheLockedBeforePull: with one --out-cache shared by two
// calls, a call whose run another call holds (training, its lock taken)
// fails with ErrLocked, as a local run does, before it pulls anything: it
// pulled the store's steps into the first call's live folder, replacing
// its step folders while it trained, and only then found the lock held.
// Once a call finished, its lock is released for the next.
func TestSharedOutCacheLockedBeforePull(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	cache := t.TempDir()
	start := func() (*trainer.Options, func(error) error, error) {
		r := remoteOut{every: time.Hour, cache: cache}
		o := &trainer.Options{Out: s3.URL("hone", "adapters"), Name: "cron"}
		finish, err := r.start(context.Background(), o, slog.New(slog.DiscardHandler))
		return o, finish, err
	}
	live := filepath.Join(cache, "cron")
	write := func(text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(live, "step-000001"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range map[string]string{"step-000001/adapter_config.json": text, "latest": "step-000001\n"} {
			if err := os.WriteFile(filepath.Join(live, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A first call publishes step 1.
	_, finish, err := start()
	if err != nil {
		t.Fatal(err)
	}
	write(`{"published":1}`)
	if err := finish(nil); err != nil {
		t.Fatal(err)
	}
	// A call trains in the shared folder, holding the run's lock (as the
	// trainer's Setup takes it), saving a step 1 of its own that latest
	// does not name yet.
	unlock, err := (&checkpoint.Run{Dir: live}).Lock()
	if err != nil {
		t.Fatalf("the finished call left the run locked: %v", err)
	}
	write(`{"live":1}`)
	if err := os.Remove(filepath.Join(live, "latest")); err != nil {
		t.Fatal(err)
	}
	_, _, err = start()
	if !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("a second call into a run held by a live call: %v; want ErrLocked", err)
	}
	if b, _ := os.ReadFile(filepath.Join(live, "step-000001", "adapter_config.json")); string(b) != `{"live":1}` {
		t.Errorf("the live call's step 1 reads %q after the second call: it pulled into the live folder", b)
	}
	unlock()
	o, finish, err := start()
	if err != nil {
		t.Fatalf("after the live call ended: %v", err)
	}
	if !o.RunLocked {
		t.Error("the call holds the run's lock but does not tell the trainer so")
	}
	if err := finish(nil); err != nil {
		t.Fatal(err)
	}
}

// TestOutWithoutKeysExits2: --out in an object store with no keys to
// reach it fails before training with exit 2 and what to set, as the
// stages' -o does: it exited 1, which round.yaml's and cron.yaml's train
// steps retry, to fail the same way.
func TestOutWithoutKeysExits2(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	code, out := runMain(t, "grpo", "--model", md, "--out", s3.URL("hone", "adapters"), "--run", "r",
		"--rank", "2", "--threads", "1", "--out-cache", filepath.Join(dir, "cache"), filepath.Join(dir, "s", "a.parquet"))
	if code != 2 || !strings.Contains(out, "AWS_ACCESS_KEY_ID") || strings.Contains(out, "training done") {
		t.Errorf("hone-train --out without keys: exit %d, want 2 before training, saying what to set:\n%s", code, out)
	}
}
