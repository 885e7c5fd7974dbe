package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
)

type wirePromptLogprob struct {
	Logprob      float64 `json:"logprob"`
	Rank         int     `json:"rank"`
	DecodedToken string  `json:"decoded_token"`
}

// checkPromptLogprobs checks vLLM's prompt_logprobs shape for prompt:
// null first (no token before it), then for each token a map from token id
// (as a string) to its logprob, rank and text, holding the prompt's token
// and the k best (ranks 1 to k), whose logprob is want's (the echo's).
func checkPromptLogprobs(t *testing.T, ts *testServer, got []map[string]wirePromptLogprob, prompt []int32, want []*float64, k int) {
	t.Helper()
	if len(got) != len(prompt) || got[0] != nil {
		t.Fatalf("prompt_logprobs has %d entries (first %v), want %d beginning with null", len(got), got[0], len(prompt))
	}
	for j := 1; j < len(prompt); j++ {
		e, ok := got[j][fmt.Sprint(prompt[j])]
		if !ok || e.Rank < 1 || math.Abs(e.Logprob-*want[j]) > 1e-5 {
			t.Errorf("prompt_logprobs[%d] = %v: want the prompt's token %d with logprob %v (the echo's) and a rank", j, got[j], prompt[j], *want[j])
		}
		if tok, _ := ts.s.tokenString(prompt[j]); e.DecodedToken != tok {
			t.Errorf("prompt_logprobs[%d] decoded_token %q, want %q", j, e.DecodedToken, tok)
		}
		ranks := map[int]bool{}
		for id, v := range got[j] {
			if id != fmt.Sprint(prompt[j]) || v.Rank <= k {
				ranks[v.Rank] = true
			}
		}
		for r := 1; r <= k; r++ {
			if !ranks[r] {
				t.Errorf("prompt_logprobs[%d] = %v has no token of rank %d", j, got[j], r)
			}
		}
		if len(got[j]) > k+1 {
			t.Errorf("prompt_logprobs[%d] has %d entries, want at most %d", j, len(got[j]), k+1)
		}
	}
}

// TestPromptLogprobs: vLLM's prompt_logprobs k gives, for each prompt
// token after the first, its logprob and rank and the k most likely
// tokens' (completions: in each choice; chat: in the response). It was
// ignored (only a warning header). The values are the echo's (one
// scoring path). With stream, k above 0 is a 400 (0 passes, as in vLLM),
// and so is k over 20 or below -1.
func TestPromptLogprobs(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	want, prompt := echoPrompt(t, ts, "hello")
	var cmpl struct {
		Choices []struct {
			PromptLogprobs []map[string]wirePromptLogprob `json:"prompt_logprobs"`
		}
	}
	status, h, out := ts.postHeader(t, "/v1/completions", `{"model":"tiny","prompt":"hello","max_tokens":1,"n":2,"prompt_logprobs":2}`)
	if status != http.StatusOK || h.Get(WarningHeader) != "" || json.Unmarshal([]byte(out), &cmpl) != nil || len(cmpl.Choices) != 2 {
		t.Fatalf("completions: %d, %s %q: %s", status, WarningHeader, h.Get(WarningHeader), out)
	}
	for _, c := range cmpl.Choices {
		checkPromptLogprobs(t, ts, c.PromptLogprobs, prompt, want, 2)
	}

	var chat struct {
		PromptLogprobs []map[string]wirePromptLogprob `json:"prompt_logprobs"`
		PromptTokenIDs []int32                        `json:"prompt_token_ids"`
	}
	status, h, out = ts.postHeader(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hello"}],"max_tokens":1,"return_token_ids":true,"prompt_logprobs":0}`)
	if status != http.StatusOK || h.Get(WarningHeader) != "" || json.Unmarshal([]byte(out), &chat) != nil {
		t.Fatalf("chat: %d, %s %q: %s", status, WarningHeader, h.Get(WarningHeader), out)
	}
	var chatEcho struct {
		Choices []struct {
			Logprobs struct {
				TokenLogprobs []*float64 `json:"token_logprobs"`
			} `json:"logprobs"`
		}
	}
	ids, _ := json.Marshal(chat.PromptTokenIDs)
	status, out = ts.post(t, "/v1/completions", `{"model":"tiny","prompt":`+string(ids)+`,"max_tokens":0,"echo":true,"logprobs":0}`)
	if status != http.StatusOK || json.Unmarshal([]byte(out), &chatEcho) != nil {
		t.Fatalf("echo of the chat prompt: %d %s", status, out)
	}
	checkPromptLogprobs(t, ts, chat.PromptLogprobs, chat.PromptTokenIDs, chatEcho.Choices[0].Logprobs.TokenLogprobs, 0)

	for _, c := range []struct{ body, param string }{
		{`{"model":"tiny","prompt":"hi","max_tokens":1,"stream":true,"prompt_logprobs":1}`, "prompt_logprobs"},
		{`{"model":"tiny","prompt":"hi","max_tokens":1,"prompt_logprobs":21}`, "prompt_logprobs"},
		{`{"model":"tiny","prompt":"hi","max_tokens":1,"prompt_logprobs":-2}`, "prompt_logprobs"},
		{`{"model":"tiny","prompt":"hi","max_tokens":1,"stream":true,"prompt_logprobs":0}`, ""},
	} {
		status, h, out := ts.postHeader(t, "/v1/completions", c.body)
		if c.param == "" {
			if status != http.StatusOK || h.Get(WarningHeader) != "" {
				t.Errorf("%s: %d, %s %q, want 200 and no warning", c.body, status, WarningHeader, h.Get(WarningHeader))
			}
			continue
		}
		if status != http.StatusBadRequest || !strings.Contains(out, `"param":"`+c.param+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", c.body, status, out, c.param)
		}
	}
}

// echoPrompt scores prompt by an echo completion (max_tokens 0) and
// returns its tokens' logprobs and ids: the values prompt_logprobs must
// give, from the one scoring path.
func echoPrompt(t *testing.T, ts *testServer, prompt string) ([]*float64, []int32) {
	t.Helper()
	var echo struct {
		Choices []struct {
			Logprobs struct {
				TokenLogprobs []*float64 `json:"token_logprobs"`
			} `json:"logprobs"`
			PromptTokenIDs []int32 `json:"prompt_token_ids"`
		}
	}
	body, err := json.Marshal(map[string]any{"model": "tiny", "prompt": prompt, "max_tokens": 0, "echo": true, "logprobs": 0, "return_token_ids": true})
	if err != nil {
		t.Fatal(err)
	}
	status, out := ts.post(t, "/v1/completions", string(body))
	if status != http.StatusOK || json.Unmarshal([]byte(out), &echo) != nil {
		t.Fatalf("echo: %d %s", status, out)
	}
	return echo.Choices[0].Logprobs.TokenLogprobs, echo.Choices[0].PromptTokenIDs
}
