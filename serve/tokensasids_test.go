package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// tokenIDOf reads vLLM's "token_id:<id>" logprob token; ok false for any
// other string.
func tokenIDOf(tok string) (int32, bool) {
	s, ok := strings.CutPrefix(tok, "token_id:")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(s, 10, 32)
	return int32(id), err == nil
}

// forcedServer starts a server whose every choice writes out, with a
// character split across byte tokens in it.
func forcedServer(t *testing.T, out string) *testServer {
	t.Helper()
	return startServer(t, Options{Model: tinyDir(t)}, func(s *Server) {
		ids := toInt32(s.tok.Encode(out, false))
		s.forceOutput = func([]int32, int) []int32 { return ids }
	})
}

func int64s(b []byte) []int64 {
	out := make([]int64, len(b))
	for i, c := range b {
		out[i] = int64(c)
	}
	return out
}

// checkChatTokenIDs compares chat logprobs asked for with
// return_tokens_as_token_ids (got) to the same tokens' plain ones: each
// token is "token_id:<id>" of the sampled id, its bytes still the token's
// text (vLLM writes the decoded token's bytes there); each alternative is
// "token_id:<id>" of the id whose text the plain answer named, its bytes
// those of the "token_id:<id>" string (as vLLM writes them); logprobs the
// same.
func checkChatTokenIDs(t *testing.T, ts *testServer, name string, ids []int32, plain, got []openai.ChatCompletionTokenLogprob) {
	t.Helper()
	if len(got) == 0 || len(got) != len(ids) || len(got) != len(plain) {
		t.Fatalf("%s: %d logprobs, %d ids, %d plain logprobs", name, len(got), len(ids), len(plain))
	}
	for i, g := range got {
		p := plain[i]
		if want := fmt.Sprintf("token_id:%d", ids[i]); g.Token != want || !slices.Equal(g.Bytes, p.Bytes) || g.Logprob != p.Logprob {
			t.Errorf("%s: token %d is %q bytes %v logprob %v, want %q bytes %v logprob %v", name, i, g.Token, g.Bytes, g.Logprob, want, p.Bytes, p.Logprob)
		}
		if len(g.TopLogprobs) != len(p.TopLogprobs) || len(g.TopLogprobs) == 0 {
			t.Fatalf("%s: token %d: %d top_logprobs, plain %d", name, i, len(g.TopLogprobs), len(p.TopLogprobs))
		}
		for j, gt := range g.TopLogprobs {
			id, ok := tokenIDOf(gt.Token)
			if !ok {
				t.Errorf("%s: token %d top %d is %q, want token_id:<id>", name, i, j, gt.Token)
				continue
			}
			text, _ := ts.s.tokenString(id)
			pt := p.TopLogprobs[j]
			if !slices.Equal(int64s([]byte(text)), pt.Bytes) || !slices.Equal(gt.Bytes, int64s([]byte(gt.Token))) || gt.Logprob != pt.Logprob {
				t.Errorf("%s: token %d top %d: %q bytes %v logprob %v; plain %q bytes %v logprob %v", name, i, j, gt.Token, gt.Bytes, gt.Logprob, pt.Token, pt.Bytes, pt.Logprob)
			}
		}
	}
}

