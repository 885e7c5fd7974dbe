// Package waitfor is the one way Hone's tests wait for something that
// happens on another goroutine or in another process: poll a condition
// until it holds, and fail, saying what was awaited, once a generous limit
// passes. A fixed time.Sleep guesses how long the other side takes, and
// the guess is wrong on a loaded machine; a condition is never early, and
// is as quick as the machine allows.
//
// Tests whose subject is time itself (a ticker, a deadline) use
// testing/synctest's fake clock instead, where the code under test allows.
//
// Buffer holds what a logger or a process writes, for a condition to read
// while the writer runs.
//
// It imports nothing of ours, so that every package's tests may use it.
package waitfor

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// every is how often a condition is polled.
const every = 2 * time.Millisecond

// Within polls cond until it returns true, or limit passes; it reports
// whether cond held. It is for callers that clean up (stop a process,
// release workers) before failing.
func Within(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(every)
	}
	return true
}

// Until polls cond until it returns true, and fails t with "timed out
// after <limit> waiting for <what>" if limit passes first.
func Until(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(limit, cond) {
		t.Fatalf("timed out after %v waiting for %s", limit, what)
	}
}

// Buffer is a bytes.Buffer that one goroutine (a logger, a process's
// stderr) may write while a test polls what it holds.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
