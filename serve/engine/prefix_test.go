package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// sameOutput fails unless a and b picked the same tokens with logprobs
// within 1e-4 relative (the reference backend computes rows one by one, so
// a prefix from the cache and a fresh prefill agree to rounding).
func sameOutput(t *testing.T, what string, a, b result) {
	t.Helper()
	if !slices.Equal(a.ids, b.ids) {
		t.Fatalf("%s: tokens %v, want %v", what, b.ids, a.ids)
	}
	for i := range a.lps {
		if d := math.Abs(float64(a.lps[i] - b.lps[i])); d > 1e-4*max(1, math.Abs(float64(a.lps[i]))) {
			t.Fatalf("%s: token %d logprob %v, want %v", what, i, b.lps[i], a.lps[i])
		}
	}
}

// TestPrefixCacheMultiTurn: the second turn of a conversation (first
// prompt, the reply, a new message) starts from the first turn's rows and
// gives what a cold engine gives; a prompt that shares only part of them
// copies that part, and the kept rows survive for the next.
func TestPrefixCacheMultiTurn(t *testing.T) {
	m, tok := tiny(t)
	cold := New(m, Config{Tokenizer: tok})
	defer cold.Shutdown(context.Background())
	warm := New(m, Config{Tokenizer: tok, PrefixCaching: true})
	defer warm.Shutdown(context.Background())
	greedy := Params{MaxTokens: 6, Logprobs: true, IgnoreEOS: true}

	turn1 := []int32{104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10}
	a := run(t, warm, &Request{Prompt: turn1, N: 1, Params: greedy})[0]
	sameOutput(t, "turn 1", run(t, cold, &Request{Prompt: turn1, N: 1, Params: greedy})[0], a)
	if st := warm.Stats(); st.PrefixQueried != int64(len(turn1)) || st.PrefixHit != 0 {
		t.Fatalf("turn 1: %d queried, %d hit; want %d, 0", st.PrefixQueried, st.PrefixHit, len(turn1))
	}
	// The last generated token was never fed: the rows cover the prompt and
	// all but the last reply token.
	fed := len(turn1) + len(a.ids) - 1
	if got, want := warm.Stats().PrefixKeptBytes, int64(fed)*warm.cache.TokenBytes(); got < want {
		t.Fatalf("kept %d bytes after turn 1, want at least %d (%d rows)", got, want, fed)
	}

	turn2 := slices.Concat(turn1, a.ids, []int32{10, 63, 10})
	b := run(t, warm, &Request{Prompt: turn2, N: 1, Params: greedy})[0]
	sameOutput(t, "turn 2", run(t, cold, &Request{Prompt: turn2, N: 1, Params: greedy})[0], b)
	if hit := warm.Stats().PrefixHit; hit != int64(fed) {
		t.Fatalf("turn 2 reused %d rows, want %d", hit, fed)
	}
	// Turn 2's rows took over turn 1's (its tokens extend them): one entry.
	if n := keptEntries(warm.cache); n != 1 {
		t.Fatalf("%d kept entries after turn 2, want 1", n)
	}

	// A prompt sharing the first 5 tokens copies them; the longer rows stay.
	branch := slices.Concat(turn1[:5], []int32{33, 33, 33})
	hit := warm.Stats().PrefixHit
	c := run(t, warm, &Request{Prompt: branch, N: 2, Params: greedy})
	want := run(t, cold, &Request{Prompt: branch, N: 2, Params: greedy})
	for i := range c {
		sameOutput(t, "branch", want[i], c[i])
	}
	if got := warm.Stats().PrefixHit - hit; got != 5 {
		t.Fatalf("branch reused %d rows, want 5", got)
	}
	turn3 := slices.Concat(turn2, b.ids, []int32{10})
	hit = warm.Stats().PrefixHit
	d := run(t, warm, &Request{Prompt: turn3, N: 1, Params: greedy})[0]
	sameOutput(t, "turn 3", run(t, cold, &Request{Prompt: turn3, N: 1, Params: greedy})[0], d)
	if got, want := warm.Stats().PrefixHit-hit, int64(len(turn2)+len(b.ids)-1); got != want {
		t.Fatalf("turn 3 reused %d rows, want %d", got, want)
	}
	if st := cold.Stats(); st.PrefixQueried != 0 || st.PrefixKeptBytes != 0 {
		t.Fatalf("without prefix caching: %d queried, %d bytes kept", st.PrefixQueried, st.PrefixKeptBytes)
	}
}

