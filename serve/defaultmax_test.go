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
