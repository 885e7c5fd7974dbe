package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
)

// stalledRequest sends, over a raw connection whose client never reads,
// a completion whose answer is far larger than the socket buffers hold
// (64 choices echoing a long prompt with 20 alternatives per token), and
// waits until the engine is done with it: the handler is then writing
// the answer to a client that stopped reading.
func stalledRequest(t *testing.T, ts *testServer) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"model":"tiny","prompt":%q,"max_tokens":1,"n":64,"echo":true,"logprobs":20}`, strings.Repeat("hello there ", 42))
	req := fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	// The answer's first byte: the handler is writing it, and the client
	// reads no more.
	if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatalf("waiting for the answer to begin: %v", err)
	}
	if n := ts.s.active.Load(); n != 1 {
		t.Fatalf("%d requests in flight while the answer is written, want 1", n)
	}
	return c
}

// TestStalledClientEndsAtRequestDeadline: a client that stops reading an
// answer held its handler (and the answer's memory) for as long as the
// connection lived, past the request deadline (--request-timeout), since
// a write to it never returned. The write now ends at the deadline.
func TestStalledClientEndsAtRequestDeadline(t *testing.T) {
	// Long enough for the answer to be generated first, under -race too.
	ts := startServer(t, Options{Model: tinyDir(t), MaxBatch: 64, RequestTimeout: 6 * time.Second}, nil)
	stalledRequest(t, ts)
	waitfor.Until(t, 20*time.Second, "the handler writing to a client that stopped reading to give up at the request deadline", func() bool {
		return ts.s.active.Load() == 0
	})
}

// TestStalledClientDoesNotHoldDrain: on shutdown, a client that stops
// reading keeps its request in flight until the drain timeout, and no
// longer: the server stops soon after it (the handler's write is cut),
// rather than also waiting out the HTTP server's own shutdown grace.
func TestStalledClientDoesNotHoldDrain(t *testing.T) {
	const drain = 300 * time.Millisecond
	ts := startServer(t, Options{Model: tinyDir(t), MaxBatch: 64, DrainTimeout: drain}, nil)
	stalledRequest(t, ts)
	t0 := time.Now()
	ts.stop()
	ts.stop = nil
	var err error
	select {
	case err = <-ts.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop within 30s of a drain timeout of 300ms")
	}
	if took := time.Since(t0); took > drain+3*time.Second {
		t.Errorf("the server stopped %v after the signal, with a drain timeout of %v: a client that stopped reading held it", took, drain)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Serve: %v, want the drain's deadline error (a request was still being answered)", err)
	}
}

// TestStalledBodyEndsAtRequestDeadline: a client that stops sending its
// request body held its handler for as long as the connection lived (the
// server bounds the headers' time only); reading the body now ends at
// the request deadline, answered with a 408.
func TestStalledBodyEndsAtRequestDeadline(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), RequestTimeout: 500 * time.Millisecond}, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head := "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n" + `{"model":"tiny",`
	if _, err := c.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "the request in flight", func() bool { return ts.s.active.Load() == 1 })
	waitfor.Until(t, 15*time.Second, "the handler reading a body that stopped coming to give up at the request deadline", func() bool {
		return ts.s.active.Load() == 0
	})
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "request_timeout") {
		t.Errorf("a body that stopped coming: %d %s, want 408 request_timeout", resp.StatusCode, b)
	}
}
