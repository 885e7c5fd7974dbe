package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPriorityRefused: vLLM's priority other than 0 is a 400 naming it, in
// vLLM's words, since this server schedules first come first served (vLLM
// refuses it unless started with --scheduling-policy priority); it was
// answered as if unsent, with only X-Hone-Warning naming it. 0, the
// default, is honoured without a warning, on both endpoints.
func TestPriorityRefused(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	for _, c := range []struct{ path, body string }{
		{"/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":2,"priority":1}`},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"priority":-3,"stream":true}`},
	} {
		status, body := ts.post(t, c.path, c.body)
		var eb struct {
			Error struct {
				Message string  `json:"message"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		json.Unmarshal([]byte(body), &eb)
		if status != http.StatusBadRequest || eb.Error.Param == nil || *eb.Error.Param != "priority" || !strings.Contains(eb.Error.Message, "Priority scheduling is not enabled") {
			t.Errorf("%s: %d %s, want 400 naming priority", c.body, status, body)
		}
	}
	var resp struct{ Choices []sampledChoice }
	ts.postHonoured(t, "/v1/completions", `{"model":"tiny","prompt":"hi","max_tokens":2,"priority":0}`, &resp)
	var chat struct{ Choices []any }
	ts.postHonoured(t, "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"priority":0}`, &chat)
}
