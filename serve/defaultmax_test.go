package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestDefaultMaxTokensFitsKVBudget: a request that leaves max_tokens out
// gets as many tokens as the KV cache budget holds for its n choices, not a
// 400 for the server's default cap it never asked for. With 256 bytes of
// KV a token (tiny) and room for 100 tokens, n=2 over a 2-token prompt
// gets 48 tokens a choice; it was refused ("2 prompt tokens + 4094
// max_tokens × n=2 need … bytes of KV cache"). An explicit max_tokens over
// the budget is still refused.
func TestDefaultMaxTokensFitsKVBudget(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), KVCacheBytes: 100 * 256}, nil)
	for _, c := range []struct {
		path, body   string
		n, perChoice int
	}{
		{"/v1/completions", `{"model":"tiny","prompt":[97,98],"n":2,"ignore_eos":true}`, 2, 48},
		{"/v1/completions", `{"model":"tiny","prompt":[97,98],"ignore_eos":true}`, 1, 98},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"n":2,"ignore_eos":true}`, 2, 0},
	} {
		status, body := ts.post(t, c.path, c.body)
		if status != 200 {
			t.Fatalf("%s %s: status %d, want 200: %.300s", c.path, c.body, status, body)
		}
		var resp struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatal(err)
		}
		want := c.perChoice
		if want == 0 { // the chat prompt's length is the template's
			want = 100/c.n - resp.Usage.PromptTokens
		}
		if len(resp.Choices) != c.n || resp.Usage.CompletionTokens != c.n*want {
			t.Fatalf("%s %s: %d choices, %d completion tokens; want %d × %d: %.300s", c.path, c.body, len(resp.Choices), resp.Usage.CompletionTokens, c.n, want, body)
		}
		for _, ch := range resp.Choices {
			if ch.FinishReason != "length" {
				t.Fatalf("%s: finish_reason %q, want length", c.path, ch.FinishReason)
			}
		}
	}
	status, body := ts.post(t, "/v1/completions", fmt.Sprintf(`{"model":"tiny","prompt":[97,98],"n":2,"max_tokens":%d}`, 49))
	if status != 400 || !strings.Contains(body, "KV cache") {
		t.Fatalf("explicit max_tokens over the budget: %d %.300s", status, body)
	}
}

// TestMaxTokensOverKVBudgetNamesParam: an explicit max_tokens (or
// max_completion_tokens) over the KV cache budget is a 400 naming that
// field, or n when it is the n choices that do not fit, in the words of
// the API with its numbers; it was param null and the engine's words
// ("engine: request does not fit: …").
func TestMaxTokensOverKVBudgetNamesParam(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), KVCacheBytes: 100 * 256}, nil)
	for _, c := range []struct {
		path, body, param string
		says              []string
	}{
		{"/v1/completions", `{"model":"tiny","prompt":[97,98],"max_tokens":99}`, "max_tokens",
			[]string{"max_tokens=99", "2 prompt tokens", "100 tokens", "At most 98"}},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":99}`, "max_completion_tokens",
			[]string{"max_completion_tokens=99", "100 tokens"}},
		{"/v1/completions", `{"model":"tiny","prompt":[97,98],"n":3,"max_tokens":40}`, "n",
			[]string{"n=3", "max_tokens=40", "100 tokens", "At most 2"}},
	} {
		status, body := ts.post(t, c.path, c.body)
		var resp struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatalf("%s: %v: %s", c.body, err, body)
		}
		e := resp.Error
		if status != 400 || e.Param == nil || *e.Param != c.param || e.Type != "invalid_request_error" {
			t.Errorf("%s: %d %s; want 400, invalid_request_error, param %q", c.body, status, body, c.param)
			continue
		}
		if strings.Contains(e.Message, "engine") || !strings.Contains(e.Message, "KV cache") {
			t.Errorf("%s: message %q reads as the engine's, not the API's", c.body, e.Message)
		}
		for _, w := range c.says {
			if !strings.Contains(e.Message, w) {
				t.Errorf("%s: message %q does not say %q", c.body, e.Message, w)
			}
		}
	}
}

// TestPromptOverKVBudgetNamesPrompt: a prompt that leaves no room in the
// KV cache budget for even one completion token is a 400 naming the
// prompt, and one whose n copies leave none names n, whether or not
// max_tokens is given. It was "lower max_tokens" (even for max_tokens=0,
// which cannot be lowered) or, without max_tokens, param null in the
// engine's words.
func TestPromptOverKVBudgetNamesPrompt(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), KVCacheBytes: 100 * 256}, nil)
	ids := func(k int) string { return strings.TrimSuffix(strings.Repeat("97,", k), ",") }
	for _, c := range []struct {
		body, param string
		says        []string
	}{
		{fmt.Sprintf(`{"model":"tiny","prompt":[%s],"max_tokens":5}`, ids(120)), "prompt", []string{"120 prompt tokens", "100 tokens"}},
		{fmt.Sprintf(`{"model":"tiny","prompt":[%s]}`, ids(120)), "prompt", []string{"120 prompt tokens", "100 tokens"}},
		{fmt.Sprintf(`{"model":"tiny","prompt":[%s],"max_tokens":0,"echo":true}`, ids(120)), "prompt", []string{"120 prompt tokens", "100 tokens"}},
		{fmt.Sprintf(`{"model":"tiny","prompt":[%s]}`, ids(100)), "prompt", []string{"100 prompt tokens", "100 tokens"}},
		{fmt.Sprintf(`{"model":"tiny","prompt":[%s],"n":2}`, ids(60)), "n", []string{"n=2", "100 tokens", "At most 1"}},
	} {
		status, body := ts.post(t, "/v1/completions", c.body)
		var resp struct {
			Error struct {
				Message string  `json:"message"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil {
			t.Fatalf("%.80s: %v: %s", c.body, err, body)
		}
		e := resp.Error
		if status != 400 || e.Param == nil || *e.Param != c.param {
			t.Errorf("%.80s: %d %s; want 400 with param %q", c.body, status, body, c.param)
			continue
		}
		if strings.Contains(e.Message, "engine") || strings.Contains(e.Message, "lower max_tokens") {
			t.Errorf("%.80s: message %q", c.body, e.Message)
		}
		for _, w := range c.says {
			if !strings.Contains(e.Message, w) {
				t.Errorf("%.80s: message %q does not say %q", c.body, e.Message, w)
			}
		}
	}
	// The prompt with room for exactly one token still runs.
	status, body := ts.post(t, "/v1/completions", fmt.Sprintf(`{"model":"tiny","prompt":[%s],"ignore_eos":true}`, ids(99)))
	if status != 200 || !strings.Contains(body, `"completion_tokens":1`) {
		t.Fatalf("99 prompt tokens of a 100-token budget: %d %.300s", status, body)
	}
}