// TestPrefixCacheAdapter: rows computed with one adapter never serve
// another, nor the base model.
func TestPrefixCacheAdapter(t *testing.T) {
	m, tok := tiny(t)
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 4, Alpha: 8, Targets: []model.Module{model.ModQ, model.ModV}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr != nil {
				for i := range lr.B {
					lr.B[i] = float32(i%7-3) * 0.05 // not the base model
				}
			}
		}
	}
	cold := New(m, Config{Tokenizer: tok})
	defer cold.Shutdown(context.Background())
	warm := New(m, Config{Tokenizer: tok, PrefixCaching: true})
	defer warm.Shutdown(context.Background())
	greedy := Params{MaxTokens: 4, Logprobs: true, IgnoreEOS: true}
	prompt := []int32{72, 105, 32, 116, 104, 101, 114, 101}
	run(t, warm, &Request{Prompt: prompt, N: 1, Params: greedy})
	base := run(t, cold, &Request{Prompt: prompt, N: 1, Params: greedy})[0]
	got := run(t, warm, &Request{Prompt: prompt, N: 1, Params: greedy, Adapter: ad})[0]
	sameOutput(t, "adapter", run(t, cold, &Request{Prompt: prompt, N: 1, Params: greedy, Adapter: ad})[0], got)
	if hit := warm.Stats().PrefixHit; hit != 0 {
		t.Fatalf("the adapter's request reused %d base-model rows", hit)
	}
	if slices.Equal(base.lps, got.lps) {
		t.Fatal("the adapter gives the base model's logprobs; the test cannot tell them apart")
	}
	// The same prompt again under the adapter hits its own rows.
	again := run(t, warm, &Request{Prompt: prompt, N: 1, Params: greedy, Adapter: ad})[0]
	sameOutput(t, "adapter again", got, again)
	if hit := warm.Stats().PrefixHit; hit != int64(len(prompt)-1) {
		t.Fatalf("the repeated request reused %d rows, want %d", hit, len(prompt)-1)
	}
}

// TestPrefixCacheBudget: kept rows give way to new sequences, so a budget
// that holds one sequence still runs request after request; none of them
// waits on rows nobody uses.
func TestPrefixCacheBudget(t *testing.T) {
	m, tok := tiny(t)
	tb := NewKVCache(&m.Config, m.Backend(), 0).TokenBytes()
	e := New(m, Config{Tokenizer: tok, KVCacheBytes: 40 * tb, PrefixCaching: true})
	defer e.Shutdown(context.Background())
	p := Params{MaxTokens: 30, IgnoreEOS: true}
	for i := range 4 {
		prompt := []int32{int32(1 + i), 2, 3, 4}
		if got := run(t, e, &Request{Prompt: prompt, N: 1, Params: p})[0]; len(got.ids) != 30 {
			t.Fatalf("request %d: %d tokens, want 30", i, len(got.ids))
		}
		st := e.Stats()
		if st.PrefixKeptBytes == 0 || st.KVUsedBytes+st.PrefixKeptBytes > 40*tb {
			t.Fatalf("request %d: %d bytes reserved + %d kept, budget %d", i, st.KVUsedBytes, st.PrefixKeptBytes, 40*tb)
		}
	}
	if n := keptEntries(e.cache); n != 1 {
		t.Fatalf("%d kept entries under a one-sequence budget, want 1", n)
	}
}

