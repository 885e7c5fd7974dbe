package serve

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hone-rl/hone/serve/engine"
)

// badWordsFilter is the constraint the server builds for a request whose
// bad_words are words, after its output so far is out.
func badWordsFilter(t *testing.T, ts *testServer, words []string, out []int32) engine.Constraint {
	t.Helper()
	cons, err := ts.s.filterTokens(&samplingFields{BadWords: words}, &engine.Params{MaxTokens: 64}, nil)
	if err != nil {
		t.Fatalf("bad_words %d words: %v", len(words), err)
	}
	c := cons(0)
	for _, id := range out {
		if err := c.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestBadWordsCostIndependentOfCount: a step's bad_words check cost what
// the number of words did, every word's prefix compared with the output
// on the engine goroutine, which serves every request: 1.7 million
// two-letter words (an 8 MiB body) took the tiny model from 0.14 ms to
// some 11 ms a token for a plain request beside it. The words' prefixes
// are now looked up from the output's last tokens, so that words whose
// prefixes the output does not end with cost nothing: 10,000 such words
// mask a row within a generous factor of 10 words' time.
func TestBadWordsCostIndependentOfCount(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	words := func(n int) []string {
		var ws []string
		for i := range n {
			// Three letters, the first two from a to y: the output
			// below ends with z, so that no prefix matches.
			ws = append(ws, string([]byte{byte('a' + i%25), byte('a' + i/25%25), byte('a' + i/625%26)}))
		}
		return ws
	}
	out := []int32{'z', 'z', 'z'}
	perMask := func(c engine.Constraint) time.Duration {
		row := make([]float32, ts.s.m.Config.Vocab)
		best := time.Duration(math.MaxInt64)
		for range 5 {
			t0 := time.Now()
			for range 1000 {
				c.Mask(row)
			}
			best = min(best, time.Since(t0)/1000)
		}
		return best
	}
	few := perMask(badWordsFilter(t, ts, words(10), out))
	many := perMask(badWordsFilter(t, ts, words(10000), out))
	if many > 20*max(few, 100*time.Nanosecond) {
		t.Errorf("a row's bad_words mask took %v with 10,000 words and %v with 10: want the word count not to set it", many, few)
	}
}

// TestBadWordsMaskIsVLLMRule: the bad_words mask bans, after any output,
// exactly what vLLM's rule does: each word's last token wherever the
// output ends with the tokens before it (a one-token word everywhere),
// for random words and outputs over a few letters, so that prefixes
// overlap, nest and repeat.
func TestBadWordsMaskIsVLLMRule(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	rng := rand.New(rand.NewPCG(7, 11))
	letters := []byte("abc")
	for trial := range 1000 {
		var words []string
		for range 1 + rng.IntN(12) {
			w := make([]byte, 1+rng.IntN(6))
			for i := range w {
				w[i] = letters[rng.IntN(len(letters))]
			}
			words = append(words, string(w))
		}
		out := make([]int32, rng.IntN(10))
		for i := range out {
			out[i] = int32(letters[rng.IntN(len(letters))])
		}
		ids, err := ts.s.badWordIDs(words)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]bool, ts.s.m.Config.Vocab)
		for _, w := range ids {
			pre := len(w) - 1
			if pre <= len(out) && slices.Equal(out[len(out)-pre:], w[:pre]) {
				want[w[pre]] = true
			}
		}
		row := make([]float32, ts.s.m.Config.Vocab)
		badWordsFilter(t, ts, words, out).Mask(row)
		for id := range row {
			if got := math.IsInf(float64(row[id]), -1); got != want[id] {
				t.Fatalf("trial %d: bad_words %q after output %q: token %d banned %v, want %v", trial, words, string(toBytes(out)), id, got, want[id])
			}
		}
	}
}

func toBytes(ids []int32) []byte {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return b
}
