//go:build unix

package mcpenv_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/collect/env/envtest"
	"github.com/hone-rl/hone/collect/env/mcpenv"
	"github.com/hone-rl/hone/internal/waitfor"
)

// TestWrappedServerChildKilled: a server started behind a wrapper (as npx
// or uv run start theirs) leaves nothing running after Close: here the
// wrapper starts a process that ignores everything and sleeps, then
// becomes the server. Before, closing stopped the server only, and the
// sleeper outlived the run.
func TestWrappedServerChildKilled(t *testing.T) {
	t.Setenv("HONE_MCP_TEST_SERVER", "1")
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	script := `sleep 1000 & echo $! > "$1.tmp" && mv "$1.tmp" "$1"; exec "$2" -test.run='^$'`
	e, err := mcpenv.Open(context.Background(), mcpenv.Options{Command: []string{"sh", "-c", script, "sh", pidFile, os.Args[0]}, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	waitfor.Until(t, 10*time.Second, "the wrapper's child to write its pid", func() bool {
		pid = envtest.ReadPID(pidFile)
		return pid > 0
	})
	t.Cleanup(func() {
		if !envtest.Gone(pid) {
			syscall.Kill(pid, syscall.SIGKILL) // do not leave it behind the test
		}
	})
	e.Close()
	waitfor.Until(t, 10*time.Second, "the wrapper's child to be gone", func() bool { return envtest.Gone(pid) })
}

// TestHungServerReplaced: a server that stops answering altogether (a
// deadlock, a sequential server stuck in one call) fails the episode
// whose call timed out, and, as it then answers no ping either, the next
// episode gets a new server. Before, a call cut short by its episode's
// deadline skipped the ping, so the hung server was kept and every later
// episode's calls hung on it until their own deadlines.
func TestHungServerReplaced(t *testing.T) {
	e, starts := startServer(t, "1")
	pid := envtest.ReadPID(starts)
	ctx := context.Background()
	ep, err := e.NewEpisode(ctx, tasks[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	// The server freezes: it reads no request and answers none.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := env.Play(short, ep, calls("add", `{"a":2,"b":3}`), 4); err == nil {
		t.Fatal("an episode on a frozen server succeeded")
	}
	waitfor.Until(t, 15*time.Second, "an episode on a new server", func() bool {
		ep, err = e.NewEpisode(ctx, tasks[0], 0)
		return err == nil && countStarts(t, starts) == 2
	})
	res, err := env.Play(ctx, ep, calls("add", `{"a":2,"b":3}`), 4)
	if err != nil || res.Outcome.Reward != 1 {
		t.Fatalf("episode on the new server: err %v outcome %+v", err, res.Outcome)
	}
}
