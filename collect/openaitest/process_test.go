package openaitest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as the real one does, so a test can check a failure.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// A server that exits before it listens fails StartProcess at once, with
// what it wrote to stderr, not after the minute's wait.
func TestStartProcessExitedEarly(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		StartProcess(rec, "sh", "-c", "echo 'no model folder given' >&2; exit 2")
	}()
	<-done
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("StartProcess took %v to fail on a process that exited at once", took)
	}
	if !strings.Contains(rec.msg, "exited before") || !strings.Contains(rec.msg, "no model folder given") {
		t.Errorf("failure %q does not say the process exited and quote its stderr", rec.msg)
	}
}

// A stderr line longer than a bufio.Scanner takes (64 KiB) does not stop
// the reading: the listening line after it is still found.
func TestStartProcessLongStderrLine(t *testing.T) {
	addr := StartProcess(t, "sh", "-c", `head -c 100000 /dev/zero | tr '\0' x >&2; echo >&2; echo 'level=INFO msg="x listening" addr=127.0.0.1:1' >&2; exec sleep 30`)
	if addr != "127.0.0.1:1" {
		t.Errorf("address %q, want 127.0.0.1:1", addr)
	}
}
