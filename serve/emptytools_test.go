package serve

import (
	"encoding/json"
	"testing"
)

// TestEmptyToolsRefused: a chat request with "tools": [] is refused with
// a 400 naming the tools parameter, whatever its tool_choice, as vLLM
// (since its fix for empty tool arrays) and OpenAI refuse it; tools left
// out or null still answer. Before, an empty array was taken as no tools.
func TestEmptyToolsRefused(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	const msgs = `"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"hi"}]`
	for _, extra := range []string{`,"tools":[]`, `,"tools":[],"tool_choice":"none"`, `,"tools":[],"tool_choice":"auto"`} {
		status, body := ts.post(t, "/v1/chat/completions", `{`+msgs+extra+`}`)
		var e struct {
			Error struct{ Type, Param, Message string }
		}
		json.Unmarshal([]byte(body), &e)
		if status != 400 || e.Error.Type != "invalid_request_error" || e.Error.Param != "tools" {
			t.Errorf("%s: %d %s, want 400 invalid_request_error on param tools", extra, status, body)
		}
	}
	for _, extra := range []string{``, `,"tools":null`} {
		if status, body := ts.post(t, "/v1/chat/completions", `{`+msgs+extra+`}`); status != 200 {
			t.Errorf("%q: %d %s, want 200", extra, status, body)
		}
	}
}