// TestKVCacheKeepSeed covers the cache's side: copy and take-over, stale
// matches, redundant rows, and the keep limit.
func TestKVCacheKeepSeed(t *testing.T) {
	m, _ := tiny(t)
	c := NewKVCache(&m.Config, m.Backend(), 0)
	c.SetKeep(64 * c.TokenBytes())
	fill := func(seq, n int, base float32) {
		t.Helper()
		if err := c.Reserve(seq, n); err != nil {
			t.Fatal(err)
		}
		if err := c.Grow(seq, n); err != nil {
			t.Fatal(err)
		}
		for l := range m.Config.Layers {
			k, v := c.KV(l, seq)
			for i := range k {
				k[i], v[i] = base+float32(i), -base-float32(i)
			}
		}
	}
	fill(1, 6, 100)
	c.Keep(1, nil, []int32{1, 2, 3, 4, 5, 6, 7}) // 6 rows fed, the 7th token sampled
	if c.Used() != 0 || c.Kept() != 6*c.TokenBytes() {
		t.Fatalf("after Keep: %d reserved, %d kept; want 0 and 6 rows", c.Used(), c.Kept())
	}
	if pm := c.Match(nil, []int32{1, 2, 3, 4, 5, 6, 7, 8}); pm.N != 6 {
		t.Fatalf("full match: %d tokens, want 6", pm.N)
	}
	if pm := c.Match(nil, []int32{1, 2, 3}); pm.N != 2 {
		t.Fatalf("a prompt inside the rows: %d tokens, want 2 (the last is always fed)", pm.N)
	}
	if pm := c.Match(&model.Adapter{}, []int32{1, 2, 3, 4}); pm.N != 0 {
		t.Fatalf("another adapter matched %d tokens", pm.N)
	}

	// A partial match copies; the kept rows stay.
	if err := c.Reserve(2, 10); err != nil {
		t.Fatal(err)
	}
	if err := c.Seed(2, c.Match(nil, []int32{1, 2, 3, 9})); err != nil {
		t.Fatal(err)
	}
	k1 := c.kept[0].kv.k[0]
	k2, v2 := c.KV(0, 2)
	if c.Len(2) != 3 || !slices.Equal(k2, k1[:len(k2)]) || v2[1] != -101 || len(c.kept) != 1 {
		t.Fatalf("copied seed: len %d, %d entries kept", c.Len(2), len(c.kept))
	}
	// A full match takes the rows over.
	if err := c.Reserve(3, 20); err != nil {
		t.Fatal(err)
	}
	pm := c.Match(nil, []int32{1, 2, 3, 4, 5, 6, 7, 8})
	if err := c.Seed(3, pm); err != nil {
		t.Fatal(err)
	}
	if c.Len(3) != 6 || len(c.kept) != 0 || c.Kept() != 0 {
		t.Fatalf("take-over: len %d, %d entries and %d bytes still kept", c.Len(3), len(c.kept), c.Kept())
	}
	if k, _ := c.KV(0, 3); k[5] != 105 {
		t.Fatalf("take-over: row data %v", k[:6])
	}
	if err := c.Reserve(4, 10); err != nil {
		t.Fatal(err)
	}
	if err := c.Seed(4, pm); err == nil {
		t.Fatal("seeding from rows already taken over succeeded")
	}
	// Growing a taken-over sequence keeps its rows.
	if err := c.Grow(3, 14); err != nil {
		t.Fatal(err)
	}
	if k, _ := c.KV(0, 3); k[5] != 105 {
		t.Fatalf("after growing: row data %v", k[:6])
	}

	// Rows a kept entry already covers are not kept twice; longer rows
	// replace the entries they extend.
	c.Keep(2, nil, []int32{1, 2, 3})
	c.Keep(3, nil, slices.Concat([]int32{1, 2, 3, 4, 5, 6, 7}, make([]int32, 13)))
	if len(c.kept) != 1 || len(c.kept[0].tokens) != 20 {
		t.Fatalf("%d entries kept, want the 20-row one only", len(c.kept))
	}
	fill(5, 3, 0)
	c.Keep(5, nil, []int32{1, 2, 3})
	if len(c.kept) != 1 {
		t.Fatalf("rows covered by a kept entry were kept again (%d entries)", len(c.kept))
	}
	// Past the keep limit the least recently used go first: 20 + 10 + 40
	// rows > 64 drops the 10-row entry, kept after the 20-row one but used
	// before it.
	fill(6, 10, 0)
	c.Keep(6, nil, slices.Repeat([]int32{9}, 10))
	c.Match(nil, []int32{1, 2, 3})
	fill(7, 40, 0)
	c.Keep(7, nil, make([]int32, 40))
	if len(c.kept) != 2 || len(c.kept[0].tokens) != 20 || len(c.kept[1].tokens) != 40 || c.Kept() != 60*c.TokenBytes() {
		t.Fatalf("keep limit: %d entries, %d bytes; want the 20- and 40-row ones", len(c.kept), c.Kept())
	}
	c.Free(4)
	c.SetKeep(0)
	if c.Used() != 0 || c.Kept() != 0 || len(c.kept) != 0 {
		t.Fatalf("after freeing all and SetKeep(0): %d reserved, %d kept", c.Used(), c.Kept())
	}
}

