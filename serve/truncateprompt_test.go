package serve

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestTruncatePromptTokens: vLLM's truncate_prompt_tokens keeps the last k
// tokens of the prompt (a text prompt's, a token-id prompt's, a chat's
// rendered prompt's; -1: the model's context), so a prompt over the
// context can be answered from its end. It was ignored (only a warning
// header): the prompt went whole, and one over the context was a 400. A k
// over the context, or 0, is a 400 naming it, as vLLM refuses the former.
func TestTruncatePromptTokens(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	promptIDs := func(body string) []int32 {
		t.Helper()
		var resp struct {
			Choices []struct {
				PromptTokenIDs []int32 `json:"prompt_token_ids"`
			}
		}
		ts.postHonoured(t, "/v1/completions", body, &resp)
		if len(resp.Choices) == 0 {
			t.Fatalf("%s: no choices", clip(body, 200))
		}
		return resp.Choices[0].PromptTokenIDs
	}
	if got := promptIDs(`{"model":"tiny","prompt":"hello world","max_tokens":1,"return_token_ids":true,"truncate_prompt_tokens":3}`); !slices.Equal(got, []int32{'r', 'l', 'd'}) {
		t.Errorf("text prompt, k=3: prompt %v, want the last 3 tokens (rld)", got)
	}
	if got := promptIDs(`{"model":"tiny","prompt":[1,2,3,4,5],"max_tokens":1,"return_token_ids":true,"truncate_prompt_tokens":2}`); !slices.Equal(got, []int32{4, 5}) {
		t.Errorf("token-id prompt, k=2: prompt %v, want [4 5]", got)
	}
	if got := promptIDs(`{"model":"tiny","prompt":"hi","max_tokens":1,"return_token_ids":true,"truncate_prompt_tokens":10}`); !slices.Equal(got, []int32{'h', 'i'}) {
		t.Errorf("a prompt shorter than k: prompt %v, want it whole", got)
	}
	// A prompt over the context (4096) is answered from its end.
	long := strings.Repeat("ab", 3000) + "xyz"
	got := promptIDs(fmt.Sprintf(`{"model":"tiny","prompt":%q,"max_tokens":1,"return_token_ids":true,"truncate_prompt_tokens":4000}`, long))
	if len(got) != 4000 || !slices.Equal(got[3997:], []int32{'x', 'y', 'z'}) {
		t.Errorf("a prompt of %d tokens, k=4000: prompt of %d tokens ending %v, want 4000 ending xyz", len(long), len(got), got[max(len(got)-3, 0):])
	}
	status, h, out := ts.postHeader(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"return_token_ids":true,"truncate_prompt_tokens":4}`)
	if want := toInt32(ts.s.tok.Encode("t\n", false)); status != http.StatusOK || h.Get(WarningHeader) != "" || !strings.Contains(out, fmt.Sprintf(`"prompt_token_ids":[%d,%d,%d,%d]`, 'a', 'n', want[0], want[1])) {
		t.Errorf("chat, k=4: %d, %s %q: %s; want the rendered prompt's last 4 tokens (ant\\n)", status, WarningHeader, h.Get(WarningHeader), out)
	}
	for _, v := range []string{"4097", "0", "-2"} {
		status, out := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":1,"truncate_prompt_tokens":`+v+`}`)
		if status != http.StatusBadRequest || !strings.Contains(out, `"param":"truncate_prompt_tokens"`) {
			t.Errorf("truncate_prompt_tokens %s: %d %s, want 400 naming truncate_prompt_tokens", v, status, out)
		}
	}
}

// TestTruncatePromptTokensKeepsBOS: a text prompt whose tokenizer adds a
// BOS token keeps it and the last k−1 tokens of the text, as the Hugging
// Face tokenizer vLLM calls truncates (its special tokens counted in k).
func TestTruncatePromptTokensKeepsBOS(t *testing.T) {
	ts := startServer(t, Options{Model: mistralFolder(t)}, nil)
	full := toInt32(ts.s.tok.Encode("hello world again", true))
	if len(full) < 4 || full[0] != 1 {
		t.Fatalf("the Mistral tokenizer encodes %v, want <s> (1) and at least 3 more", full)
	}
	status, out := ts.post(t, "/v1/completions", `{"model":"`+ts.s.name+`","prompt":"hello world again","max_tokens":1,"return_token_ids":true,"truncate_prompt_tokens":3}`)
	want := fmt.Sprintf(`"prompt_token_ids":[1,%d,%d]`, full[len(full)-2], full[len(full)-1])
	if status != http.StatusOK || !strings.Contains(out, want) {
		t.Errorf("k=3 of %v: %d %s; want %s", full, status, out, want)
	}
}
