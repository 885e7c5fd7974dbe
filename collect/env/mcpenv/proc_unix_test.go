//go:build unix

package mcpenv_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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
