package serve

import (
	"net/http"
	"strings"
	"testing"
)

// TestAddSpecialTokens: vLLM's add_special_tokens says whether the
// tokenizer adds its special tokens (a BOS) to the prompt: false by
// default for chat, whose template writes them, and true for completions.
// It was ignored (only a warning header): chat with true got no BOS of the
// tokenizer's, completions with false still got one.
func TestAddSpecialTokens(t *testing.T) {
	ts := startServer(t, Options{Model: mistralFolder(t)}, nil)
	first := func(path, body string) []int32 {
		t.Helper()
		var resp struct {
			PromptTokenIDs []int32 `json:"prompt_token_ids"`
			Choices        []struct {
				PromptTokenIDs []int32 `json:"prompt_token_ids"`
			}
		}
		ts.postHonoured(t, path, body, &resp)
		if resp.PromptTokenIDs == nil && len(resp.Choices) > 0 {
			resp.PromptTokenIDs = resp.Choices[0].PromptTokenIDs
		}
		return resp.PromptTokenIDs[:2]
	}
	model := `"model":"` + ts.s.name + `"`
	chat := func(extra string) string {
		return `{` + model + `,"messages":[{"role":"user","content":"hello"}],"max_tokens":1,"return_token_ids":true` + extra + `}`
	}
	// The template writes <s> (1) itself: the tokenizer's is a second.
	if got := first("/v1/chat/completions", chat("")); got[0] != 1 || got[1] == 1 {
		t.Errorf("chat: prompt begins %v, want one <s>", got)
	}
	if got := first("/v1/chat/completions", chat(`,"add_special_tokens":true`)); got[0] != 1 || got[1] != 1 {
		t.Errorf("chat, add_special_tokens true: prompt begins %v, want <s> <s>", got)
	}
	cmpl := func(extra string) string {
		return `{` + model + `,"prompt":"hello world","max_tokens":1,"return_token_ids":true` + extra + `}`
	}
	if got := first("/v1/completions", cmpl(`,"add_special_tokens":true`)); got[0] != 1 {
		t.Errorf("completions: prompt begins %v, want <s>", got)
	}
	if got := first("/v1/completions", cmpl(`,"add_special_tokens":false`)); got[0] == 1 {
		t.Errorf("completions, add_special_tokens false: prompt begins %v, want no <s>", got)
	}
}

// TestBeamSearchRefused: use_beam_search true is a 400 naming it, since
// this server samples and returning sampled choices as beams would answer
// another request; false passes, and so does length_penalty, which only
// beam search reads in vLLM.
func TestBeamSearchRefused(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		body := func(extra string) string {
			if path == "/v1/completions" {
				return `{"model":"tiny","prompt":"hi","max_tokens":2` + extra + `}`
			}
			return `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2` + extra + `}`
		}
		status, out := ts.post(t, path, body(`,"use_beam_search":true`))
		if status != http.StatusBadRequest || !strings.Contains(out, `"param":"use_beam_search"`) {
			t.Errorf("%s use_beam_search true: %d %s, want 400 naming use_beam_search", path, status, out)
		}
		status, h, out := ts.postHeader(t, path, body(`,"use_beam_search":false,"length_penalty":1.5`))
		if status != http.StatusOK || h.Get(WarningHeader) != "" {
			t.Errorf("%s use_beam_search false: %d, %s %q: %s; want 200 and no warning", path, status, WarningHeader, h.Get(WarningHeader), out)
		}
	}
}
