package serve

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/hone-rl/hone/serve/engine"
)

// TestWireLogprob: JSON has no −Inf or NaN (Go's encoder refuses them and
// the whole response with them), so a logprob the API writes is clamped:
// −Inf, NaN and anything below −9999 become −9999, as vLLM's OpenAI server
// writes them; +Inf (never a logprob) becomes 0; the rest pass unchanged.
func TestWireLogprob(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct{ in, want float32 }{
		{0, 0}, {-1.5, -1.5}, {-9999, -9999}, {-1e6, -9999}, {-inf, -9999},
		{float32(math.NaN()), -9999}, {inf, 0}, {1e-7, 1e-7},
	} {
		if got := wireLogprob(c.in); got != c.want {
			t.Errorf("wireLogprob(%g) = %g, want %g", c.in, got, c.want)
		}
	}
}

// TestTokenLogprobsNotFinite: a row holding +Inf gives its finite tokens
// logprob −Inf (kernels.RowChooser's rule), and a broken row may give NaN;
// the chat API's logprobs of such a step must still encode, as −9999.
func TestTokenLogprobsNotFinite(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	inf := float32(math.Inf(1))
	out := ts.s.tokenLogprobs([]int32{104, 105}, []float32{0, float32(math.NaN())},
		[][]engine.TokenLogprob{{{ID: 104, Logprob: 0}, {ID: 105, Logprob: -inf}}, {{ID: 106, Logprob: -inf}}}, false)
	b, err := json.Marshal(chatLogprobs{Content: out})
	if err != nil {
		t.Fatalf("logprobs with −Inf and NaN do not encode: %v", err)
	}
	if got := strings.Count(string(b), `"logprob":-9999`); got != 3 {
		t.Errorf("%d logprobs written as −9999, want 3: %s", got, b)
	}
}

// TestChunkLogprobsNotFinite: the same for a streamed completion's chunk,
// which wrote the values as they came, so that json.Marshal failed on
// −Inf and the chunk was lost; and of two top alternatives with the same
// text (two ids of one string) it kept the worse.
func TestChunkLogprobsNotFinite(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	inf := float32(math.Inf(1))
	off := 0
	lp := ts.s.chunkLogprobs(104, float32(math.NaN()), []engine.TokenLogprob{{ID: 104, Logprob: -1}, {ID: 105, Logprob: -inf}, {ID: 104, Logprob: -2}}, &off, false)
	b, err := json.Marshal(completionResponse{Choices: []completionChoice{{Logprobs: lp}}})
	if err != nil {
		t.Fatalf("a chunk's logprobs with −Inf and NaN do not encode: %v", err)
	}
	if *lp.TokenLogprobs[0] != -9999 || len(lp.TopLogprobs[0]) != 2 || lp.TopLogprobs[0]["h"] != -1 || lp.TopLogprobs[0]["i"] != -9999 {
		t.Errorf("chunk logprobs %s", b)
	}
}
