package mcpenv

import (
	"os"
	"os/exec"
	"time"

	"github.com/hone-rl/hone/internal/procgroup"
)

// stderrTail keeps the last bytes a stdio server writes on stderr, for the
// errors of a server that fails as it starts (a traceback, a missing
// setting): the SDK's transport leaves stderr unset, which discards it.
// It reads a pipe of its own, whose write end only the server's processes
// hold once started, so the tail is whole when the server's process group
// is gone.
type stderrTail struct {
	tail *procgroup.Tail // what the pipe brought
	w    *os.File        // our copy of the write end, closed once the server started
	done chan struct{}
}

// stderrTailMax is how much of the server's stderr an error quotes.
const stderrTailMax = 4096

// captureStderr gives cmd a stderr pipe read into the returned tail.
func captureStderr(cmd *exec.Cmd) (*stderrTail, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = w
	t := &stderrTail{tail: procgroup.NewTail(stderrTailMax), w: w, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer r.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			t.tail.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	return t, nil
}

// started closes our write end: the pipe ends when the server's
// processes have all closed theirs. Nil-safe, as the tail of a URL's
// server is nil.
func (t *stderrTail) started() {
	if t != nil {
		t.w.Close()
	}
}

// quote is "; stderr: …" with the tail, or "" when there is none, once the
// server's processes are gone (the caller stopped them), waiting a second
// at most for the pipe to end. The quote is UTF-8, a character the cut
// fell inside left out, as it becomes a row's error string.
func (t *stderrTail) quote() string {
	if t == nil {
		return ""
	}
	select {
	case <-t.done:
	case <-time.After(time.Second):
	}
	return t.tail.Quote()
}
