package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"unicode/utf8"

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

// duplicateKeys returns the keys that some object of the JSON document
// raw holds more than once, as its decoded text.
func duplicateKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		obj  bool
		seen map[string]bool
		key  bool // obj: the next token is a key
	}
	var stack []frame
	var dups []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return dups
		}
		if err != nil {
			t.Fatal(err)
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].obj && stack[top].key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:top]
				continue
			}
			k := tok.(string)
			if stack[top].seen[k] {
				dups = append(dups, k)
			}
			stack[top].seen[k], stack[top].key = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{obj: true, seen: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim(']'), json.Delim('}'):
			stack = stack[:top]
			top--
		}
		if top >= 0 && stack[top].obj {
			stack[top].key = true
		}
	}
}

// TestCompletionTopLogprobsByteTokens: tokens that are bytes of a
// character split across tokens have the same text on the wire (JSON has
// no invalid UTF-8: each such byte is written "\ufffd"), so a choice's
// top_logprobs, an object keyed by text, holds each wire text once, and
// top_logprobs[i][tokens[i]] is the sampled token's logprob. Before, they
// were keyed by their raw bytes, and several went out as the same key:
// a client kept one of them, often not the sampled token's.
func TestCompletionTopLogprobsByteTokens(t *testing.T) {
	const out = "日本語のテキスト"
	ts, p := forcedCompletions(t, out, 5)
	// Precondition: some position's sampled token and top 5 hold two
	// distinct tokens that are not whole characters.
	status, body := ts.post(t, "/v1/chat/completions", `{"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 64, "logprobs": true, "top_logprobs": 5}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var chat chatResponse
	if err := json.Unmarshal([]byte(body), &chat); err != nil {
		t.Fatal(err)
	}
	collide := false
	for _, c := range chat.Choices[0].Logprobs.Content {
		partial := map[string]bool{}
		for _, tl := range append([]topLogprob{{Bytes: c.Bytes}}, c.TopLogprobs...) {
			if b := intsBytes(tl.Bytes); !utf8.Valid(b) {
				partial[string(b)] = true
			}
		}
		collide = collide || len(partial) > 1
	}
	if !collide {
		t.Fatalf("no position has two partial-character tokens among its sampled and top 5; the test tests nothing")
	}
	check := func(name string, raw []byte) {
		t.Helper()
		if d := duplicateKeys(t, raw); len(d) > 0 {
			t.Errorf("%s: top_logprobs repeat keys %q", name, d)
		}
		var lp completionLogprobs
		if err := json.Unmarshal(raw, &lp); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, tok := range lp.Tokens {
			if v, ok := lp.TopLogprobs[i][tok]; !ok || v != *lp.TokenLogprobs[i] {
				t.Errorf("%s: token %d %q (logprob %v): top_logprobs %v", name, i, tok, *lp.TokenLogprobs[i], lp.TopLogprobs[i])
			}
		}
	}
	plain, err := ts.client.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	check("plain", []byte(plain.Choices[0].Logprobs.RawJSON()))
	st := ts.client.Completions.NewStreaming(context.Background(), p)
	for st.Next() {
		for _, c := range st.Current().Choices {
			if c.Logprobs.RawJSON() != "" {
				check("stream", []byte(c.Logprobs.RawJSON()))
			}
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
}

func intsBytes(ints []int) []byte {
	b := make([]byte, len(ints))
	for i, v := range ints {
		b[i] = byte(v)
	}
	return b
}
