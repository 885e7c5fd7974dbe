package serve

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hone-rl/hone/internal/waitfor"
)

const weatherTool = `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`

// TestToolsWithoutToolTemplate: the tiny model's template has no tool-call
// markup. A request with tools is answered in plain text with an
// X-Hone-Warning header (streamed or not), logged once per model; forcing a call is a 400
// with code tools_unsupported. A template with tool support gets no
// warning.
func TestToolsWithoutToolTemplate(t *testing.T) {
	var logBuf waitfor.Buffer // written by the server's goroutines
	ts := startServer(t, Options{Model: tinyDir(t), Log: slog.New(slog.NewTextHandler(&logBuf, nil))}, nil)
	body := func(choice string) string {
		b := `{"model":"tiny","max_tokens":4,"seed":1,"messages":[{"role":"user","content":"weather?"}],"tools":` + weatherTool
		if choice != "" {
			b += `,"tool_choice":` + choice
		}
		return b + "}"
	}
	for _, choice := range []string{"", `"auto"`} {
		for range 2 {
			status, h, out := ts.postHeader(t, "/v1/chat/completions", body(choice))
			if status != http.StatusOK {
				t.Fatalf("tool_choice %s: status %d: %s", choice, status, out)
			}
			if w := h.Get(WarningHeader); !strings.Contains(w, "tools ignored") || !strings.Contains(w, "no tool-call format") {
				t.Errorf("tool_choice %s: %s = %q, want a warning that tools are ignored", choice, WarningHeader, w)
			}
		}
	}
	// Streamed, the header comes with the event stream.
	status, h, out := ts.postHeader(t, "/v1/chat/completions", strings.Replace(body(""), `{"model"`, `{"stream":true,"model"`, 1))
	if status != http.StatusOK || !strings.Contains(h.Get(WarningHeader), "tools ignored") || !strings.Contains(out, "data: [DONE]") {
		t.Errorf("streamed: status %d, %s = %q: %s", status, WarningHeader, h.Get(WarningHeader), out)
	}
	if n := strings.Count(logBuf.String(), "no tool-call format"); n != 1 {
		t.Errorf("warning logged %d times for 4 requests to one model, want once:\n%s", n, logBuf.String())
	}
	if !strings.Contains(logBuf.String(), "model=tiny") {
		t.Errorf("the warning does not name the model:\n%s", logBuf.String())
	}
	for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"get_weather"}}`} {
		status, out := ts.post(t, "/v1/chat/completions", body(choice))
		var e errorBody
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("tool_choice %s: %v: %s", choice, err, out)
		}
		if status != http.StatusBadRequest || e.Error.Code != "tools_unsupported" || e.Error.Param == nil || *e.Error.Param != "tool_choice" {
			t.Errorf("tool_choice %s: status %d, error %+v; want 400 tools_unsupported on tool_choice", choice, status, e.Error)
		}
	}
	// Without tools, no warning.
	status, h, out = ts.postHeader(t, "/v1/chat/completions", `{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`)
	if status != http.StatusOK || h.Get(WarningHeader) != "" {
		t.Errorf("plain request: status %d, warning %q: %s", status, h.Get(WarningHeader), out)
	}

	// Qwen's template calls tools: no warning.
	qs := startServer(t, Options{Model: qwenTiny(t)}, nil)
	status, h, out = qs.postHeader(t, "/v1/chat/completions", body(`"auto"`))
	if status != http.StatusOK || h.Get(WarningHeader) != "" {
		t.Errorf("tool template: status %d, warning %q: %s", status, h.Get(WarningHeader), out)
	}
}
