package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// doneCount is a Request.Done hook that counts its calls.
type doneCount struct{ n atomic.Int32 }

func (d *doneCount) hook() func() { return func() { d.n.Add(1) } }

func (d *doneCount) want(t *testing.T, what string, n int32) {
	t.Helper()
	if got := d.n.Load(); got != n {
		t.Fatalf("%s: Done called %d times, want %d", what, got, n)
	}
}

// drain reads h to its end and returns its last event.
func drain(t *testing.T, h *Handle) Event {
	t.Helper()
	var last Event
	for {
		evs, done, err := h.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 0 {
			last = evs[len(evs)-1]
		}
		if done {
			return last
		}
	}
}

// TestDoneOnce: Request.Done is called exactly once, before the request's
// last event is delivered, on every way out: finished (n = 3, and
// max_tokens 0), refused at Submit (too large, queue full, closed),
// cancelled while queued or running, and failed by a Shutdown that ran out
// of time.
func TestDoneOnce(t *testing.T) {
	m, tok := tiny(t)
	e := New(m, Config{Tokenizer: tok, MaxBatch: 3, MaxQueue: 1})
	long := Params{MaxTokens: 100000 - 10, IgnoreEOS: true}

	var fin, zero doneCount
	wait(t, mustSubmit(t, e, &Request{Prompt: []int32{1, 2}, N: 3, Params: Params{MaxTokens: 4, IgnoreEOS: true}, Done: fin.hook()}), 3)
	fin.want(t, "finished n=3", 1)
	wait(t, mustSubmit(t, e, &Request{Prompt: []int32{1, 2}, N: 1, Params: Params{MaxTokens: 0}, Done: zero.hook()}), 1)
	zero.want(t, "max_tokens 0", 1)

	var big doneCount
	if _, err := e.Submit(&Request{Prompt: []int32{1}, N: 4, Params: Params{MaxTokens: 2}, Done: big.hook()}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("n over the batch: %v, want ErrTooLarge", err)
	}
	big.want(t, "refused as too large", 1)

	// A running request fills the batch; one more waits in the queue.
	var running, queued, full doneCount
	rctx, rcancel := context.WithCancel(context.Background())
	hr := mustSubmit(t, e, &Request{Ctx: rctx, Prompt: []int32{1}, N: 3, Params: long, Done: running.hook()})
	if _, _, err := hr.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	qctx, qcancel := context.WithCancel(context.Background())
	hq := mustSubmit(t, e, &Request{Ctx: qctx, Prompt: []int32{1}, N: 1, Params: long, Done: queued.hook()})
	if _, err := e.Submit(&Request{Prompt: []int32{1}, N: 1, Params: long, Done: full.hook()}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("queue full: %v, want ErrQueueFull", err)
	}
	full.want(t, "refused with the queue full", 1)
	qcancel()
	if ev := drain(t, hq); !errors.Is(ev.Err, context.Canceled) {
		t.Fatalf("cancelled queued request ended with %+v", ev)
	}
	queued.want(t, "cancelled in the queue", 1)
	running.want(t, "still running", 0)
	rcancel()
	if ev := drain(t, hr); !errors.Is(ev.Err, context.Canceled) {
		t.Fatalf("cancelled running request ended with %+v", ev)
	}
	running.want(t, "cancelled while running", 1)

	// Shutdown runs out of time: the running and the queued request fail.
	var killedRun, killedQueue, closed doneCount
	hk := mustSubmit(t, e, &Request{Prompt: []int32{1}, N: 3, Params: long, Done: killedRun.hook()})
	if _, _, err := hk.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	hkq := mustSubmit(t, e, &Request{Prompt: []int32{1}, N: 1, Params: long, Done: killedQueue.hook()})
	sctx, scancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer scancel()
	if err := e.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want the deadline", err)
	}
	for _, h := range []*Handle{hk, hkq} {
		if ev := drain(t, h); !errors.Is(ev.Err, ErrClosed) {
			t.Fatalf("request ended by Shutdown with %+v", ev)
		}
	}
	killedRun.want(t, "running at Shutdown", 1)
	killedQueue.want(t, "queued at Shutdown", 1)
	if _, err := e.Submit(&Request{Prompt: []int32{1}, N: 1, Params: long, Done: closed.hook()}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Shutdown: %v, want ErrClosed", err)
	}
	closed.want(t, "refused after Shutdown", 1)
	for _, d := range []*doneCount{&fin, &zero, &big, &running, &queued, &full, &killedRun, &killedQueue} {
		d.want(t, "at the end", 1)
	}
}

