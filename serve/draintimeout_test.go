package serve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/serve/engine"
)

// TestDrainTimeoutLogged: when the drain timeout passes with requests still
// in flight, the log says so and how many are failed (the client gets a
// 503), and Serve returns the deadline error (hone-serve's exit 130). The
// operator was told nothing: the drain began, then the process ended
// "interrupted", with no word that requests were cut off.
func TestDrainTimeoutLogged(t *testing.T) {
	be := &gatedBackend{Backend: ref.New(), release: make(chan struct{})}
	var log waitfor.Buffer
	ts := startServer(t, Options{Model: tinyDir(t), Backend: be, DrainTimeout: 50 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&log, nil))}, nil)
	type reply struct {
		status int
		body   string
	}
	got := make(chan reply, 1)
	open := sync.OnceFunc(func() {
		be.armed.Store(false)
		close(be.release)
	})
	t.Cleanup(open)      // before the server's cleanup, which drains it
	be.armed.Store(true) // the request's first step waits for the gate
	go func() {
		status, body := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":5}`)
		got <- reply{status, body}
	}()
	waitfor.Until(t, 10*time.Second, "the request to be in flight", func() bool { return ts.s.active.Load() == 1 && ts.s.eng.Stats().Running == 1 })
	ts.stop()
	waitfor.Until(t, 10*time.Second, "the drain timeout to be logged", func() bool {
		return strings.Contains(log.String(), "drain timed out") && strings.Contains(log.String(), "in_flight=1")
	})
	open()
	r := <-got
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "shutting down") {
		t.Fatalf("request cut off by the drain timeout: %d %s", r.status, r.body)
	}
	if err := <-ts.done; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Serve: %v, want the drain's deadline error", err)
	}
	ts.stop = nil
}

// TestDrainStuckStep: when the engine's step is stuck inside the backend
// (a call that never returns), Serve still returns once the drain timeout
// and the engine's grace passed, with an error saying the step did not
// end, and the request it held gets a 503. Before, Serve waited on the
// engine for ever, and hone-serve never exited on SIGTERM.
func TestDrainStuckStep(t *testing.T) {
	be := &gatedBackend{Backend: ref.New(), release: make(chan struct{})}
	ts := startServer(t, Options{Model: tinyDir(t), Backend: be, DrainTimeout: 50 * time.Millisecond}, nil)
	// Opened only when the test ends: until then the step never returns.
	t.Cleanup(func() { close(be.release) })
	got := make(chan int, 1)
	be.armed.Store(true)
	go func() {
		status, _ := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":5}`)
		got <- status
	}()
	waitfor.Until(t, 10*time.Second, "the request to be in flight", func() bool { return ts.s.active.Load() == 1 && ts.s.eng.Stats().Running == 1 })
	ts.stop()
	ts.stop = nil
	select {
	case err := <-ts.done:
		if !errors.Is(err, engine.ErrStepStuck) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not end") {
			t.Fatalf("Serve: %v, want the stuck step's error", err)
		}
	case <-time.After(engine.DefaultStopGrace + 20*time.Second):
		t.Fatal("Serve still waits on a step stuck in the backend")
	}
	if status := <-got; status != http.StatusServiceUnavailable {
		t.Fatalf("the request held by the stuck step: %d, want 503", status)
	}
}

// TestServeErrorStuckStep: when the listener fails (Serve's accept loop
// ends with an error) while a request is in flight and the engine's step is
// stuck inside the backend, Serve drains as on a stop: it returns once
// DrainTimeout and the engine's grace passed, with the listener's error and
// the stuck step's in words (a failure, exit 1, not an interrupt), and the
// request gets a 503. Before, Serve waited on the
// engine with no deadline, so hone-serve hung instead of exiting 1.
func TestServeErrorStuckStep(t *testing.T) {
	be := &gatedBackend{Backend: ref.New(), release: make(chan struct{})}
	s, err := NewServer(Options{Model: tinyDir(t), Backend: be, DrainTimeout: 50 * time.Millisecond,
		Log: slog.New(slog.DiscardHandler)}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), ln) }()
	// Opened only when the test ends: until then the step never returns.
	t.Cleanup(func() { close(be.release) })
	be.armed.Store(true)
	got := make(chan int, 1)
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/completions", "application/json",
			strings.NewReader(`{"model":"tiny","prompt":"x","max_tokens":5}`))
		if err != nil {
			got <- 0
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	waitfor.Until(t, 10*time.Second, "the request to be in flight", func() bool { return s.active.Load() == 1 && s.eng.Stats().Running == 1 })
	ln.Close() // the accept loop fails: not a stop, an error
	select {
	case err := <-done:
		// A failure (exit 1), not an interrupt: the drain's deadline is not
		// among the error's causes, only in its words.
		if !errors.Is(err, net.ErrClosed) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not end") {
			t.Fatalf("Serve: %v, want the listener's error, and the stuck step's in words", err)
		}
	case <-time.After(engine.DefaultStopGrace + 20*time.Second):
		t.Fatal("Serve still waits on a step stuck in the backend after its listener failed")
	}
	if status := <-got; status != http.StatusServiceUnavailable {
		t.Fatalf("the request held by the stuck step: %d, want 503", status)
	}
}