func keptEntries(c *KVCache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.kept)
}

// TestPrefixCacheInFlight: requests admitted together with the same
// beginning (a GRPO group's episodes, each its own request) prefill it
// once: the first prefills, the others wait for its rows and copy them.
// Outputs are those of an engine without the cache.
func TestPrefixCacheInFlight(t *testing.T) {
	m, tok := tiny(t)
	cold := New(m, Config{Tokenizer: tok, MaxBatch: 8})
	defer cold.Shutdown(context.Background())
	warm := New(m, Config{Tokenizer: tok, MaxBatch: 8, PrefixCaching: true, PrefillTokens: 8})
	defer warm.Shutdown(context.Background())

	// A blocker fills the batch, so that the group waits in the queue and
	// is admitted in one pass when the blocker is cancelled.
	stopBlocker := block(t, warm, 8)
	shared := []int32{72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10, 71, 117, 101, 115, 115, 58, 32}
	prompts := [][]int32{
		shared,
		slices.Concat(shared, []int32{49, 50}),
		slices.Concat(shared[:17], []int32{63, 63, 63}),
		{33, 34, 35}, // nothing in common: prefills on its own
	}
	p := Params{Temperature: 1, MaxTokens: 5, Logprobs: true, IgnoreEOS: true, Seed: 4, HasSeed: true}
	var hs []*Handle
	for _, pr := range prompts {
		h, err := warm.Submit(&Request{Prompt: pr, N: 2, Params: p})
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	stopBlocker()
	for i, h := range hs {
		got := wait(t, h, 2)
		want := run(t, cold, &Request{Prompt: prompts[i], N: 2, Params: p})
		for c := range got {
			sameOutput(t, fmt.Sprintf("prompt %d choice %d", i, c), want[c], got[c])
		}
	}
	// Prompt 0 prefills 20 tokens; 1 takes 20 of its rows, 2 takes 17;
	// 3 shares nothing, nor does the blocker.
	if got := warm.Stats().PrefixHit; got != 20+17 {
		t.Fatalf("the group reused %d rows, want %d", got, 20+17)
	}
	if c := []int{hs[0].CachedTokens(), hs[1].CachedTokens(), hs[2].CachedTokens(), hs[3].CachedTokens()}; !slices.Equal(c, []int{0, 20, 17, 0}) {
		t.Fatalf("cached tokens per request %v, want [0 20 17 0]", c)
	}
}

// stepPause is kerneltest.Resident that holds the engine inside a step:
// the first LinearForward of step at (Stats.Steps, counted as a step
// starts) or later sends on paused and waits on resume. One pause an
// arming; at 0 it is disarmed. Once stop is closed (a test that failed
// while the engine was held) it holds nothing.
type stepPause struct {
	*kerneltest.ResidentBackend
	e      atomic.Pointer[Engine]
	at     atomic.Int64
	paused chan struct{}
	resume chan struct{}
	stop   chan struct{}
}

func (b *stepPause) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	if at := b.at.Load(); at > 0 && b.e.Load().Stats().Steps >= at && b.at.CompareAndSwap(at, 0) {
		select {
		case b.paused <- struct{}{}:
			select {
			case <-b.resume:
			case <-b.stop:
			}
		case <-b.stop:
		}
	}
	b.ResidentBackend.LinearForward(out, inp, weight, bias, N, C, OC)
}