func mustSubmit(t *testing.T, e *Engine, r *Request) *Handle {
	t.Helper()
	h, err := e.Submit(r)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestDoneFreesAdapter: a Done hook that frees the request's adapter (what
// hone-serve's release does to a dropped step) runs only once no step can
// include the request: behind kerneltest.Resident, which panics when an op
// reads freed memory, choice 0 stops at its first token while choices 1
// and 2 decode on (freeing at the first sequence's end would panic the
// next step); a request cancelled next to another on the same adapter
// retires alone, and the other, held on until then, frees the adapter at
// its end; once the
// engine is shut down and the model closed, nothing is left.
func TestDoneFreesAdapter(t *testing.T) {
	dir := filepath.Join("..", "testdata", "tiny")
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	be := kerneltest.Resident(ref.New())
	m, err := model.Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	placed := func(seed uint64) *model.Adapter {
		ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: model.AllModules()}, seed)
		if err != nil {
			t.Fatal(err)
		}
		if err := ad.Place(be); err != nil {
			t.Fatal(err)
		}
		return ad
	}
	const eos = 3
	e := New(m, Config{Tokenizer: tok, EOS: []int32{eos}, PrefixCaching: true})
	a1, a2 := placed(1), placed(2)
	var freed1, freed2 atomic.Int32
	// Choice 0 ends at once (EOS); 1 and 2 run 8 tokens on the same adapter.
	h1 := mustSubmit(t, e, &Request{Prompt: []int32{104, 105}, N: 3, Params: Params{MaxTokens: 8},
		Adapter: a1, Done: func() { freed1.Add(1); a1.Free() },
		Constraint: func(i int) Constraint {
			if i == 0 {
				return maskTo{eos}
			}
			return maskTo{'x'}
		}})
	// Two requests on a2: the first is cancelled mid-way, the second runs on.
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled atomic.Int32
	hc := mustSubmit(t, e, &Request{Ctx: ctx, Prompt: []int32{104, 105, 106}, N: 1, Params: Params{MaxTokens: 100000 - 10, IgnoreEOS: true},
		Adapter: a2, Done: func() { cancelled.Add(1) }})
	// The second writes x until the test has seen the first cancelled,
	// then ends: it cannot finish (and free a2) while the first still
	// decodes on a2, however the goroutines are scheduled.
	var stopH2 atomic.Bool
	h2 := mustSubmit(t, e, &Request{Prompt: []int32{104, 105, 107}, N: 1, Params: Params{MaxTokens: 100000 - 10},
		Adapter: a2, Done: func() { freed2.Add(1); a2.Free() },
		Constraint: func(int) Constraint { return xUntil{stop: &stopH2, eos: eos} }})
	out := wait(t, h1, 3)
	if out[0].finish != "stop" || out[1].text != "xxxxxxxx" || out[2].text != "xxxxxxxx" {
		t.Fatalf("outputs %+v, want choice 0 stopped and 1, 2 eight x", out)
	}
	if n := freed1.Load(); n != 1 {
		t.Fatalf("Done of the n=3 request called %d times by its end, want 1", n)
	}
	if _, _, err := hc.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The second is decoding too: the cancel falls next to it.
	h2first, _, err := h2.Next(context.Background())
	if err != nil || len(h2first) == 0 || h2first[0].Token != 'x' {
		t.Fatalf("the second a2 request's first events %+v, %v; want x", h2first, err)
	}
	cancel()
	if ev := drain(t, hc); !errors.Is(ev.Err, context.Canceled) {
		t.Fatalf("cancelled request ended with %+v", ev)
	}
	if n := cancelled.Load(); n != 1 {
		t.Fatalf("Done of the cancelled request called %d times, want 1", n)
	}
	if n := freed2.Load(); n != 0 {
		t.Fatalf("Done of the second a2 request called %d times before it ended, want 0", n)
	}
	stopH2.Store(true)
	if got := wait(t, h2, 1)[0]; got.finish != "stop" || strings.Trim(got.text, "x") != "" {
		t.Fatalf("the request next to the cancelled one ended %+v, want x… then a stop", got)
	}
	if n := freed2.Load(); n != 1 {
		t.Fatalf("Done of the second a2 request called %d times, want 1", n)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if n := be.Live(); n != 0 {
		t.Fatalf("%d allocations live after Shutdown and the model's Close, want 0", n)
	}
}

// xUntil allows only 'x' until stop is set, then only eos.
type xUntil struct {
	stop *atomic.Bool
	eos  int32
}

func (c xUntil) Mask(l []float32) {
	if c.stop.Load() {
		maskTo{c.eos}.Mask(l)
		return
	}
	maskTo{'x'}.Mask(l)
}

// Accept takes either: stop may be set between Mask and Accept.
func (c xUntil) Accept(id int32) error {
	if id != 'x' && id != c.eos {
		return fmt.Errorf("got %d, want 'x' or %d", id, c.eos)
	}
	return nil
}