// TestReturnTokensAsTokenIDsChat: vLLM's return_tokens_as_token_ids, read
// by clients (OpenPipe ART) that recover the sampled ids from the logprobs,
// writes each logprobs token as "token_id:<id>", whole and streamed, and is
// no field the server ignores (X-Hone-Warning).
func TestReturnTokensAsTokenIDsChat(t *testing.T) {
	ts := forcedServer(t, "hé wörld")
	ctx := context.Background()
	p := chatParams("tiny", 3, 32)
	p.Logprobs = openai.Bool(true)
	p.TopLogprobs = openai.Int(3)
	plain, err := ts.client.Chat.Completions.New(ctx, p, option.WithJSONSet("return_token_ids", true))
	if err != nil {
		t.Fatal(err)
	}
	var httpResp *http.Response
	asIDs, err := ts.client.Chat.Completions.New(ctx, p, option.WithJSONSet("return_token_ids", true),
		option.WithJSONSet("return_tokens_as_token_ids", true), option.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	if w := httpResp.Header.Values(WarningHeader); len(w) > 0 {
		t.Errorf("return_tokens_as_token_ids answered with %s: %q", WarningHeader, w)
	}
	ids := intsField(t, asIDs.Choices[0].JSON.ExtraFields["token_ids"].Raw())
	checkChatTokenIDs(t, ts, "whole", ids, plain.Choices[0].Logprobs.Content, asIDs.Choices[0].Logprobs.Content)

	st := ts.client.Chat.Completions.NewStreaming(ctx, p, option.WithJSONSet("return_tokens_as_token_ids", true))
	var streamed []openai.ChatCompletionTokenLogprob
	for st.Next() {
		for _, c := range st.Current().Choices {
			streamed = append(streamed, c.Logprobs.Content...)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	checkChatTokenIDs(t, ts, "stream", ids, plain.Choices[0].Logprobs.Content, streamed)
}

// checkCompletionTokenIDs compares completions logprobs asked for with
// return_tokens_as_token_ids (got) to plain ones of the same tokens: each
// token is "token_id:<id>" of an id whose text the plain answer gives,
// with the same logprob; each top_logprobs key is "token_id:<id>" of an
// id among the plain alternatives (or sharing the sampled token's text,
// which the plain answer keeps for the sampled token), and the sampled
// token's key holds its logprob. text_offset is checked by
// checkTokenIDOffsets, as whole and streamed answers count it differently.
func checkCompletionTokenIDs(t *testing.T, ts *testServer, name, plainRaw, gotRaw string, top int) {
	t.Helper()
	var plain, got completionLogprobs
	if err := json.Unmarshal([]byte(plainRaw), &plain); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := json.Unmarshal([]byte(gotRaw), &got); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(got.Tokens) == 0 || len(got.Tokens) != len(plain.Tokens) || len(got.TopLogprobs) != len(got.Tokens) {
		t.Fatalf("%s: %d tokens (%d top_logprobs), plain %d", name, len(got.Tokens), len(got.TopLogprobs), len(plain.Tokens))
	}
	for i, tok := range got.Tokens {
		id, ok := tokenIDOf(tok)
		text, _ := ts.s.tokenString(id)
		if !ok || wireText(text) != plain.Tokens[i] {
			t.Errorf("%s: token %d is %q, plain %q", name, i, tok, plain.Tokens[i])
			continue
		}
		if (got.TokenLogprobs[i] == nil) != (plain.TokenLogprobs[i] == nil) || got.TokenLogprobs[i] != nil && *got.TokenLogprobs[i] != *plain.TokenLogprobs[i] {
			t.Errorf("%s: token %d logprob %v, plain %v", name, i, got.TokenLogprobs[i], plain.TokenLogprobs[i])
		}
		m := got.TopLogprobs[i]
		if m == nil { // the first echoed prompt token has no logprob
			continue
		}
		if v, ok := m[tok]; !ok || v != *got.TokenLogprobs[i] || len(m) > top+1 {
			t.Errorf("%s: token %d %q: top_logprobs %v", name, i, tok, m)
		}
		for k, v := range m {
			kid, ok := tokenIDOf(k)
			ktext, _ := ts.s.tokenString(kid)
			if ok && wireText(ktext) == plain.Tokens[i] {
				// The plain answer names only the sampled token by its
				// text; ids tell apart the alternatives that share it.
				continue
			}
			if pv, in := plain.TopLogprobs[i][wireText(ktext)]; !ok || !in || pv < v {
				t.Errorf("%s: token %d: top_logprobs key %q (%v), plain %v", name, i, k, v, plain.TopLogprobs[i])
			}
		}
	}
}

// TestReturnTokensAsTokenIDsCompletions: the same for /v1/completions:
// logprobs.tokens and the top_logprobs keys are "token_id:<id>", whole,
// echoed (the prompt's tokens too) and streamed.
func TestReturnTokensAsTokenIDsCompletions(t *testing.T) {
	const top = 2
	ts, p := forcedCompletions(t, "hé wörld", top)
	ctx := context.Background()
	asIDs := option.WithJSONSet("return_tokens_as_token_ids", true)
	for _, echo := range []bool{false, true} {
		p.Echo = openai.Bool(echo)
		plain, err := ts.client.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var httpResp *http.Response
		got, err := ts.client.Completions.New(ctx, p, asIDs, option.WithResponseInto(&httpResp))
		if err != nil {
			t.Fatal(err)
		}
		if w := httpResp.Header.Values(WarningHeader); len(w) > 0 {
			t.Errorf("return_tokens_as_token_ids answered with %s: %q", WarningHeader, w)
		}
		checkCompletionTokenIDs(t, ts, fmt.Sprintf("echo %v", echo), plain.Choices[0].Logprobs.RawJSON(), got.Choices[0].Logprobs.RawJSON(), top)
		checkTokenIDOffsets(t, fmt.Sprintf("echo %v", echo), got.Choices[0].Logprobs.RawJSON())
		if echo {
			continue
		}
		raw := func(opts ...option.RequestOption) string {
			st := ts.client.Completions.NewStreaming(ctx, p, opts...)
			var all completionLogprobs
			for st.Next() {
				var lp completionLogprobs
				if err := json.Unmarshal([]byte(st.Current().Choices[0].Logprobs.RawJSON()), &lp); err != nil {
					t.Fatal(err)
				}
				all.Tokens = append(all.Tokens, lp.Tokens...)
				all.TokenLogprobs = append(all.TokenLogprobs, lp.TokenLogprobs...)
				all.TopLogprobs = append(all.TopLogprobs, lp.TopLogprobs...)
				all.TextOffset = append(all.TextOffset, lp.TextOffset...)
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(all)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		if plainStream := raw(); !bytes.Contains([]byte(plainStream), []byte("token_id:")) {
			asIDStream := raw(asIDs)
			checkCompletionTokenIDs(t, ts, "stream", plainStream, asIDStream, top)
			// Streamed, vLLM counts each chunk's offset in the text sent
			// before it, as without the ids.
			var plainLP, gotLP completionLogprobs
			if json.Unmarshal([]byte(plainStream), &plainLP) != nil || json.Unmarshal([]byte(asIDStream), &gotLP) != nil ||
				!slices.Equal(gotLP.TextOffset, plainLP.TextOffset) {
				t.Errorf("stream: text_offset %v, plain %v", gotLP.TextOffset, plainLP.TextOffset)
			}
		} else {
			t.Fatalf("plain stream already holds token_id: tokens: %s", plainStream)
		}
	}
}

// checkTokenIDOffsets: a whole answer's text_offset with
// return_tokens_as_token_ids counts the "token_id:<id>" strings it
// returns, as vLLM's does: 0, then each offset the one before plus the
// length of the token before (the echoed prompt's tokens included).
func checkTokenIDOffsets(t *testing.T, name, raw string) {
	t.Helper()
	var lp completionLogprobs
	if err := json.Unmarshal([]byte(raw), &lp); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	want := make([]int, len(lp.Tokens))
	for i := 1; i < len(want); i++ {
		want[i] = want[i-1] + len(lp.Tokens[i-1])
	}
	if !slices.Equal(lp.TextOffset, want) {
		t.Errorf("%s: text_offset %v over tokens %q, want %v (the lengths of the tokens returned, as vLLM counts them)", name, lp.TextOffset, lp.Tokens, want)
	}
}
