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
// doubling interval, not at every tick. Before, every tick warned: a
// pod's log flooded, one line every --publish-every, for as long as the
// store was broken. When the store takes writes again, the log says the
// publish works again and after how many failed attempts, naming the
// store; a store refusing at the end still fails loudly (an ERROR line;
// the SIGTERM's exit 130).
func TestPublishFailuresWarnSparingly(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess")
	}
	s3 := fakes3d.StartTest(t, "hone")
	// --keep-last 2 bounds the steps the recovering publish uploads: with
	// every step kept, a loaded machine trained hundreds while the writes
	// were refused, and their upload outlasted waitFor's minute.
	p := startPublishing(t, s3.URL("hone", "adapters"), "flaky", "--keep-last", "2")
	p.waitFor("a first publish", func() bool { return strings.Contains(p.log.String(), "msg=published") })
	s3.RefuseWrites(true)
	// Each failed publish is refused at least once: 40 refusals are 40
	// attempts at most, and at least the attempts whose warnings follow.
	p.waitFor("40 refused writes", func() bool { return s3.Refused() >= 40 })
	warned := warnLines(p.log.String(), "publish failed")
	if len(warned) == 0 || len(warned) > 7 {
		t.Errorf("%d refused writes gave %d warnings, want 1 to 7 (the first, then at a doubling interval):\n%s",
			s3.Refused(), len(warned), strings.Join(warned, "\n"))
	}
	s3.RefuseWrites(false)
	p.waitFor("the recovery logged", func() bool { return recoveryLine(p.log.String()) != "" })
	if l := recoveryLine(p.log.String()); !strings.Contains(l, "level=INFO") || !strings.Contains(l, `to="s3://hone/adapters/flaky`) {
		t.Errorf("the recovery was logged as %q, want an INFO line naming the store", l)
	}
	refused := s3.Refused()
	s3.RefuseWrites(true)
	p.waitFor("a refused write after the recovery", func() bool { return s3.Refused() > refused })
	p.interrupt()
	if !strings.Contains(p.log.String(), `level=ERROR msg="publish failed"`) {
		t.Errorf("the last publish, refused, logged no error:\n%s", p.shown())
	}
}

// recoveryLine is the line of log that says a publish worked again after
// failed attempts (at least one), or "".
func recoveryLine(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "msg=\"published again after ") && !strings.Contains(l, "failed_attempts=0") && strings.Contains(l, "failed_attempts=") {
			return l
		}
	}
	return ""
}

// publishingTrainer is hone-train grpo run as a process that trains for
// ever, saves every step and publishes every 10ms to an object store.
type publishingTrainer struct {
	t    *testing.T
	cmd  *exec.Cmd
	log  waitfor.Buffer
	done chan error // the process's exit, once
}

// startPublishing starts a publishingTrainer of run publishing to out, with
// extra flags; it is killed when the test ends, if still running.
func startPublishing(t *testing.T, out, run string, extra ...string) *publishingTrainer {
	t.Helper()
	dir := t.TempDir()
	md := scoredFixture(t, dir, filepath.Join(dir, "s"), "a")
	args := append([]string{"grpo", "--model", md, "--run", run, "--out", out, "--out-cache", filepath.Join(dir, "cache"),
		"--rank", "2", "--threads", "1", "--groups-per-step", "1", "--steps", "100000", "--save-every", "1",
		"--publish-every", "10ms"}, extra...)
	p := &publishingTrainer{t: t, cmd: exec.Command(os.Args[0], append(args, filepath.Join(dir, "s", "a.parquet"))...), done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), "HONE_TRAIN_TEST_MAIN=1")
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// shown is the log less its step lines, thousands of them.
func (p *publishingTrainer) shown() string {
	var keep []string
	for _, l := range strings.Split(p.log.String(), "\n") {
		if !strings.Contains(l, "msg=step ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// waitFor fails the test if cond does not hold within a minute.
func (p *publishingTrainer) waitFor(what string, cond func() bool) {
	p.t.Helper()
	if !waitfor.Within(time.Minute, cond) {
		p.t.Fatalf("timed out waiting for %s:\n%s", what, p.shown())
	}
}

// interrupt sends SIGTERM and checks that the process exits within a
// minute with the status of an interrupted run, the last publish done or
// given up on.
func (p *publishingTrainer) interrupt() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	var err error
	p.waitFor("the process to exit after SIGTERM", func() bool {
		select {
		case err = <-p.done:
			p.done <- err // for the cleanup's receive
			return true
		default:
			return false
		}
	})
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitInterrupted {
		p.t.Errorf("SIGTERM: %v, want exit %d\n%s", err, cli.ExitInterrupted, p.shown())
	}
}
