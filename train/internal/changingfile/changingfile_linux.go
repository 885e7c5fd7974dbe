// Package changingfile gives tests a file whose contents change between
// two readings of it, as when another program replaces an input while a
// stage reads it: a named pipe (Linux) whose every opening reads the next
// version.
package changingfile

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// Serve makes path a named pipe whose every opening reads the next of
// versions whole (the last one again once they run out), until t ends.
func Serve(t testing.TB, path string, versions ...[]byte) {
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
			f.Write(versions[min(i, len(versions)-1)])
			f.Close()
			// Opened again while this reader still has it open, the pipe
			// would give it the next version too: wait until it closed.
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
