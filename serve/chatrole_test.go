package serve

import (
	"net/http"
	"strings"
	"testing"
)

// TestChatResponseRole: as vLLM's get_chat_request_role gives it, a chat
// answer's role is the assistant's after the generation prompt, and with
// add_generation_prompt false the last message's, which the answer then
// continues (its echo included). The answer was always the assistant's,
// so a client appending it to the conversation turned the continued user
// message into an assistant turn.
func TestChatResponseRole(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	noGen := `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"add_generation_prompt":false`
	status, out := ts.post(t, "/v1/chat/completions", noGen+`}`)
	if status != http.StatusOK || !strings.Contains(out, `"message":{"role":"user"`) {
		t.Errorf("add_generation_prompt false after a user message: %d %s; want the message's role user", status, out)
	}
	status, out = ts.post(t, "/v1/chat/completions", noGen+`,"stream":true}`)
	if status != http.StatusOK || !strings.Contains(out, `"delta":{"role":"user"`) || strings.Contains(out, `"role":"assistant"`) {
		t.Errorf("streamed, add_generation_prompt false after a user message: %d %s; want the first delta's role user", status, out)
	}
	status, out = ts.post(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	if status != http.StatusOK || !strings.Contains(out, `"message":{"role":"assistant"`) {
		t.Errorf("after the generation prompt: %d %s; want the message's role assistant", status, out)
	}
}
