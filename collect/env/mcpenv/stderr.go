package mcpenv

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// stderrTail keeps the last bytes a stdio server writes on stderr, for the
// errors of a server that fails as it starts (a traceback, a missing
// setting): the SDK's transport leaves stderr unset, which discards it.
// It reads a pipe of its own, whose write end only the server's processes
// hold once started, so the tail is whole when the server's process group
// is gone.
type stderrTail struct {
	w    *os.File // our copy of the write end, closed once the server started
	done chan struct{}

	mu  sync.Mutex
	b   []byte
	cut bool // bytes before b were dropped
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
	t := &stderrTail{w: w, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer r.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			t.add(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	return t, nil
}

func (t *stderrTail) add(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > stderrTailMax {
		t.b, t.cut = t.b[len(t.b)-stderrTailMax:], true
	}
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
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	for i := 0; t.cut && i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	if s := strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD"); s != "" {
		return "; stderr: " + s
	}
	return ""
}
