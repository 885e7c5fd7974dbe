package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestKnowableNoTokenIs400: a request whose fields alone leave its first
// token no candidate (allowed_token_ids held back by min_tokens, or all
// banned by bad_words, or none of them able to begin response_format's
// document) is a 400 naming allowed_token_ids and the field it clashes
// with, sent before any generation (a stream gets it instead of its 200);
// it was the 500 constraint_no_token, counted as a server fault. Requests
// whose allowed tokens can begin the output still run, and an echo-only one
// (max_tokens 0), which samples nothing, is answered.
func TestKnowableNoTokenIs400(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	const eos = 258 // testdata/tiny/generation_config.json
	id := func(s string) int {
		ids := ts.s.tok.Encode(s, false)
		if len(ids) != 1 {
			t.Fatalf("%q is tokens %v, want one", s, ids)
		}
		return ids[0]
	}
	a, open, close := id("a"), id("{"), id("}")
	for _, c := range []struct {
		path, body string
		also       string // the other field the message names
	}{
		{"/v1/completions", fmt.Sprintf(`{"model":"tiny","prompt":"hi","max_tokens":4,"allowed_token_ids":[%d],"min_tokens":1}`, eos), "min_tokens"},
		{"/v1/completions", fmt.Sprintf(`{"model":"tiny","prompt":"hi","max_tokens":4,"allowed_token_ids":[%d,7],"stop_token_ids":[7],"min_tokens":2,"stream":true}`, eos), "min_tokens"},
		{"/v1/completions", fmt.Sprintf(`{"model":"tiny","prompt":"hi","max_tokens":4,"allowed_token_ids":[%d],"bad_words":["a"]}`, a), "bad_words"},
		{"/v1/chat/completions", fmt.Sprintf(`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"allowed_token_ids":[%d],"response_format":{"type":"json_object"}}`, a), "response_format"},
		{"/v1/chat/completions", fmt.Sprintf(`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"allowed_token_ids":[%d],"response_format":{"type":"json_object"},"stream":true}`, a), "response_format"},
	} {
		status, out := ts.post(t, c.path, c.body)
		var eb struct {
			Error struct {
				Message string  `json:"message"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		json.Unmarshal([]byte(out), &eb)
		if status != http.StatusBadRequest || eb.Error.Param == nil || *eb.Error.Param != "allowed_token_ids" || !strings.Contains(eb.Error.Message, c.also) {
			t.Errorf("%s: %d %s, want 400 naming allowed_token_ids and %s", c.body, status, out, c.also)
		}
	}
	if v := metricValue(t, ts, `hone_serve_no_token_errors_total{code="constraint_no_token"}`); v != "" && v != "0" {
		t.Errorf("constraint_no_token counted %s times, want none", v)
	}

	// Allowed tokens that can begin the output.
	if c := ts.oneChoice(t, fmt.Sprintf(`{"model":"tiny","prompt":"hi","max_tokens":4,"temperature":0,"allowed_token_ids":[%d,%d],"min_tokens":1,"return_token_ids":true}`, eos, a)); c.Text == "" {
		t.Errorf("allowed EOS and %d with min_tokens 1: %+v, want text", a, c)
	}
	var resp struct {
		Choices []struct{ Message struct{ Content string } }
	}
	ts.postHonoured(t, "/v1/chat/completions", fmt.Sprintf(`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"temperature":0,
		"allowed_token_ids":[%d,%d,%d],"response_format":{"type":"json_object"}}`, open, close, eos), &resp)
	if got := resp.Choices[0].Message.Content; got != "{}" {
		t.Errorf("allowed {, } and EOS under json_object: %q, want {}", got)
	}

	// An echo-only completion (max_tokens 0) samples no token, so what its
	// filters leave for a first token does not matter: it is answered with
	// its prompt, as vLLM answers it, not refused.
	if c := ts.oneChoice(t, fmt.Sprintf(`{"model":"tiny","prompt":"hi","max_tokens":0,"echo":true,"allowed_token_ids":[%d],"bad_words":["a"]}`, a)); c.Text != "hi" || c.FinishReason != "length" {
		t.Errorf("echo-only with no first token left: %+v, want the prompt, finish length", c)
	}
}