// TestPrefixCacheInFlightCancel: when the request others wait on is
// cancelled before its prompt is prefilled, they prefill on their own and
// answer as a fresh engine does; every row of both is given back. The
// engine is held inside the awaited request's prefill steps, so the cancel
// lands there whatever the machine's speed. Without the release in finish
// the waiting request waited for rows that never came, for ever.
func TestPrefixCacheInFlightCancel(t *testing.T) {
	dir := filepath.Join("..", "testdata", "tiny")
	be := &stepPause{ResidentBackend: kerneltest.Resident(ref.New()), paused: make(chan struct{}), resume: make(chan struct{}), stop: make(chan struct{})}
	m, err := model.Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() }) // after the engine's, which runs first
	_, tok := tiny(t)
	e := New(m, Config{Tokenizer: tok, MaxBatch: 4, PrefixCaching: true, PrefillTokens: 2})
	be.e.Store(e)
	t.Cleanup(func() {
		// After a failure the engine may be held, or still running a
		// request that waits for ever: it is let go, and its requests
		// failed at once (an ended ctx).
		close(be.stop)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		e.Shutdown(ctx)
	})
	shared := slices.Repeat([]int32{104, 105}, 50) // 50 steps at 2 a step
	p := Params{Temperature: 1, MaxTokens: 4, Logprobs: true, IgnoreEOS: true, Seed: 9, HasSeed: true}
	waiter := &Request{Prompt: slices.Concat(shared, []int32{10}), N: 2, Params: p}

	be.at.Store(1) // inside the first request's first step
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := e.Submit(&Request{Ctx: ctx, Prompt: shared, N: 1, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	<-be.paused
	second, err := e.Submit(waiter)
	if err != nil {
		t.Fatal(err)
	}
	be.at.Store(2) // the next step, after the admission between the two
	be.resume <- struct{}{}
	<-be.paused
	// The engine's goroutine is held in the step: what it wrote before it
	// is seen here (the channel orders it).
	if st := e.Stats(); st.Running != 3 || len(e.running) != 3 || len(e.running[0].deps) != 1 || !e.running[1].waiting {
		t.Fatalf("in the second prefill step: %d running, want the first prefilling and the second's 2 choices waiting for it", st.Running)
	}
	cancel()
	be.resume <- struct{}{}

	if last := lastEvent(t, first); !errors.Is(last.Err, context.Canceled) || last.Token >= 0 {
		t.Fatalf("the awaited request ended with %+v, want cancelled before its first token", last)
	}
	// Bounded: without the release the request waits for ever.
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	got := waitCtx(wctx, t, second, waiter.N)
	cold, _ := tiny(t)
	fresh := New(cold, Config{Tokenizer: tok, MaxBatch: 4, PrefixCaching: true, PrefillTokens: 2})
	defer fresh.Shutdown(context.Background())
	want := run(t, fresh, waiter)
	for c := range want {
		sameOutput(t, fmt.Sprintf("choice %d after the awaited request was cancelled", c), want[c], got[c])
	}
	if c := second.CachedTokens(); c != 0 {
		t.Errorf("the waiting request reused %d rows of a request cancelled before they existed", c)
	}
	if st := e.Stats(); st.KVUsedBytes != 0 || st.Cancelled != 1 || st.RequestsDone != 2 {
		t.Errorf("after both ended: %d bytes reserved, %d cancelled, %d done; want 0, 1, 2", st.KVUsedBytes, st.Cancelled, st.RequestsDone)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if n := be.Live(); n != 0 {
		t.Errorf("%d allocations (%d bytes) live after Shutdown and Close, want 0", n, be.LiveBytes())
	}
}

// lastEvent reads h to its end and returns its last event.
func lastEvent(t *testing.T, h *Handle) Event {
	t.Helper()
	var last Event
	for done := false; !done; {
		evs, d, err := h.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			last = ev
		}
		done = d
	}
	return last
}

// TestPrefixCacheLive: a request whose prompt begins with a decoding
// sequence's prompt and generated tokens copies that sequence's rows at
// once, while it keeps decoding.
func TestPrefixCacheLive(t *testing.T) {
	m, tok := tiny(t)
	cold := New(m, Config{Tokenizer: tok})
	defer cold.Shutdown(context.Background())
	warm := New(m, Config{Tokenizer: tok, PrefixCaching: true})
	defer warm.Shutdown(context.Background())
	prompt := []int32{72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10}
	long, err := warm.Submit(&Request{Prompt: prompt, N: 1, Params: Params{MaxTokens: 300, IgnoreEOS: true}})
	if err != nil {
		t.Fatal(err)
	}
	var first []int32 // its first generated tokens
	for len(first) < 3 {
		evs, _, err := long.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			first = append(first, ev.Token)
		}
	}
	// The rows of prompt and first[:2] exist by now (first[2] may be fed
	// or not yet): the new prompt reuses at least len(prompt)+2 of them.
	follow := slices.Concat(prompt, first[:2], []int32{(first[2] + 1) % 256, 10})
	greedy := Params{MaxTokens: 4, Logprobs: true, IgnoreEOS: true}
	h, err := warm.Submit(&Request{Prompt: follow, N: 1, Params: greedy})
	if err != nil {
		t.Fatal(err)
	}
	got := wait(t, h, 1)[0]
	sameOutput(t, "follow-up", run(t, cold, &Request{Prompt: follow, N: 1, Params: greedy})[0], got)
	if c := h.CachedTokens(); c != len(prompt)+2 {
		t.Fatalf("the follow-up reused %d rows of the decoding sequence, want %d", c, len(prompt)+2)
	}
	if warm.Stats().RequestsDone != 1 {
		t.Fatalf("%d requests done; the long one should still be decoding", warm.Stats().RequestsDone)
	}
	wait(t, long, 1)
}

