package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// tiny loads the committed tiny model folder (serve/testdata/README.md) on
// the reference backend, whose row-by-row loops make batched and single runs
// bit-equal.
func tiny(t testing.TB) (*model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	return tinyOn(t, ref.New())
}

// tinyOn loads the tiny model folder on be (a backend that wraps the
// reference one to hang or count its calls).
func tinyOn(t testing.TB, be kernels.Backend) (*model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	dir := filepath.Join("..", "testdata", "tiny")
	m, err := model.Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m, tok
}

type result struct {
	ids    []int32
	lps    []float32
	text   string
	finish string
}

func run(t testing.TB, e *Engine, r *Request) []result {
	t.Helper()
	h, err := e.Submit(r)
	if err != nil {
		t.Fatal(err)
	}
	return wait(t, h, r.N)
}

func wait(t testing.TB, h *Handle, n int) []result {
	t.Helper()
	return waitCtx(context.Background(), t, h, n)
}

// waitCtx is wait that fails once ctx ends (a request never let go).
func waitCtx(ctx context.Context, t testing.TB, h *Handle, n int) []result {
	t.Helper()
	out := make([]result, n)
	for {
		evs, done, err := h.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the request's events: %v", err)
		}
		for _, ev := range evs {
			if ev.Err != nil {
				t.Fatalf("choice %d: %v", ev.Choice, ev.Err)
			}
			o := &out[ev.Choice]
			if ev.Token >= 0 {
				o.ids = append(o.ids, ev.Token)
				o.lps = append(o.lps, ev.Logprob)
			}
			o.text += ev.Text
			if ev.Finish != "" {
				o.finish = ev.Finish
			}
		}
		if done {
			return out
		}
	}
}

