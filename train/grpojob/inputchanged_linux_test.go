package grpojob

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/stageerr"
	"github.com/hone-rl/hone/internal/waitfor"
)

// serveChanging makes path a named pipe whose every opening reads the
// next of contents whole (the last one again once they run out): a file
// that another program replaces between two readings of it.
func serveChanging(t *testing.T, path string, contents ...[]byte) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for i := 0; ; i++ {
			f, err := os.OpenFile(path, os.O_WRONLY, 0) // until a reader opens it
			if err != nil {
				return
			}
			select {
			case <-done:
				f.Close()
				return
			default:
			}
			f.Write(contents[min(i, len(contents)-1)])
			f.Close()
			// Opened again while this reader still has it open, the pipe
			// would give it the next contents too: wait until it closed.
			if !waitfor.Within(time.Minute, func() bool { return !openHere(path) }) {
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		// The writer waits in its open for a reader: be the one, so it
		// sees done.
		if r, err := os.Open(path); err == nil {
			io.Copy(io.Discard, r)
			r.Close()
		}
		<-finished
	})
}

// openHere reports whether this process has path open.
func openHere(path string) bool {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p // what /proc names it by
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && l == path {
			return true
		}
	}
	return false
}

// TestInputChangedWhileReadIsRefused: an input file whose contents change
// between the run's readings of it is refused, naming it, before anything
// is saved. The run decoded one version and hashed the next, so its
// session recorded as trained contents it never trained, and the same
// command given those contents then took them as done.
func TestInputChangedWhileReadIsRefused(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	writeGroups(t, md, a, 2, 4, varied)
	writeGroups(t, md, b, 3, 4, varied)
	first, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "round.parquet")
	serveChanging(t, in, first, second)
	o := baseOptions(md, filepath.Join(dir, "adapters"), "r", in)
	o.Steps = 1
	err = runWith(context.Background(), backend(t), o, nil)
	if err == nil || !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("run on an input that changed: %v, want an error naming %s as changed", err, in)
	}
	if _, err := os.Stat(filepath.Join(dir, "adapters", "r", runfolder.LatestName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused run saved a step (%v)", err)
	}
}

// TestMissingInputIsBadInput: an input file gone by the time the run reads
// it is bad input (exit code 2), naming it, as the load reported it before
// the inputs were hashed first.
func TestMissingInputIsBadInput(t *testing.T) {
	dir := t.TempDir()
	md := tinyModel(t, dir)
	in := filepath.Join(dir, "gone.parquet")
	o := baseOptions(md, filepath.Join(dir, "adapters"), "r", in)
	o.Steps = 1
	err := runWith(context.Background(), backend(t), o, nil)
	if !errors.Is(err, stageerr.ErrBadInput) || !strings.Contains(err.Error(), in) {
		t.Fatalf("run on a missing input: %v, want bad input naming %s", err, in)
	}
}
