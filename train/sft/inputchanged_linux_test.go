package sft

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/internal/waitfor"
)

// serveChanging (as in train/grpojob's tests) makes path a named pipe whose every opening reads the
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
// is saved. The run trained one version and saved the next one's sha256
// as its inputs_sha256, so a resume on that version passed as the same
// data.
func TestInputChangedWhileReadIsRefused(t *testing.T) {
	dir, md, data := setup(t)
	first, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "round.jsonl")
	serveChanging(t, in, first, append(first, first...))
	err = warmRun(t, dir, md, in)(1, false)
	if err == nil || !strings.Contains(err.Error(), in) || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("run on an input that changed: %v, want an error naming %s as changed", err, in)
	}
	if _, err := os.Stat(filepath.Join(dir, "warm", runfolder.LatestName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused run saved a step (%v)", err)
	}
}
