package serve

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/openai/openai-go/v3"

	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/serve/adapters"
)

// trackBackend is kerneltest.Resident (an op on memory that is not a live
// allocation panics, so a step reading a freed adapter fails loudly) that
// also records when watched allocations are freed, and can hold the
// engine inside a step: while the gate is shut, RMSNormForward (every
// step calls it) waits.
type trackBackend struct {
	*kerneltest.ResidentBackend

	mu      sync.Mutex
	watched map[uintptr]bool // address of a watched allocation → freed since
	gate    chan struct{}
	waiting atomic.Int32 // ops waiting at the gate
}

func newTrackBackend() *trackBackend {
	return &trackBackend{ResidentBackend: kerneltest.Resident(ref.New()), watched: map[uintptr]bool{}}
}

func (b *trackBackend) FreeF32(s []float32) {
	if len(s) > 0 {
		b.mu.Lock()
		if freed, ok := b.watched[addr(s)]; ok && !freed {
			b.watched[addr(s)] = true
		}
		b.mu.Unlock()
	}
	b.ResidentBackend.FreeF32(s)
}

func (b *trackBackend) RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	b.mu.Lock()
	gate := b.gate
	b.mu.Unlock()
	if gate != nil {
		b.waiting.Add(1)
		<-gate
		b.waiting.Add(-1)
	}
	b.ResidentBackend.RMSNormForward(out, rstd, inp, weight, N, C, eps)
}

// shut makes the next step wait at the gate; it returns what opens it.
func (b *trackBackend) shut() (open func()) {
	gate := make(chan struct{})
	b.mu.Lock()
	b.gate = gate
	b.mu.Unlock()
	return sync.OnceFunc(func() {
		b.mu.Lock()
		b.gate = nil
		b.mu.Unlock()
		close(gate)
	})
}

func addr(s []float32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }

// watch records the allocations of a loaded adapter's tensors (resolved
// and released again) and returns their addresses. An address is only
// reused after it was freed, so the first free seen of each is the
// adapter's.
func (b *trackBackend) watch(t *testing.T, reg *adapters.Registry, name string) []uintptr {
	t.Helper()
	a, err := reg.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	var addrs []uintptr
	b.mu.Lock()
	defer b.mu.Unlock()
	// A placed adapter is one allocation (model.Adapter.Flat): the A and B
	// of every layer; a served one has no gradients (DropGrads).
	params, grads := a.Weights.Flat()
	if len(params) == 0 || grads != nil {
		t.Fatalf("%s: the adapter is not placed in the backend's memory as a served one (%d params, %d gradients)", name, len(params), len(grads))
	}
	addrs = append(addrs, addr(params))
	b.watched[addr(params)] = false
	return addrs
}

// freed counts the addresses of addrs freed since they were watched.
func (b *trackBackend) freed(addrs []uintptr) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, a := range addrs {
		if b.watched[a] {
			n++
		}
	}
	return n
}

