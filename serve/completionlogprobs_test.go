package serve

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
)

// forcedCompletions starts a server whose every choice writes out (then
// ends), and the completions request of prompt "hi" with logprobs top that
// reads it.
func forcedCompletions(t *testing.T, out string, top int64) (*testServer, openai.CompletionNewParams) {
	t.Helper()
	ts := startServer(t, Options{Model: tinyDir(t)}, func(s *Server) {
		ids := toInt32(s.tok.Encode(out, false))
		s.forceOutput = func([]int32, int) []int32 { return ids }
	})
	return ts, openai.CompletionNewParams{
		Model:     "tiny",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")},
		MaxTokens: openai.Int(64),
		Logprobs:  openai.Int(top),
	}
}

// streamLogprobs reads a streamed completion's one choice: its logprobs
// chunk by chunk, joined.
func streamLogprobs(t *testing.T, ts *testServer, p openai.CompletionNewParams) openai.CompletionChoiceLogprobs {
	t.Helper()
	st := ts.client.Completions.NewStreaming(context.Background(), p)
	var all openai.CompletionChoiceLogprobs
	for st.Next() {
		for _, c := range st.Current().Choices {
			all.Tokens = append(all.Tokens, c.Logprobs.Tokens...)
			all.TokenLogprobs = append(all.TokenLogprobs, c.Logprobs.TokenLogprobs...)
			all.TopLogprobs = append(all.TopLogprobs, c.Logprobs.TopLogprobs...)
			all.TextOffset = append(all.TextOffset, c.Logprobs.TextOffset...)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

// TestCompletionTopLogprobsHoldTheSampledToken: as OpenAI's legacy
// completions (and vLLM's) document, logprobs=N returns the N most likely
// tokens and always the sampled one too (up to N+1 entries), so that
// top_logprobs[i][tokens[i]] is the token's logprob, whether or not the
// model ranked it among the N; streamed, echoed or neither.
func TestCompletionTopLogprobsHoldTheSampledToken(t *testing.T) {
	// The forced output is far from the random model's favourites.
	ts, p := forcedCompletions(t, "hello world", 1)
	check := func(name string, raw string, top int) {
		t.Helper()
		// Read as sent: openai-go drops top_logprobs whole for the null
		// of the first echoed token.
		var lp completionLogprobs
		if err := json.Unmarshal([]byte(raw), &lp); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(lp.Tokens) == 0 || len(lp.TopLogprobs) != len(lp.Tokens) {
			t.Fatalf("%s: %d tokens, %d top_logprobs", name, len(lp.Tokens), len(lp.TopLogprobs))
		}
		for i, tok := range lp.Tokens {
			m := lp.TopLogprobs[i]
			if m == nil { // the first echoed prompt token has no logprob
				continue
			}
			v, ok := m[tok]
			if !ok || v != *lp.TokenLogprobs[i] || len(m) > top+1 {
				t.Errorf("%s: token %d %q (logprob %v): top_logprobs %v, want it among at most %d entries", name, i, tok, *lp.TokenLogprobs[i], m, top+1)
			}
		}
	}
	for _, top := range []int64{0, 1} {
		p.Logprobs = openai.Int(top)
		p.Echo = openai.Bool(false)
		plain, err := ts.client.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		check("plain", plain.Choices[0].Logprobs.RawJSON(), int(top))
		st := streamLogprobs(t, ts, p)
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		check("stream", string(b), int(top))
		p.Echo = openai.Bool(true)
		echo, err := ts.client.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		check("echo", echo.Choices[0].Logprobs.RawJSON(), int(top))
	}
}

// TestCompletionStreamTextOffset: a streamed completion's text_offset is
// each token's offset in the choice's text, as the whole answer gives it
// (and vLLM's stream does), not 0 in every chunk.
func TestCompletionStreamTextOffset(t *testing.T) {
	ts, p := forcedCompletions(t, "hello world", 1)
	plain, err := ts.client.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := plain.Choices[0].Logprobs.TextOffset
	if len(want) < 3 || want[2] == 0 {
		t.Fatalf("plain text_offset %v", want)
	}
	if got := streamLogprobs(t, ts, p).TextOffset; !slices.Equal(got, want) {
		t.Fatalf("streamed text_offset %v, plain %v", got, want)
	}
}
