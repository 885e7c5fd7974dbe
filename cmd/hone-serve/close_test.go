package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/hone-rl/hone/serve/engine"
)

// closeCounter counts Close calls; a real CUDA backend's Close takes the
// lock a stuck step holds, so calling it would block.
type closeCounter struct{ n int }

func (c *closeCounter) Close() error { c.n++; return nil }

// TestBackendLeftOpenAfterStuckStep: when the engine gave up on a step
// stuck in the backend (a wedged device), hone-serve leaves the backend
// open and exits; closing it waited on the stuck step's lock, holding the
// exit the engine had just given up on. Any other end closes it.
func TestBackendLeftOpenAfterStuckStep(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	stuck := &closeCounter{}
	closeBackend(stuck, fmt.Errorf("serve: drain: %w", engine.ErrStepStuck), log)
	if stuck.n != 0 || !strings.Contains(logged.String(), "stuck") {
		t.Errorf("after a stuck step: %d Close calls (want 0), log:\n%s", stuck.n, logged.String())
	}
	for _, err := range []error{nil, engine.ErrClosed} {
		c := &closeCounter{}
		closeBackend(c, err, log)
		if c.n != 1 {
			t.Errorf("after %v: %d Close calls, want 1", err, c.n)
		}
	}
}
