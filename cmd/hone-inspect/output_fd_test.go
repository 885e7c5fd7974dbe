package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// -o /dev/fd/N with N not handed to the command (no `N>file`) is refused
// as bad usage, naming the descriptor: it was duplicated as it stood in
// the command itself, where N is one of the command's own descriptors
// (an input, the poller, a connection to a server), and the output went
// into that (failing with "bad file descriptor" or "invalid argument",
// or, for a socket, reaching the server). A descriptor it was handed is
// still written into.
func TestOutputIntoADescriptorNotHandedOver(t *testing.T) {
	dir, _, _ := fixtures(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tried := 0
	for n := 3; n <= 12; n++ {
		// A descriptor open here without close-on-exec (one this test
		// was itself started with) is handed to the command too.
		if fl, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0); err == nil && fl&unix.FD_CLOEXEC == 0 {
			continue
		}
		tried++
		o := "/dev/fd/" + strconv.Itoa(n)
		cmd := exec.CommandContext(ctx, binary, "to-jsonl", "-o", o, dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		want := "descriptor " + strconv.Itoa(n) + " was not open when the command started"
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), want) {
			t.Errorf("-o %s, not handed over: %v; stderr %q; want exit 2 saying %q", o, err, stderr.String(), want)
		}
	}
	if tried < 5 {
		t.Fatalf("only %d of descriptors 3 to 12 are free here", tried)
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, binary, "to-jsonl", "-o", "/dev/fd/3", dir)
	var stderr bytes.Buffer
	cmd.Stderr, cmd.ExtraFiles = &stderr, []*os.File{f}
	if err := cmd.Run(); err != nil {
		t.Fatalf("-o /dev/fd/3 with 3>out: %v\n%s", err, stderr.String())
	}
	if got, err := os.ReadFile(out); err != nil || strings.Count(string(got), "\n") != 5 {
		t.Errorf("out holds %q (%v), want 5 lines", got, err)
	}
}

// -o /dev/stdout into a pipe whose reader is gone names the output as
// given: the error named /proc/<pid>/fd/1, the descriptor's path in the
// command, which the user never wrote and which no longer exists.
func TestOutputIntoStdoutNamedAsGiven(t *testing.T) {
	dir, _, _ := fixtures(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // no reader: the first write fails with EPIPE
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "to-jsonl", "-o", "/dev/stdout", dir)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Run()
	if err == nil || !strings.Contains(stderr.String(), `"/dev/stdout": broken pipe`) || strings.Contains(stderr.String(), "/proc/") {
		t.Errorf("-o /dev/stdout into a pipe with no reader: %v; stderr %q; want it named /dev/stdout", err, stderr.String())
	}
}

// -o /dev/fd/3 with 3<FILE (the descriptor open for reading only) writes
// FILE, as a shell's `> /dev/fd/3` does by opening the file anew: the
// descriptor was duplicated as it stood, and the first write failed with
// "bad file descriptor".
func TestOutputIntoReadOnlyDescriptor(t *testing.T) {
	dir, _, _ := fixtures(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(out, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "to-jsonl", "-o", "/dev/fd/3", dir)
	var stderr bytes.Buffer
	cmd.Stderr, cmd.ExtraFiles = &stderr, []*os.File{f}
	if err := cmd.Run(); err != nil {
		t.Fatalf("-o /dev/fd/3 with 3<out: %v\n%s", err, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil || strings.Count(string(got), "\n") != 5 || strings.Contains(string(got), "old") {
		t.Errorf("out holds %q (%v), want the 5 lines alone", got, err)
	}
}
