package serve

import (
	"net/http"
	"strings"
	"testing"
)

// TestGenerationConfigClampMessage: under --generation-config auto a
// max_tokens over generation_config.json's max_new_tokens is clamped to
// it; when that value is itself over --max-tokens, the 400 named the
// clamped value ("max_tokens=8"), one the client never sent. It names the
// client's own value now, and the clamp.
func TestGenerationConfigClampMessage(t *testing.T) {
	ts := startServer(t, Options{Model: tinyWithGenConfig(t, map[string]any{"max_new_tokens": 8}), GenerationConfig: "auto", MaxTokens: 4}, nil)
	status, out := ts.post(t, "/v1/completions", `{"model":"`+ts.s.name+`","prompt":"hi","max_tokens":10}`)
	if status != http.StatusBadRequest || !strings.Contains(out, "max_tokens=10") || strings.Contains(out, "max_tokens=8") || !strings.Contains(out, "max_new_tokens 8") || !strings.Contains(out, `"param":"max_tokens"`) {
		t.Errorf("max_tokens 10, max_new_tokens 8, --max-tokens 4: %d %s; want a 400 naming max_tokens=10 and the clamp to 8", status, out)
	}
	// One within both is served.
	status, out = ts.post(t, "/v1/completions", `{"model":"`+ts.s.name+`","prompt":"hi","max_tokens":3}`)
	if status != http.StatusOK {
		t.Errorf("max_tokens 3: %d %s", status, out)
	}
}
