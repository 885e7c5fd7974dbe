package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/internal/fakes3d"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestPublishFailuresWarnSparingly runs hone-train grpo as a process that
// publishes every 10ms to a store that starts refusing writes mid-run:
// the same failure is warned about at the first attempt and then at a
// doubling interval, not at every tick. A store refusing at the end
// still fails loudly (an ERROR line; the SIGTERM's exit 130). Before, every tick warned: a pod's log
// flooded, one line every --publish-every, for as long as the store was
// broken.
func TestPublishFailuresWarnSparingly(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess")
	}
	s3 := fakes3d.StartTest(t, "hone")
	out := s3.URL("hone", "adapters")
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	cmd := exec.Command(os.Args[0], "grpo", "--model", md, "--run", "flaky", "--out", out, "--out-cache", filepath.Join(dir, "cache"),
		"--rank", "2", "--threads", "1", "--groups-per-step", "1", "--steps", "100000", "--save-every", "1",
		"--publish-every", "10ms", filepath.Join(dir, "s", "a.parquet"))
	cmd.Env = append(os.Environ(), "HONE_TRAIN_TEST_MAIN=1")
	var log waitfor.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	// shown is the log less its step lines, thousands of them.
	shown := func() string {
		var keep []string
		for _, l := range strings.Split(log.String(), "\n") {
			if !strings.Contains(l, "msg=step ") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if !waitfor.Within(time.Minute, cond) {
			t.Fatalf("timed out waiting for %s:\n%s", what, shown())
		}
	}
	waitFor("a first publish", func() bool { return strings.Contains(log.String(), "msg=published") })
	s3.RefuseWrites(true)
	// Each failed publish is refused at least once: 40 refusals are 40
	// attempts at most, and at least the attempts whose warnings follow.
	waitFor("40 refused writes", func() bool { return s3.Refused() >= 40 })
	warned := warnLines(log.String(), "publish failed")
	if len(warned) == 0 || len(warned) > 7 {
		t.Errorf("%d refused writes gave %d warnings, want 1 to 7 (the first, then at a doubling interval):\n%s",
			s3.Refused(), len(warned), strings.Join(warned, "\n"))
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	stopped = true
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitInterrupted {
		t.Errorf("SIGTERM with the store refusing: %v, want exit %d\n%s", err, cli.ExitInterrupted, shown())
	}
	if !strings.Contains(log.String(), `level=ERROR msg="publish failed"`) {
		t.Errorf("the last publish, refused, logged no error:\n%s", shown())
	}
}
