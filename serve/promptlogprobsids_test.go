package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPromptLogprobsTokensAsIDs: under return_tokens_as_token_ids,
// prompt_logprobs' decoded_token stays each token's text, as in vLLM,
// whose serving code passes the engine's prompt logprobs through (only
// -inf clamped) and writes "token_id:<id>" in the logprobs field alone;
// the logprobs of the output still name tokens "token_id:<id>". Before,
// hone-serve wrote "token_id:<id>" as prompt_logprobs' decoded_token too,
// for completions and chat.
func TestPromptLogprobsTokensAsIDs(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	want, prompt := echoPrompt(t, ts, "hello there")
	var cmpl struct {
		Choices []struct {
			PromptLogprobs []map[string]wirePromptLogprob `json:"prompt_logprobs"`
			Logprobs       struct {
				Tokens []string `json:"tokens"`
			} `json:"logprobs"`
		}
	}
	status, out := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"hello there","max_tokens":1,"logprobs":0,"prompt_logprobs":2,"return_tokens_as_token_ids":true}`)
	if status != http.StatusOK || json.Unmarshal([]byte(out), &cmpl) != nil || len(cmpl.Choices) != 1 {
		t.Fatalf("completions: %d %s", status, out)
	}
	checkPromptLogprobs(t, ts, cmpl.Choices[0].PromptLogprobs, prompt, want, 2)
	for _, m := range cmpl.Choices[0].PromptLogprobs[1:] {
		for id, e := range m {
			if tok := jsonText(t, ts, atoi32(t, id)); e.DecodedToken != tok {
				t.Errorf("completions: prompt_logprobs entry %s decoded_token %q, want its text %q", id, e.DecodedToken, tok)
			}
		}
	}
	if toks := cmpl.Choices[0].Logprobs.Tokens; len(toks) != 1 || !strings.HasPrefix(toks[0], "token_id:") {
		t.Errorf("completions: logprobs tokens %q, want the output's token as token_id:<id>", toks)
	}

	var chat struct {
		PromptLogprobs []map[string]wirePromptLogprob `json:"prompt_logprobs"`
	}
	status, out = ts.post(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hello"}],"max_tokens":1,"prompt_logprobs":1,"return_tokens_as_token_ids":true}`)
	if status != http.StatusOK || json.Unmarshal([]byte(out), &chat) != nil || len(chat.PromptLogprobs) < 2 {
		t.Fatalf("chat: %d %s", status, out)
	}
	for j, m := range chat.PromptLogprobs[1:] {
		for id, e := range m {
			if tok := jsonText(t, ts, atoi32(t, id)); e.DecodedToken != tok {
				t.Errorf("chat: prompt_logprobs[%d] entry %s decoded_token %q, want its text %q", j+1, id, e.DecodedToken, tok)
			}
		}
	}
}

func atoi32(t *testing.T, s string) int32 {
	t.Helper()
	var v int32
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("token id %q: %v", s, err)
	}
	return v
}

// jsonText is id's text as JSON carries it (a byte that is not UTF-8 read
// back as U+FFFD).
func jsonText(t *testing.T, ts *testServer, id int32) string {
	t.Helper()
	tok, _ := ts.s.tokenString(id)
	b, err := json.Marshal(tok)
	if err != nil {
		t.Fatal(err)
	}
	var back string
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}
