package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
			work := t.TempDir()
			cmd := exec.Command(binary, tc.args...)
			cmd.Dir = work
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			// Half the input, then wait until the command is blocked reading.
			stdin.Write(tc.input[:len(tc.input)/2])
			time.Sleep(300 * time.Millisecond)
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			stdin.Write(tc.input[len(tc.input)/2:])
			stdin.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("no exit after SIGINT")
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("exit %v, want 130; stderr %q", err, stderr.String())
			}
			if ents, _ := os.ReadDir(work); len(ents) != 0 {
				t.Errorf("left in the output directory: %v", ents)
			}
		})
	}
}