// block fills e's batch of n with a request that runs until the returned
// function cancels it, and waits until it runs: requests submitted
// meanwhile queue, and are admitted in one pass once it is gone.
func block(t *testing.T, e *Engine, n int) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h, err := e.Submit(&Request{Ctx: ctx, Prompt: []int32{200, 201}, N: n, Params: Params{MaxTokens: 100000, IgnoreEOS: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	return cancel
}

// gate is a Constraint that masks nothing and holds the engine in each
// Mask until the test lets it go: at <-called the engine is inside a step,
// and once the test sends on proceed it runs to the next step, passing
// admission once.
type gate struct{ called, proceed chan struct{} }

func (g gate) Mask([]float32) {
	g.called <- struct{}{}
	<-g.proceed
}
func (g gate) Accept(int32) error { return nil }

// TestPrefixCacheKeptWhileQueued: a request that does not fit the budget
// yet waits in the queue without evicting the kept rows it could not use
// anyway, so once room is made it starts from them. Each failed attempt
// to admit it, one per step, used to evict every kept row first (and for
// n > 1, a first reservation that fit evicted them before the second
// failed): under load the prefix cache was emptied.
func TestPrefixCacheKeptWhileQueued(t *testing.T) {
	m, tok := tiny(t)
	tb := NewKVCache(&m.Config, m.Backend(), 0).TokenBytes()
	for _, c := range []struct {
		name    string
		blockMT int // max_tokens of the request holding memory
		n       int // of the queued request
	}{{"n=1", 70, 1}, {"n=2", 45, 2}} {
		t.Run(c.name, func(t *testing.T) {
			e := New(m, Config{Tokenizer: tok, KVCacheBytes: 100 * tb, PrefixCaching: true})
			defer e.Shutdown(context.Background())
			greedy := Params{MaxTokens: 4, IgnoreEOS: true}
			turn1 := []int32{104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10, 104, 101, 108, 108, 111, 32, 10}
			a := run(t, e, &Request{Prompt: turn1, N: 1, Params: greedy})[0]
			kept := e.Stats().PrefixKeptBytes
			if kept == 0 {
				t.Fatal("turn 1 left no kept rows")
			}

			g := gate{called: make(chan struct{}), proceed: make(chan struct{})}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hold, err := e.Submit(&Request{Ctx: ctx, Prompt: []int32{200, 201, 202, 203, 204}, N: 1,
				Params: Params{MaxTokens: c.blockMT, IgnoreEOS: true}, Constraint: func(int) Constraint { return g }})
			if err != nil {
				t.Fatal(err)
			}
			<-g.called // holding its reservation, inside a step
			turn2 := slices.Concat(turn1, a.ids, []int32{10, 63, 10})
			h, err := e.Submit(&Request{Prompt: turn2, N: c.n, Params: greedy})
			if err != nil {
				t.Fatal(err)
			}
			// One more step: admission tried turn 2 in between.
			g.proceed <- struct{}{}
			<-g.called
			if got := e.Stats().PrefixKeptBytes; got != kept {
				t.Errorf("while turn 2 waits for room: %d bytes kept, want the %d of turn 1", got, kept)
			}
			cancel()
			g.proceed <- struct{}{}
			wait(t, h, c.n)
			if got, want := h.CachedTokens(), len(turn1)+len(a.ids)-1; got != want {
				t.Errorf("turn 2 reused %d rows, want %d", got, want)
			}
			if _, _, err := hold.Next(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
