package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

// hangingBackend blocks every LinearForward once armed, until release is
// closed: a backend call that never returns (a wedged device), which no
// cancellation reaches.
type hangingBackend struct {
	kernels.Backend
	armed   atomic.Bool
	inside  atomic.Bool
	release chan struct{}
}

func (g *hangingBackend) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	if g.armed.Load() {
		g.inside.Store(true)
		<-g.release
	}
	g.Backend.LinearForward(out, inp, weight, bias, N, C, OC)
}

// TestShutdownStuckStep: when the engine's step is stuck inside a backend
// call, Shutdown still returns once its ctx ended and StopGrace passed,
// with an error saying the step did not end (ErrStepStuck, and the ctx's
// error), and the requests running and queued get ErrClosed from Next
// rather than waiting with the step. Before, Shutdown waited on the
// engine's loop for ever, and so did the server's process.
func TestShutdownStuckStep(t *testing.T) {
	be := &hangingBackend{Backend: ref.New(), release: make(chan struct{})}
	m, tok := tinyOn(t, be)
	// Released at the end so that the loop's goroutine ends with the test.
	t.Cleanup(func() { close(be.release) })
	e := New(m, Config{MaxBatch: 1, Tokenizer: tok, StopGrace: 100 * time.Millisecond})
	be.armed.Store(true)
	req := func() *Handle {
		h, err := e.Submit(&Request{Ctx: context.Background(), Prompt: []int32{1, 2, 3}, N: 1, Params: Params{MaxTokens: 4, Temperature: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	running, queued := req(), req()
	waitfor.Until(t, 10*time.Second, "the step to be inside the backend", be.inside.Load)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- e.Shutdown(ctx) }()
	select {
	case err := <-got:
		if !errors.Is(err, ErrStepStuck) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not end") {
			t.Fatalf("Shutdown: %v, want ErrStepStuck and the deadline", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown still waits on a step stuck in the backend")
	}
	for name, h := range map[string]*Handle{"running": running, "queued": queued} {
		nctx, ncancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, _, err := h.Next(nctx)
		ncancel()
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("the %s request after Shutdown gave up on the step: %v, want ErrClosed", name, err)
		}
	}
}

// wedgedBackend is a hangingBackend whose memory it hands out through
// kernels.Allocator, and whose frees block once wedged is set until unwedge
// is closed: a device that stays wedged after the stuck call came back.
type wedgedBackend struct {
	*hangingBackend
	wedged  atomic.Bool
	freed   atomic.Int64 // frees asked for while wedged
	unwedge chan struct{}
}

func (g *wedgedBackend) AllocF32(n int) ([]float32, error) { return make([]float32, n), nil }
func (g *wedgedBackend) AllocBF16(n int) ([]uint16, error) { return make([]uint16, n), nil }
func (g *wedgedBackend) FreeF32(s []float32)               { g.free() }
func (g *wedgedBackend) FreeBF16(s []uint16)               { g.free() }

func (g *wedgedBackend) free() {
	if g.wedged.Load() {
		g.freed.Add(1)
		<-g.unwedge
	}
}

// TestStuckStepReturnsLateTouchesNothing: once Shutdown gave up on a stuck
// step (ErrStepStuck), a step that comes back later ends the engine's
// goroutine without calling into the backend again (no frees of the cache's
// or the logits' memory, which a device still wedged would hold for ever)
// and without calling the requests' Done hooks, as Shutdown's doc says.
// Before, the loop went on to fail the requests (Done hooks) and free
// their rows and the logits, and with a wedged free its goroutine never
// ended.
func TestStuckStepReturnsLateTouchesNothing(t *testing.T) {
	be := &wedgedBackend{hangingBackend: &hangingBackend{Backend: ref.New(), release: make(chan struct{})}, unwedge: make(chan struct{})}
	m, tok := tinyOn(t, be)
	t.Cleanup(func() { close(be.unwedge) })
	e := New(m, Config{MaxBatch: 1, Tokenizer: tok, StopGrace: 50 * time.Millisecond})
	be.armed.Store(true)
	var done atomic.Int64
	for range 2 { // one running, one queued
		_, err := e.Submit(&Request{Ctx: context.Background(), Prompt: []int32{1, 2, 3}, N: 1,
			Params: Params{MaxTokens: 1, Temperature: 1}, Done: func() { done.Add(1) }})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitfor.Until(t, 10*time.Second, "the step to be inside the backend", be.inside.Load)
	giveUpThenRelease(t, e, be, be.release, &done)
}

// giveUpThenRelease has Shutdown give up on e's stuck step (ErrStepStuck),
// wedges be's frees, closes release (the step comes back) and checks that
// the engine's goroutine ends without asking be to free anything or
// calling a Done hook (done counts them).
func giveUpThenRelease(t *testing.T, e *Engine, be *wedgedBackend, release chan struct{}, done *atomic.Int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := e.Shutdown(ctx); !errors.Is(err, ErrStepStuck) {
		t.Fatalf("Shutdown: %v, want ErrStepStuck", err)
	}
	be.wedged.Store(true)
	close(release)
	stopped := func() bool {
		select {
		case <-e.stopped:
			return true
		default:
			return false
		}
	}
	waitfor.Until(t, 10*time.Second, "the engine's goroutine to end once the stuck step came back", stopped)
	if n := be.freed.Load(); n != 0 {
		t.Errorf("%d frees asked of the backend after Shutdown gave up on it, want none", n)
	}
	if n := done.Load(); n != 0 {
		t.Errorf("%d Done hooks called after Shutdown gave up on the step, want none", n)
	}
}

// blockingMask is a Constraint whose Mask, the step's sampling, blocks
// until release is closed: a step stuck after its model call returned.
type blockingMask struct {
	inside  *atomic.Bool
	release chan struct{}
}

func (c blockingMask) Mask([]float32) {
	c.inside.Store(true)
	<-c.release
}

func (c blockingMask) Accept(int32) error { return nil }

// TestGiveUpDuringSampling: when Shutdown gives up on a step stuck in its
// sampling (after the model call returned), the step that comes back later
// delivers nothing and touches nothing: its sequence is not finished (no
// Done hook, no free of its rows asked of a backend that may be wedged),
// and the request's Next fails with ErrClosed and ErrStepStuck rather than
// handing out a token and a finish after Shutdown said it gave up. Before,
// gaveUp was checked only after the model call, so the step went on to
// emit the token, finish the sequence, call its Done hook and free its
// rows; with a wedged free, the engine's goroutine never ended.
func TestGiveUpDuringSampling(t *testing.T) {
	be := &wedgedBackend{hangingBackend: &hangingBackend{Backend: ref.New(), release: make(chan struct{})}, unwedge: make(chan struct{})}
	m, tok := tinyOn(t, be)
	t.Cleanup(func() { close(be.unwedge) })
	e := New(m, Config{MaxBatch: 1, Tokenizer: tok, StopGrace: 50 * time.Millisecond})
	var inside atomic.Bool
	release := make(chan struct{})
	var done atomic.Int64
	h, err := e.Submit(&Request{Ctx: context.Background(), Prompt: []int32{1, 2, 3}, N: 1,
		Params: Params{MaxTokens: 1, Temperature: 1}, Done: func() { done.Add(1) },
		Constraint: func(int) Constraint { return blockingMask{inside: &inside, release: release} }})
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "the step to be sampling", inside.Load)
	giveUpThenRelease(t, e, be, release, &done)
	nctx, ncancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ncancel()
	evs, fin, err := h.Next(nctx)
	if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrStepStuck) {
		t.Fatalf("Next after the give-up: events %+v, done %v, err %v; want ErrClosed and ErrStepStuck", evs, fin, err)
	}
}

// copyHangingBackend is a wedgedBackend whose Copy of exactly n floats
// blocks once armed, until release is closed: a copy of prompt rows from
// the prefix cache stuck on the device while the engine admits requests.
type copyHangingBackend struct {
	*wedgedBackend
	n       int
	armed   atomic.Bool
	inside  atomic.Bool
	release chan struct{}
}

func (g *copyHangingBackend) Copy(dst, src []float32, n int) {
	if g.armed.Load() && n == g.n {
		g.inside.Store(true)
		<-g.release
	}
	g.wedgedBackend.Copy(dst, src, n)
}

// TestGiveUpDuringAdmission: when Shutdown gives up on the engine while it
// is stuck admitting a request (its prompt's rows being copied from the
// prefix cache), the admission that comes back later admits no more
// requests: the next one in the queue is not started (its rows freed on a
// backend that may be wedged, its Done hook called after Shutdown said it
// gave up), and the engine's goroutine ends. Before, admit went on through
// the queue once the copy returned.
func TestGiveUpDuringAdmission(t *testing.T) {
	be := &copyHangingBackend{wedgedBackend: &wedgedBackend{hangingBackend: &hangingBackend{Backend: ref.New(), release: make(chan struct{})},
		unwedge: make(chan struct{})}, release: make(chan struct{})}
	m, tok := tinyOn(t, be)
	t.Cleanup(func() { close(be.unwedge) })
	e := New(m, Config{MaxBatch: 2, Tokenizer: tok, PrefixCaching: true, StopGrace: 50 * time.Millisecond})
	prompt := []int32{72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10, 71, 117, 101, 115, 115, 58, 32}
	// Its 21 rows are kept; a prompt sharing 17 of them copies those.
	run(t, e, &Request{Prompt: prompt, N: 1, Params: Params{MaxTokens: 2, IgnoreEOS: true}})
	be.n = 17 * m.Config.KVHeads * m.Config.HeadDim
	stopBlocker := block(t, e, 2)
	var done atomic.Int64
	for _, r := range []*Request{
		{Prompt: append(slices.Clone(prompt[:17]), 63, 63, 63), N: 1, Params: Params{MaxTokens: 3, IgnoreEOS: true}},
		{Prompt: []int32{33, 34, 35}, N: 1, Params: Params{MaxTokens: 0}},
	} {
		r.Done = func() { done.Add(1) }
		if _, err := e.Submit(r); err != nil {
			t.Fatal(err)
		}
	}
	be.armed.Store(true)
	stopBlocker()
	waitfor.Until(t, 10*time.Second, "the admission to be copying kept rows", be.inside.Load)
	giveUpThenRelease(t, e, be.wedgedBackend, be.release, &done)
}
