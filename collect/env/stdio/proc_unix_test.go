//go:build unix

package stdio_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/stdio"
	"github.com/hone-rl/hone/internal/waitfor"
)

// A program started behind a wrapper that hangs is stopped with the
// wrapper when its episode ends, not left running: here the wrapper's
// child writes its pid and sleeps, never answering reset.
func TestWrappedChildKilled(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	wrapper := filepath.Join(dir, "env.sh")
	// The first process answers hello; the episode's starts the child
	// (exec: the sleeping process is the one whose pid is written) and
	// waits for it, as sh -c, uv run and npx wait for theirs.
	os.WriteFile(wrapper, []byte(`read line
case "$line" in *hello*) echo '{"name":"w"}'; exit 0 ;; esac
sh -c 'echo $$ > child.pid.tmp && mv child.pid.tmp child.pid && exec sleep 1000'
`), 0o644)
	ctx := context.Background()
	e, err := stdio.New(ctx, []string{"sh", wrapper}, dir)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := e.NewEpisode(ctx, env.Scenario{ID: "s"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithCancel(ctx)
	defer cancel()
	reset := make(chan error, 1)
	go func() {
		_, err := ep.Reset(c)
		reset <- err
	}()
	var pid int
	waitfor.Until(t, 10*time.Second, "the child to write its pid", func() bool {
		pid = envtest.ReadPID(pidFile)
		return pid > 0
	})
	t.Cleanup(func() {
		if t.Failed() && !envtest.Gone(pid) {
			syscall.Kill(pid, syscall.SIGKILL) // left running: do not leave it behind the test too
		}
	})
	// The run stops: the reset fails and the episode is closed.
	cancel()
	if err := <-reset; err == nil {
		t.Fatal("reset of a hung program succeeded")
	}
	ep.Close()
	waitfor.Until(t, 10*time.Second, "the wrapper's child to be gone", func() bool { return envtest.Gone(pid) })
}

// A program that answers one request and exits (a first program reading
// one line instead of a loop) fails the next request saying it exited,
// with its exit status, as when it exits before its answer: the step's
// error said only "write: write |1: broken pipe".
func TestExitedBeforeRequest(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "env.sh")
	os.WriteFile(script, []byte(`read line
case "$line" in *hello*) echo '{"name":"once"}'; exit 0 ;; esac
echo '{"messages":[{"role":"user","content":"go"}]}'
echo $$ > pid.tmp && mv pid.tmp pid
`), 0o644)
	ctx := context.Background()
	e, err := stdio.New(ctx, []string{"sh", script}, dir)
	if err != nil {
		t.Fatal(err)
	}
	ep := resetEpisode(t, ctx, e)
	var pid int
	waitfor.Until(t, 10*time.Second, "the program to exit", func() bool {
		pid = envtest.ReadPID(filepath.Join(dir, "pid"))
		return pid > 0 && envtest.Gone(pid)
	})
	_, err = ep.Step(ctx, env.Turn{Message: env.Assistant("43")})
	if err == nil || !strings.Contains(err.Error(), "stdio: step: the environment exited without answering (exit status 0)") {
		t.Fatalf("got %v, want that it exited, with its status", err)
	}
}

// A wrapper that exits as soon as its stdin closes, leaving a child it
// started in the background, has that child stopped at the episode's end
// too: its process group is killed whether or not the wrapper itself
// exited in time. Only a wrapper still running after 500 ms had its group
// killed; this child slept on.
func TestExitedWrapperChildKilled(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	wrapper := filepath.Join(dir, "env.sh")
	// The child's stdio goes elsewhere, so that nothing but the group
	// kill stops it: Wait does not wait for it to close the pipes.
	os.WriteFile(wrapper, []byte(`read line
case "$line" in *hello*) echo '{"name":"w"}'; exit 0 ;; esac
sh -c 'echo $$ > child.pid.tmp && mv child.pid.tmp child.pid && exec sleep 1000' </dev/null >/dev/null 2>&1 &
echo '{"messages":[{"role":"user","content":"go"}]}'
read line
`), 0o644)
	ctx := context.Background()
	e, err := stdio.New(ctx, []string{"sh", wrapper}, dir)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := e.NewEpisode(ctx, env.Scenario{ID: "s"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ep.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	var pid int
	waitfor.Until(t, 10*time.Second, "the child to write its pid", func() bool {
		pid = envtest.ReadPID(pidFile)
		return pid > 0
	})
	t.Cleanup(func() {
		if !envtest.Gone(pid) {
			syscall.Kill(pid, syscall.SIGKILL) // do not leave it behind the test
		}
	})
	ep.Close()
	if !waitfor.Within(10*time.Second, func() bool { return envtest.Gone(pid) }) {
		t.Fatalf("the child %d of the wrapper, which exited, still runs after the episode closed", pid)
	}
}
