//go:build unix

package stdio_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/env"
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
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(string(bytes.TrimSpace(b)))
		return err == nil && pid > 0
	})
	t.Cleanup(func() {
		if t.Failed() && !gone(pid) {
			syscall.Kill(pid, syscall.SIGKILL) // left running: do not leave it behind the test too
		}
	})
	// The run stops: the reset fails and the episode is closed.
	cancel()
	if err := <-reset; err == nil {
		t.Fatal("reset of a hung program succeeded")
	}
	ep.Close()
	waitfor.Until(t, 10*time.Second, "the wrapper's child to be gone", func() bool { return gone(pid) })
}

// gone reports whether process pid has exited: kill(pid, 0) finds none,
// or it is a zombie, exited and left for its parent to reap (an orphan's
// parent is then PID 1, which in some containers never reaps).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // no /proc here: only ESRCH says so
	}
	// The state follows the command, which is in parentheses.
	_, after, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(after, "Z")
}
