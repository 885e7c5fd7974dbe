package serve

import (
	"net/http"
	"strings"
	"testing"
)

// TestChatEcho: vLLM's echo for chat begins each choice's content with the
// last message's content when that message is the assistant's (with
// continue_final_message, the whole turn), streamed in the first chunk. It
// was ignored (only a warning header). A last message of another role
// echoes nothing, unless add_generation_prompt is false.
func TestChatEcho(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	prefill := `{"model":"tiny","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"The answer is"}],"max_tokens":3,"n":2,"continue_final_message":true,"add_generation_prompt":false,"echo":true`
	status, h, out := ts.postHeader(t, "/v1/chat/completions", prefill+`}`)
	if status != http.StatusOK || h.Get(WarningHeader) != "" || strings.Count(out, `"content":"The answer is`) != 2 {
		t.Errorf("echo: %d, %s %q: %s; want both choices beginning with the assistant's prefill", status, WarningHeader, h.Get(WarningHeader), out)
	}
	status, out = ts.post(t, "/v1/chat/completions", strings.Replace(prefill, `"n":2`, `"n":1`, 1)+`,"stream":true}`)
	first := strings.Index(out, `"content":`)
	if status != http.StatusOK || first < 0 || !strings.HasPrefix(out[first:], `"content":"The answer is"`) {
		t.Errorf("streamed echo: %d %s; want the first chunk's content to be the prefill", status, out)
	}
	status, out = ts.post(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"echo":true}`)
	if status != http.StatusOK || strings.Contains(out, `"content":"hi`) {
		t.Errorf("echo after a user message: %d %s; want nothing echoed", status, out)
	}
	// vLLM echoes the last message when its role is the response's, which
	// with add_generation_prompt false is the last message's own: a final
	// user message is echoed too. It was not (only the assistant's were).
	status, out = ts.post(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"echo":true,"add_generation_prompt":false}`)
	if status != http.StatusOK || !strings.Contains(out, `"content":"hi`) {
		t.Errorf("echo after a user message, add_generation_prompt false: %d %s; want its content echoed, as vLLM does", status, out)
	}
}