// TestDroppedAdapterFreed: with hot reload (MaxAdapters 1, so every new
// step drops the previous one) behind a backend that owns its memory, a
// dropped step stays allocated while a streaming request on it is inside a
// step and is freed by the time that request ends; a dropped step nobody
// uses is freed as the poll drops it; a cancelled request lets go of its
// step; requests refused after the model was resolved (400s) and a
// completion with prompt logprobs keep nothing; and after Shutdown the
// backend holds nothing at all, with a request in flight on a dropped step
// at the time it began.
func TestDroppedAdapterFreed(t *testing.T) {
	dir := tinyDir(t)
	adir := t.TempDir()
	writeStep(t, dir, adir, "r1", 1)
	be := newTrackBackend()
	ts := startServer(t, Options{Model: dir, Adapters: adir, PollInterval: time.Hour, MaxAdapters: 1, Backend: be}, nil)
	reg := ts.s.Registry()
	ctx := context.Background()
	load := func(n int) {
		t.Helper()
		writeStep(t, dir, adir, "r1", n)
		if got := reg.Poll(ctx); got != 1 {
			t.Fatalf("step %d: the poll loaded %d adapters, want 1", n, got)
		}
		if want := []string{"r1", fmt.Sprintf("r1@%d", n)}; !slices.Equal(reg.Names(), want) {
			t.Fatalf("after loading step %d the registry serves %v, want %v", n, reg.Names(), want)
		}
	}
	// inStep starts a streaming request on model and returns once the
	// engine runs a step with it, held at the gate; open lets it go on.
	inStep := func(rctx context.Context, model string) (st interface {
		Next() bool
		Current() openai.ChatCompletionChunk
		Err() error
	}, open func()) {
		t.Helper()
		open = be.shut()
		s := ts.client.Chat.Completions.NewStreaming(rctx, chatParams(model, 5, 30))
		if !s.Next() { // the role chunk, sent as the request is queued
			open()
			t.Fatalf("stream on %s: %v", model, s.Err())
		}
		waitfor.Until(t, 10*time.Second, "the engine to run a step on "+model, func() bool { return be.waiting.Load() > 0 })
		return s, open
	}

	// A step dropped while a request on it is inside a step.
	step1 := be.watch(t, reg, "r1@1")
	st, open := inStep(ctx, "r1")
	load(2)
	if n := be.freed(step1); n != 0 {
		open()
		t.Fatalf("%d of step 1's %d allocations freed while a request on it is in a step", n, len(step1))
	}
	open()
	var acc openai.ChatCompletionAccumulator
	acc.AddChunk(st.Current())
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Model != "r1@1" || acc.Choices[0].FinishReason == "" {
		t.Fatalf("the request across the drop answered as %q with finish %q, want r1@1 finished", acc.Model, acc.Choices[0].FinishReason)
	}
	if n := be.freed(step1); n != len(step1) {
		t.Fatalf("%d of step 1's %d allocations freed once its last request ended, want all", n, len(step1))
	}

	// A dropped step nobody uses is freed as it is dropped.
	step2 := be.watch(t, reg, "r1@2")
	load(3)
	if n := be.freed(step2); n != len(step2) {
		t.Fatalf("%d of unused step 2's %d allocations freed as it was dropped, want all", n, len(step2))
	}

	// A cancelled request lets go of its dropped step.
	step3 := be.watch(t, reg, "r1@3")
	cctx, cancel := context.WithCancel(ctx)
	_, open = inStep(cctx, "r1@3")
	load(4)
	if n := be.freed(step3); n != 0 {
		open()
		t.Fatalf("%d of step 3's allocations freed while a request on it is in a step", n)
	}
	cancel()
	open()
	waitfor.Until(t, 10*time.Second, "step 3 to be freed after its request was cancelled", func() bool { return be.freed(step3) == len(step3) })

	// Requests that resolve the model and then fail, and a completion that
	// scores its prompt with the adapter first, hold nothing afterwards.
	step4 := be.watch(t, reg, "r1@4")
	for _, c := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"model":"r1","messages":[]}`, "messages must not be empty"},
		{"/v1/chat/completions", `{"model":"r1@4","messages":[{"role":"user","content":"hi"}],"top_logprobs":3}`, "top_logprobs needs logprobs"},
		{"/v1/completions", `{"model":"r1","prompt":null}`, "prompt is required"},
		{"/v1/completions", `{"model":"r1","prompt":"hello","echo":true,"stream":true}`, "echo is not supported with stream"},
	} {
		if status, body := ts.post(t, c.path, c.body); status != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Fatalf("%s %s: %d %s, want 400 naming %q", c.path, c.body, status, body, c.want)
		}
	}
	if status, body := ts.post(t, "/v1/completions", `{"model":"r1","prompt":"hello","echo":true,"logprobs":2,"max_tokens":3}`); status != http.StatusOK || !strings.Contains(body, `"model":"r1@4"`) {
		t.Fatalf("echo with logprobs on r1: %d %s", status, body)
	}
	load(5)
	if n := be.freed(step4); n != len(step4) {
		t.Fatalf("%d of step 4's %d allocations freed as it was dropped after refused and finished requests, want all", n, len(step4))
	}

	// Shutdown while a request is in a step on a dropped step: it drains,
	// and then nothing is left on the backend (model, KV cache, adapters).
	step5 := be.watch(t, reg, "r1@5")
	st, open = inStep(ctx, "r1")
	load(6)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ts.close(t)
	}()
	open()
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatalf("the request in flight at Shutdown: %v", err)
	}
	<-stopped
	if n := be.freed(step5); n != len(step5) {
		t.Fatalf("%d of step 5's %d allocations freed after Shutdown, want all", n, len(step5))
	}
	if n := be.Live(); n != 0 {
		t.Fatalf("%d allocations (%d bytes) live after Shutdown, want 0", n, be.LiveBytes())
	}
}
