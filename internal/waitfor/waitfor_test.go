package waitfor

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWithinSeesAChangeFromAnotherGoroutine(t *testing.T) {
	var flag atomic.Bool
	go func() {
		time.Sleep(20 * time.Millisecond) // sleep: the other side, slower than one poll
		flag.Store(true)
	}()
	if !Within(10*time.Second, flag.Load) {
		t.Fatal("Within missed a condition that came true")
	}
}

func TestWithinGivesUp(t *testing.T) {
	polls := 0
	start := time.Now()
	if Within(30*time.Millisecond, func() bool { polls++; return false }) {
		t.Fatal("Within reported a condition that never held")
	}
	if d := time.Since(start); d < 30*time.Millisecond || polls < 2 {
		t.Fatalf("gave up after %v and %d polls, want at least the limit and more than one poll", d, polls)
	}
}

// recorder is a testing.TB that keeps the failure instead of ending the
// test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestUntilFailsNamingWhat(t *testing.T) {
	r := &recorder{TB: t}
	Until(r, time.Millisecond, "the moon", func() bool { return false })
	if !strings.Contains(r.msg, "waiting for the moon") {
		t.Fatalf("Until on a condition that never held failed with %q, want it to name what it waited for", r.msg)
	}
	r.msg = ""
	Until(r, time.Second, "now", func() bool { return true })
	if r.msg != "" {
		t.Fatalf("Until failed on a condition that held: %q", r.msg)
	}
}

// Buffer is written and read at once without a race (go test -race).
func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			fmt.Fprint(&b, "x")
		}
	}()
	Until(t, 10*time.Second, "100 bytes", func() bool { return len(b.String()) == 100 })
	<-done
	if b.String() != strings.Repeat("x", 100) {
		t.Fatalf("Buffer holds %q", b.String())
	}
}
