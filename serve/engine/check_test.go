package engine

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestCheckRefusesWhatCannotRun: Check (and so Submit) refuses, with an
// ErrTooLarge error naming the field, a request the engine could not run:
// a logit_bias key outside the vocabulary (it indexed the logits row and
// panicked the engine's goroutine, taking the server down), and a
// max_tokens so large that prompt+max_tokens, or its bytes, overflowed
// (the request then passed the budget check, booked next to nothing or a
// negative number of tokens, and either grew past the budget or failed
// its first step with an error about the cache's reservation).
func TestCheckRefusesWhatCannotRun(t *testing.T) {
	m, tok := tiny(t)
	V := int32(m.Config.Vocab)
	tb := NewKVCache(&m.Config, m.Backend(), 0).TokenBytes()
	budgeted := New(m, Config{Tokenizer: tok, KVCacheBytes: 1000 * tb})
	defer budgeted.Shutdown(context.Background())
	unlimited := New(m, Config{Tokenizer: tok})
	defer unlimited.Shutdown(context.Background())
	prompt := []int32{1, 2}
	for _, c := range []struct {
		name string
		e    *Engine
		p    Params
		want string
	}{
		{"logit_bias past the vocabulary", unlimited, Params{MaxTokens: 2, LogitBias: map[int32]float32{V: 5}}, "logit_bias"},
		{"negative logit_bias key", unlimited, Params{MaxTokens: 2, LogitBias: map[int32]float32{-1: 5}}, "logit_bias"},
		{"stop token id past the vocabulary", unlimited, Params{MaxTokens: 2, StopIDs: []int32{V + 3}}, "stop token"},
		{"bytes overflow the budget check", budgeted, Params{MaxTokens: 1 << 58}, "max_tokens"},
		{"tokens overflow", budgeted, Params{MaxTokens: math.MaxInt - 1}, "max_tokens"},
		{"tokens overflow, no budget", unlimited, Params{MaxTokens: math.MaxInt - 1}, "max_tokens"},
	} {
		var done doneCount
		r := &Request{Prompt: prompt, N: 1, Params: c.p, Done: done.hook()}
		if err := c.e.Check(r); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check gave %v, want ErrTooLarge naming %s", c.name, err, c.want)
		}
		if _, err := c.e.Submit(r); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: Submit gave %v, want ErrTooLarge", c.name, err)
		}
		done.want(t, c.name, 1)
	}
	// KVCache.Fits itself: a count whose bytes overflow int64 does not fit.
	c := NewKVCache(&m.Config, m.Backend(), 1000*tb)
	for _, n := range []int64{1001, 1 << 62 / tb * 4, -1} {
		if c.Fits(n) {
			t.Errorf("Fits(%d) on a budget of 1000 tokens", n)
		}
	}
	if !c.Fits(1000) {
		t.Error("Fits(1000) on a budget of 1000 tokens is false")
	}
	// The engines still serve.
	for _, e := range []*Engine{budgeted, unlimited} {
		if got := run(t, e, &Request{Prompt: prompt, N: 1, Params: Params{MaxTokens: 3, IgnoreEOS: true, LogitBias: map[int32]float32{V - 1: 1}}})[0]; len(got.ids) != 3 {
			t.Fatalf("got %d tokens, want 3", len(got.ids))
		}
	}
}