// TestGreedyMatchesFullForward: the cached decode path picks the same tokens
// and logprobs as a naive loop re-running the whole sequence each step.
func TestGreedyMatchesFullForward(t *testing.T) {
	m, tok := tiny(t)
	e := New(m, Config{Tokenizer: tok})
	defer e.Shutdown(context.Background())
	prompt := []int32{104, 101, 108, 108, 111}
	got := run(t, e, &Request{Prompt: prompt, N: 1, Params: Params{MaxTokens: 12, Logprobs: true, IgnoreEOS: true}})[0]

	seq := slices.Clone(prompt)
	V := m.Config.Vocab
	for i := range 12 {
		pos := make([]int32, len(seq))
		for j := range pos {
			pos[j] = int32(j)
		}
		logits, err := m.Logits(context.Background(), &model.Batch{IDs: seq, Pos: pos, SeqOff: []int32{0, int32(len(seq))}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		row := logits[(len(seq)-1)*V:]
		best := 0
		for k, v := range row {
			if v > row[best] {
				best = k
			}
		}
		if got.ids[i] != int32(best) {
			t.Fatalf("token %d: engine %d, full forward %d", i, got.ids[i], best)
		}
		want := LogSoftmax(m.Backend(), row)[best]
		if d := math.Abs(float64(got.lps[i] - want)); d > 1e-4*max(1, math.Abs(float64(want))) {
			t.Fatalf("token %d: logprob %v, full forward %v", i, got.lps[i], want)
		}
		seq = append(seq, int32(best))
	}
	if got.finish != "length" {
		t.Fatalf("finish %q, want length", got.finish)
	}
}

// TestChunkedPrefill: a prompt fed over several steps (PrefillTokens 4)
// gives the same greedy tokens and logprobs, and the same seeded samples
// for n = 3 sharing the prompt, as one fed at once; it takes one step per
// chunk, and a sequence already decoding keeps getting a token every step
// while another's prompt is prefilled.
func TestChunkedPrefill(t *testing.T) {
	m, tok := tiny(t)
	prompt := []int32{104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10}
	greedy := Params{MaxTokens: 6, Logprobs: true, IgnoreEOS: true}
	seeded := Params{Temperature: 1, TopK: 40, MaxTokens: 6, Seed: 7, HasSeed: true, IgnoreEOS: true}
	whole := New(m, Config{Tokenizer: tok})
	defer whole.Shutdown(context.Background())
	chunked := New(m, Config{Tokenizer: tok, PrefillTokens: 4})
	defer chunked.Shutdown(context.Background())

	a := run(t, whole, &Request{Prompt: prompt, N: 1, Params: greedy})[0]
	steps := chunked.Stats().Steps
	b := run(t, chunked, &Request{Prompt: prompt, N: 1, Params: greedy})[0]
	// ceil(13/4) = 4 prefill steps, the last yielding token 1, then 5 more.
	if got := chunked.Stats().Steps - steps; got != 4+5 {
		t.Errorf("chunked run took %d steps, want 9", got)
	}
	if !slices.Equal(a.ids, b.ids) {
		t.Fatalf("greedy tokens: whole %v, chunked %v", a.ids, b.ids)
	}
	for i := range a.lps {
		if d := math.Abs(float64(a.lps[i] - b.lps[i])); d > 1e-4*max(1, math.Abs(float64(a.lps[i]))) {
			t.Fatalf("token %d: logprob whole %v, chunked %v", i, a.lps[i], b.lps[i])
		}
	}
	sa := run(t, whole, &Request{Prompt: prompt, N: 3, Params: seeded})
	sb := run(t, chunked, &Request{Prompt: prompt, N: 3, Params: seeded})
	for c := range sa {
		if !slices.Equal(sa[c].ids, sb[c].ids) {
			t.Fatalf("choice %d: whole %v, chunked %v", c, sa[c].ids, sb[c].ids)
		}
	}

	// A decoding sequence next to a prompt being prefilled: each of the
	// prompt's 4 steps also decodes a token of the first request, so the
	// first request's 20 tokens take no more than 20 steps.
	h1, err := chunked.Submit(&Request{Prompt: []int32{1}, N: 1, Params: Params{MaxTokens: 20, IgnoreEOS: true}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		evs, _, err := h1.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 0 {
			break // decoding
		}
	}
	steps = chunked.Stats().Steps
	h2, err := chunked.Submit(&Request{Prompt: prompt, N: 1, Params: Params{MaxTokens: 1, IgnoreEOS: true}})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, h1, 1)
	wait(t, h2, 1)
	if got := chunked.Stats().Steps - steps; got > 20 {
		t.Errorf("the first request's remaining tokens and the second's prefill took %d steps, want ≤ 20 (interleaved)", got)
	}
}

// TestSeedIndependentOfBatch: a seeded request gives the same tokens alone,
// next to other requests, and as choice 0 of an n=3 request; choices of one
// request differ from each other.
func TestSeedIndependentOfBatch(t *testing.T) {
	m, tok := tiny(t)
	e := New(m, Config{Tokenizer: tok, MaxBatch: 16})
	defer e.Shutdown(context.Background())
	p := Params{Temperature: 1.0, TopP: 0.95, TopK: 50, MaxTokens: 16, Seed: 42, HasSeed: true, IgnoreEOS: true}
	prompt := []int32{1, 2, 3, 4}
	alone := run(t, e, &Request{Prompt: prompt, N: 1, Params: p})[0]

	// The same request among others of different lengths, submitted together.
	var hs []*Handle
	for i := range 5 {
		q := p
		q.Seed = uint64(100 + i)
		h, err := e.Submit(&Request{Prompt: append([]int32{9, 9}, prompt[:i%4+1]...), N: 2, Params: q})
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	h, err := e.Submit(&Request{Prompt: prompt, N: 3, Params: p})
	if err != nil {
		t.Fatal(err)
	}
	group := wait(t, h, 3)
	for _, o := range hs {
		wait(t, o, 2)
	}
	if !slices.Equal(alone.ids, group[0].ids) {
		t.Fatalf("seeded output changed with batching:\nalone %v\nbatch %v", alone.ids, group[0].ids)
	}
	if slices.Equal(group[0].ids, group[1].ids) && slices.Equal(group[1].ids, group[2].ids) {
		t.Fatalf("all three choices equal %v; choices must use distinct streams", group[0].ids)
	}
}

func TestStopStringsAndEOS(t *testing.T) {
	m, tok := tiny(t)
	e := New(m, Config{Tokenizer: tok})
	defer e.Shutdown(context.Background())
	p := Params{MaxTokens: 20, IgnoreEOS: true, SkipSpecial: true}
	full := run(t, e, &Request{Prompt: []int32{5, 6, 7}, N: 1, Params: p})[0]
	if len(full.text) < 4 {
		t.Skipf("greedy text %q too short to cut", full.text)
	}
	// A stop string from the middle of the greedy text cuts it there.
	stop := full.text[2:4]
	p.Stop = []string{stop}
	cut := run(t, e, &Request{Prompt: []int32{5, 6, 7}, N: 1, Params: p})[0]
	want := full.text[:2]
	if i := len(want); i > 0 {
		for k := 0; k+len(stop) <= 2; k++ {
			if full.text[k:k+len(stop)] == stop {
				want = full.text[:k]
				break
			}
		}
	}
	if cut.text != want || cut.finish != "stop" {
		t.Fatalf("stop %q: got %q (%s), want %q (stop)", stop, cut.text, cut.finish, want)
	}
	// The first greedy token as an EOS id ends at once, with no text.
	e2 := New(m, Config{Tokenizer: tok, EOS: []int32{full.ids[0]}})
	defer e2.Shutdown(context.Background())
	p.Stop, p.IgnoreEOS = nil, false
	got := run(t, e2, &Request{Prompt: []int32{5, 6, 7}, N: 1, Params: p})[0]
	if len(got.ids) != 1 || got.text != "" || got.finish != "stop" {
		t.Fatalf("EOS: ids %v text %q finish %q", got.ids, got.text, got.finish)
	}
}

// naiveHold is the length of the longest end of text that is a proper
// prefix of one of stops, found by trying every length.
func naiveHold(text string, stops []string) int {
	best := 0
	for _, st := range stops {
		for n := min(len(st)-1, len(text)); n > best; n-- {
			if strings.HasSuffix(text, st[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// naiveCut is vLLM's stop check over text whose first fed bytes were
// checked before, with the text up to q quiet: the stop strings in list
// order, the first with an occurrence that ends in the new bytes and past
// q wins, at its first such occurrence; -1 for none.
func naiveCut(text string, fed int, stops []string, q int) int {
	for _, st := range stops {
		for i := max(0, fed+1-len(st)); i+len(st) <= len(text); i++ {
			if text[i:i+len(st)] == st && i+len(st) > q {
				return i
			}
		}
	}
	return -1
}

// TestStopMatchMatchesNaive: a stopMatch fed a text in random pieces finds
// the stop string vLLM's check finds (naiveCut: the first listed of those
// that end in the piece), where searching the text finds it, and until
// then holds back what trying every suffix length gives, on random texts
// and stops over a small alphabet (many partial matches), and on the case
// that made a naive suffix search quadratic.
func TestStopMatchMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab"[r.IntN(2)]
		}
		return string(b)
	}
	for range 5000 {
		text, stops := word(r.IntN(16)), []string{word(1 + r.IntN(8)), word(1 + r.IntN(8))}
		m := newStopTable(stops).match()
		for fed := 0; fed < len(text); {
			n := min(len(text)-fed, 1+r.IntN(4))
			got, want := m.feed(text[fed:fed+n], fed), naiveCut(text[:fed+n], fed, stops, 0)
			if got != want {
				t.Fatalf("stops %q: feeding %q after %q: cut %d, want %d", stops, text[fed:fed+n], text[:fed], got, want)
			}
			if got >= 0 {
				break
			}
			fed += n
			if got, want := m.hold(), naiveHold(text[:fed], stops); got != want {
				t.Fatalf("stops %q, text %q: hold %d, want %d", stops, text[:fed], got, want)
			}
		}
	}
	st := strings.Repeat("a", 3000) + "b" + strings.Repeat("a", 3000)
	m := newStopTable([]string{st}).match()
	if cut := m.feed(strings.Repeat("a", 7000), 0); cut != -1 || m.hold() != 3000 {
		t.Fatalf("on the quadratic case: cut %d, hold %d; want -1, 3000", cut, m.hold())
	}
}

// TestStopMatchQuiet: with the text up to q quiet (min_tokens' tokens), a
// stopMatch fed in random pieces, q growing with the text as the engine
// sets it, finds the first listed stop string among those that end in the
// piece and past q, where searching every occurrence finds it, including
// ones that begin in the quiet text or overlap one passed over.
func TestStopMatchQuiet(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab"[r.IntN(2)]
		}
		return string(b)
	}
	for range 5000 {
		text, stops := word(r.IntN(16)), []string{word(1 + r.IntN(5)), word(1 + r.IntN(5))}
		q := r.IntN(len(text) + 1)
		m := newStopTable(stops).match()
		for fed := 0; fed < len(text); {
			n := min(len(text)-fed, 1+r.IntN(4))
			m.quiet = min(q, fed+n)
			got, want := m.feed(text[fed:fed+n], fed), naiveCut(text[:fed+n], fed, stops, q)
			if got != want {
				t.Fatalf("stops %q, quiet %d: feeding %q after %q: cut %d, want %d", stops, q, text[fed:fed+n], text[:fed], got, want)
			}
			if got >= 0 {
				break
			}
			fed += n
		}
	}
}

func TestStopMatchHold(t *testing.T) {
	for _, c := range []struct {
		text  string
		stops []string
		want  int
	}{
		{"abc", []string{"cd"}, 1}, {"abc", []string{"xyz"}, 0}, {"abcd", []string{"bcdx", "dy"}, 3}, {"", []string{"a"}, 0},
	} {
		m := newStopTable(c.stops).match()
		if cut := m.feed(c.text, 0); cut != -1 || m.hold() != c.want {
			t.Errorf("text %q, stops %q: cut %d, hold %d; want -1, %d", c.text, c.stops, cut, m.hold(), c.want)
		}
	}
	if newStopTable(nil).match().hold() != 0 {
		t.Error("no stop strings hold text back")
	}
}

// maskTo is a Constraint that allows only one token.
type maskTo struct{ id int32 }

func (c maskTo) Mask(l []float32) {
	for i := range l {
		if int32(i) != c.id {
			l[i] = float32(math.Inf(-1))
		}
	}
}
func (c maskTo) Accept(id int32) error {
	if id != c.id {
		return fmt.Errorf("got %d", id)
	}
	return nil
}

func TestConstraintMasks(t *testing.T) {
	m, tok := tiny(t)
	e := New(m, Config{Tokenizer: tok})
	defer e.Shutdown(context.Background())
	got := run(t, e, &Request{Prompt: []int32{1}, N: 2, Params: Params{Temperature: 1, MaxTokens: 5, Logprobs: true, IgnoreEOS: true},
		Constraint: func(int) Constraint { return maskTo{'x'} }})
	for _, o := range got {
		if o.text != "xxxxx" {
			t.Fatalf("constrained text %q, want xxxxx", o.text)
		}
		if o.lps[0] >= 0 || math.IsInf(float64(o.lps[0]), 0) {
			t.Fatalf("logprob %v should be the raw model's, finite and negative", o.lps[0])
		}
	}
}

func TestQueueFullCancelAndShutdown(t *testing.T) {
	m, tok := tiny(t)
	e := New(m, Config{Tokenizer: tok, MaxBatch: 1, MaxQueue: 1})
	ctx, cancel := context.WithCancel(context.Background())
	long := Params{MaxTokens: 100000 - 10, IgnoreEOS: true}
	h1, err := e.Submit(&Request{Ctx: ctx, Prompt: []int32{1}, N: 1, Params: long})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until h1 runs so that the queue is empty, then fill it.
	if _, _, err := h1.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	h2, err := e.Submit(&Request{Prompt: []int32{1}, N: 1, Params: Params{MaxTokens: 3, IgnoreEOS: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Submit(&Request{Prompt: []int32{1}, N: 1, Params: Params{MaxTokens: 3}}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third request: %v, want ErrQueueFull", err)
	}
	cancel()
	var last Event
	for {
		evs, done, err := h1.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 0 {
			last = evs[len(evs)-1]
		}
		if done {
			break
		}
	}
	if !errors.Is(last.Err, context.Canceled) {
		t.Fatalf("cancelled request ended with %+v", last)
	}
	if got := wait(t, h2, 1)[0]; len(got.ids) != 3 {
		t.Fatalf("queued request got %d tokens, want 3", len(got.ids))
	}
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := e.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Submit(&Request{Prompt: []int32{1}, N: 1, Params: Params{MaxTokens: 3}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after shutdown: %v, want ErrClosed", err)
	}
	if used := e.cache.Used(); used != 0 {
		t.Fatalf("KV cache still holds %d bytes", used)
	}
}

// TestKVBudget: requests that do not fit the budget together wait for each
// other instead of failing; one that can never fit is refused at once.
func TestKVBudget(t *testing.T) {
	m, tok := tiny(t)
	c := NewKVCache(&m.Config, m.Backend(), 0)
	budget := 40 * c.TokenBytes() // room for one 4+30 token sequence at a time
	e := New(m, Config{Tokenizer: tok, KVCacheBytes: budget})
	defer e.Shutdown(context.Background())
	p := Params{MaxTokens: 30, IgnoreEOS: true}
	var hs []*Handle
	for range 3 {
		h, err := e.Submit(&Request{Prompt: []int32{1, 2, 3, 4}, N: 1, Params: p})
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	for _, h := range hs {
		if got := wait(t, h, 1)[0]; len(got.ids) != 30 {
			t.Fatalf("got %d tokens, want 30", len(got.ids))
		}
	}
	if _, err := e.Submit(&Request{Prompt: []int32{1, 2, 3, 4}, N: 2, Params: p}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("n=2 over budget: %v, want ErrTooLarge", err)
	}
}

func TestKVCacheFork(t *testing.T) {
	m, _ := tiny(t)
	c := NewKVCache(&m.Config, m.Backend(), 0)
	if err := c.Reserve(1, 4); err != nil {
		t.Fatal(err)
	}
	if err := c.Grow(1, 3); err != nil {
		t.Fatal(err)
	}
	k, v := c.KV(1, 1)
	for i := range k {
		k[i], v[i] = float32(i), float32(-i)
	}
	if err := c.Grow(1, 2); err == nil {
		t.Fatal("grow past the reservation succeeded")
	}
	if err := c.Reserve(2, 5); err != nil {
		t.Fatal(err)
	}
	if err := c.Fork(2, 1, 3); err != nil {
		t.Fatal(err)
	}
	k2, v2 := c.KV(1, 2)
	if !slices.Equal(k, k2) || !slices.Equal(v, v2) || c.Len(2) != 3 {
		t.Fatalf("fork copied %d tokens wrongly", c.Len(2))
	}
	// Token by token past several reallocations, earlier rows stay put.
	if err := c.Reserve(3, 100); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := c.Grow(3, 1); err != nil {
			t.Fatal(err)
		}
		for l := range m.Config.Layers {
			k, _ := c.KV(l, 3)
			kvd := len(k) / (i + 1)
			k[i*kvd] = float32(i + l)
		}
	}
	for l := range m.Config.Layers {
		k, _ := c.KV(l, 3)
		kvd := len(k) / 100
		for i := range 100 {
			if k[i*kvd] != float32(i+l) {
				t.Fatalf("layer %d token %d: %v after growing", l, i, k[i*kvd])
			}
		}
	}
	c.Free(3)
	c.Free(1)
	c.Free(2)
	if c.Used() != 0 {
		t.Fatalf("used %d after freeing all", c.Used())
	}
}

// TestCancelledCountsRequests: Stats.Cancelled counts a request cancelled
// while running once, whichever of its choices are still running: with
// n = 2 and choice 0 already stopped, cancelling the request counts it
// (only choice 0's cancellation was counted, so a group whose first
// answer was short never showed in hone_serve_requests_cancelled_total).
func TestCancelledCountsRequests(t *testing.T) {
	m, tok := tiny(t)
	e := New(m, Config{Tokenizer: tok})
	defer e.Shutdown(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	h, err := e.Submit(&Request{Ctx: ctx, Prompt: []int32{1, 2}, N: 2,
		Params: Params{MaxTokens: 100000, StopIDs: []int32{7}},
		Constraint: func(choice int) Constraint {
			if choice == 0 {
				return maskTo{7} // stops at its first token
			}
			return maskTo{8} // never stops
		}})
	if err != nil {
		t.Fatal(err)
	}
	for stopped := false; !stopped; {
		evs, _, err := h.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			stopped = stopped || ev.Choice == 0 && ev.Finish == "stop"
		}
	}
	cancel()
	if ev := drain(t, h); !errors.Is(ev.Err, context.Canceled) || ev.Choice != 1 {
		t.Fatalf("the request ended with %+v, want choice 1 cancelled", ev)
	}
	if got := e.Stats().Cancelled; got != 1 {
		t.Fatalf("Stats.Cancelled %d after one request cancelled, want 1", got)
	}
}
