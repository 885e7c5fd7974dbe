package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// -o naming a FIFO that no one reads yet waits for a reader, as a shell
// redirect does, but a SIGTERM (or one Ctrl-C) stops that wait with exit
// code 130: the open ignored the signal's cancellation, so the command
// ran on until a second signal or a SIGKILL.
func TestOutputFIFOWithoutReaderStopsOnSignal(t *testing.T) {
	dir, _, _ := fixtures(t)
	work := t.TempDir()
	fifo := filepath.Join(work, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	cmd := exec.Command(binary, "to-jsonl", "-o", fifo, dir)
	var stderr waitfor.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The kernel names where each thread waits: a writer's open of a
	// FIFO waits in wait_for_partner, by which time the command has set
	// its signal handler (it does so before any work).
	tasks := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task"
	opening := func() bool {
		ents, _ := os.ReadDir(tasks)
		for _, e := range ents {
			if b, _ := os.ReadFile(filepath.Join(tasks, e.Name(), "wchan")); strings.Contains(string(b), "wait_for_partner") {
				return true
			}
		}
		return false
	}
	if !waitfor.Within(20*time.Second, opening) {
		t.Skip("no thread seen waiting in wait_for_partner (/proc/<pid>/task/*/wchan unavailable?)")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Fatalf("exit %v, want 130; stderr %q", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still waiting for a reader 30s after SIGTERM; stderr %q", stderr.String())
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("after the run: %v, mode %v; want the FIFO still there", err, st.Mode())
	}
	if ents, _ := os.ReadDir(work); len(ents) != 1 {
		t.Errorf("left in the output's folder: %v", ents)
	}
}
