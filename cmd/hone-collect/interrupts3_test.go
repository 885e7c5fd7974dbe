package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestInterruptUploadsFinishedGroups: SIGINT during a run writing to an
// object store keeps the whole groups finished before the stop in the
// object, as it does in a local file (TestInterruptProcess): the stage
// commits them after the stop, and the upload went out on the stopped
// run's context, failed at once, and left them in a local hone-unsent-*
// file instead, though the store was up.
// interruptOneGroup runs hone-collect writing to out from the working
// directory wd and sends SIGINT once one group is whole (as in
// TestInterruptProcess: the 4th and later resets stall, so one group is
// whole once the 5th episode has started); before it, stopStore is
// called. It returns the exit error and stderr.
func interruptOneGroup(t *testing.T, out, wd string, stopStore func()) (error, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "--env", "stdio", "--env-opt", stallEnv(t, dir),
		"--groups", "400", "-G", "2", "--concurrency", "2", "--policy", "scripted", "-o", out)
	cmd.Dir = wd
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitfor.Within(60*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "resets", "reset-5")); return err == nil }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the 5th episode did not start: %s", stderr.String())
	}
	stopStore()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	return err, stderr.String()
}

// TestInterruptUploadsFinishedGroups: SIGINT during a run writing to an
// object store keeps the whole groups finished before the stop in the
// object, as it does in a local file (TestInterruptProcess): the stage
// commits them after the stop, and the upload went out on the stopped
// run's context, failed at once, and left them in a local hone-unsent-*
// file instead, though the store was up.
func TestInterruptUploadsFinishedGroups(t *testing.T) {
	s3 := fakes3d.StartTest(t, "hone")
	out := s3.URL("hone", "runs/o.parquet")
	wd := t.TempDir()
	err, stderr := interruptOneGroup(t, out, wd, func() {})
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130: %s", err, stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(wd, "*hone-unsent*")); len(left) > 0 {
		t.Errorf("kept locally %v though the store was up: %s", left, stderr)
	}
	gs := read(t, out)
	if len(gs) != 1 || len(gs[0].Trajectories) != 2 {
		t.Fatalf("%d groups in the object, want 1 whole group: %s", len(gs), stderr)
	}
}

// TestInterruptedUploadFailureNamesKeptFile: SIGINT during a run whose
// store is gone by then: exit 130, and the finished groups, kept in a
// local hone-unsent-* file, are named on stderr. It said only
// "interrupted", and the file lay in the working directory unnamed.
func TestInterruptedUploadFailureNamesKeptFile(t *testing.T) {
	fakes3d.StartTest(t) // the client's environment
	gone, err := fakes3d.Start("127.0.0.1:0", "hone")
	if err != nil {
		t.Fatal(err)
	}
	out := gone.URL("hone", "runs/o.parquet")
	wd := t.TempDir()
	err, stderr := interruptOneGroup(t, out, wd, func() { gone.Close(context.Background()) })
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130: %s", err, stderr)
	}
	kept, _ := filepath.Glob(filepath.Join(wd, "hone-unsent-o-*.parquet"))
	if len(kept) != 1 {
		t.Fatalf("kept files %v; want one: %s", kept, stderr)
	}
	if !strings.Contains(stderr, kept[0]) || !strings.Contains(stderr, "interrupted") {
		t.Errorf("stderr does not name the kept file %s:\n%s", kept[0], stderr)
	}
	if gs := read(t, kept[0]); len(gs) != 1 {
		t.Errorf("%d groups in the kept file, want 1", len(gs))
	}
}
