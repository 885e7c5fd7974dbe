package serve

import (
	"context"
	"errors"
	"log/slog"
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
