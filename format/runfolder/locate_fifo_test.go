//go:build unix

package runfolder

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLocateRefusesFIFOLatest: a run whose latest is a named pipe (or a
// device) is an error naming the file, at once. Before, Locate opened the
// pipe to read it and blocked there for good with no writer, and with it
// the Sync of hone-serve's vLLM front (serve/vllm), whose adapter files
// were already stat'ed for this, and the embedded server's watch: no run
// was synced again.
func TestLocateRefusesFIFOLatest(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "exp")
	mkdir(t, run, "step-000001")
	latest := filepath.Join(run, LatestName)
	if err := syscall.Mkfifo(latest, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	t.Cleanup(func() {
		// Opened read-write a pipe never blocks, and it lets a Locate
		// stuck opening it (the bug) go on, so that the test ends.
		if w, err := os.OpenFile(latest, os.O_RDWR, 0); err == nil {
			w.Close()
		}
	})
	done := make(chan error, 1)
	go func() {
		_, err := Locate(root, "exp")
		done <- err
	}()
	var err error
	// Bounded wait for the call to return (format may not import
	// internal/waitfor): the bug is that it never does.
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Locate did not return in 10s with a pipe for latest")
	}
	if err == nil || !strings.Contains(err.Error(), latest) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Locate = %v; want a refusal naming %s as not a regular file", err, latest)
	}
	for _, dev := range []string{"/dev/null", "/dev/zero"} {
		if _, err := os.Stat(dev); err != nil {
			continue
		}
		os.Remove(latest)
		symlink(t, dev, latest)
		if _, err := Locate(root, "exp"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("latest a link to %s: Locate = %v; want a refusal as not a regular file", dev, err)
		}
	}
}
