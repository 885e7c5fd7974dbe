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

	"github.com/hone-rl/hone/internal/waitfor"
)

// Ctrl-C while a command is still reading its stdin: the command stops
// with exit code 130 once the read returns, and neither the output nor a
// temporary file is left behind.
func TestInterruptLeavesNoOutput(t *testing.T) {
	dir, _, _ := fixtures(t)
	parquet, err := os.ReadFile(filepath.Join(dir, "a.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		input []byte
	}{
		{"from-jsonl", []string{"from-jsonl", "-o", "out.parquet", "-"}, []byte(`{"messages":[{"role":"user","content":"hi"}]}` + "\n")},
		{"cat", []string{"cat", "-o", "out.parquet", "-"}, parquet},
		{"to-jsonl", []string{"to-jsonl", "-o", "out.jsonl", "-"}, parquet},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A signal that lands before the command has installed its
			// handler kills it the default way; that start-up race is not
			// what this test is about, so wait longer and try again.
			var work string
			for attempt, wait := range []time.Duration{300 * time.Millisecond, time.Second, 3 * time.Second, 8 * time.Second} {
				work = t.TempDir()
				stderr, err := interruptWhileReading(t, tc.args, tc.input, work, wait)
				var ee *exec.ExitError
				if errors.As(err, &ee) && !ee.Exited() && attempt < 3 {
					continue // killed by the signal before its handler was set
				}
				if !errors.As(err, &ee) || ee.ExitCode() != 130 {
					t.Fatalf("exit %v, want 130; stderr %q", err, stderr)
				}
				break
			}
			if ents, _ := os.ReadDir(work); len(ents) != 0 {
				t.Errorf("left in the output directory: %v", ents)
			}
		})
	}
}

// interruptWhileReading starts the binary with args in work, writes half of
// input to its stdin, waits, sends SIGINT, writes the rest once the command
// has taken the signal, and returns how the process ended and its stderr.
func interruptWhileReading(t *testing.T, args []string, input []byte, work string, wait time.Duration) (stderr string, err error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = work
	stdin, perr := cmd.StdinPipe()
	if perr != nil {
		t.Fatal(perr)
	}
	var errBuf waitfor.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stdin.Write(input[:len(input)/2])
	// sleep: half the input, then time for the command to block reading
	// the rest: a guess, on purpose (nothing outside the process shows that
	// it is blocked in read); the caller retries with longer waits the one
	// case a short guess gets wrong, a signal before the handler is set.
	time.Sleep(wait)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The rest only once the signal is taken (its notice is out), or the
	// command has died of it.
	exited := false
	waitfor.Until(t, 20*time.Second, "the signal's notice or the exit", func() bool {
		select {
		case err = <-done:
			exited = true
		default:
		}
		return exited || strings.Contains(errBuf.String(), "received interrupt")
	})
	if exited {
		return errBuf.String(), err
	}
	stdin.Write(input[len(input)/2:])
	stdin.Close()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGINT")
	}
	return errBuf.String(), err
}
