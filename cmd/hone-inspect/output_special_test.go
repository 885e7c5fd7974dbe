package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// -o naming a pipe or device (/dev/null, /dev/stdout, bash's >(…), a
// FIFO) writes into it, as a shell redirect does: the output's temporary
// file was renamed over it, so `-o /dev/null` run as root replaced the
// system's /dev/null with a regular file, and a FIFO's reader never got
// a byte.
func TestOutputIntoFIFO(t *testing.T) {
	dir, _, _ := fixtures(t)
	fifo := filepath.Join(t.TempDir(), "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// A reader that holds the FIFO open without blocking, so that the
	// writer's open succeeds; the output (a few JSON lines) fits in the
	// pipe's buffer.
	rfd, err := syscall.Open(fifo, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := os.NewFile(uintptr(rfd), fifo)
	defer r.Close()
	mustRun(t, nil, "to-jsonl", "-o", fifo, dir)
	st, err := os.Lstat(fifo)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("after -o %s: %v, mode %v; want the FIFO still there", fifo, err, st.Mode())
	}
	if err := syscall.SetNonblock(rfd, false); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(got), "\n"); n != 5 || !strings.Contains(string(got), `"trajectory_id"`) {
		t.Errorf("read %d lines from the FIFO:\n%s", n, got)
	}
}

// A glob that matches something other than a regular file (here a link
// to the character device /dev/null; to /dev/zero or a terminal it read
// without end) is refused, naming the match: a glob means files, and a
// pipe or device is read only when named on its own.
func TestGlobRefusesDeviceMatch(t *testing.T) {
	dir, _, _ := fixtures(t)
	link := filepath.Join(t.TempDir(), "zz.parquet")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(filepath.Dir(link), "*.parquet")
	r := run(t, nil, "stats", dir, pattern)
	if r.code != 2 || !strings.Contains(r.stderr, link) || !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("stats %s: exit %d, stderr %q; want a refusal naming %s as not a regular file", pattern, r.code, r.stderr, link)
	}
}
