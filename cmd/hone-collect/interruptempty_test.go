package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// TestInterruptBeforeAnyGroupWritesNothing: SIGINT before any group
// finished leaves an existing output as it was and says that nothing was
// written. The stop committed a Parquet file of 0 rows over it (to an
// object store as well), as if a run of nothing had been played.
func TestInterruptBeforeAnyGroupWritesNothing(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.parquet")
	os.WriteFile(out, []byte("the previous round"), 0o644)
	// The 4th and later resets stall (stallEnv): with groups of 8, two at
	// a time, no group can finish, and once the 5th has started both
	// workers are stalled.
	cmd := exec.Command(filepath.Join(binDir, "hone-collect"), "--env", "stdio", "--env-opt", stallEnv(t, dir),
		"--groups", "4", "-G", "8", "--concurrency", "2", "--policy", "scripted", "-o", out)
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
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130: %s", err, stderr.String())
	}
	if b, _ := os.ReadFile(out); string(b) != "the previous round" {
		t.Errorf("the existing output was replaced (%d bytes): %s", len(b), stderr.String())
	}
	if !strings.Contains(stderr.String(), "nothing was written") {
		t.Errorf("stderr does not say that nothing was written:\n%s", stderr.String())
	}
}
