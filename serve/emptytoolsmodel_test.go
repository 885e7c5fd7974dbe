package serve

import (
	"encoding/json"
	"testing"
)

// TestEmptyToolsUnknownModel: a chat request naming a model the server
// does not serve gets the 404 for the model even with "tools": [], which
// alone is a 400: vLLM's OpenAI server resolves the model first, so a
// client told "does not exist" fixes the name before anything else.
func TestEmptyToolsUnknownModel(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	const body = `{"model":"no-such-model","max_tokens":2,"messages":[{"role":"user","content":"hi"}],"tools":[]}`
	status, got := ts.post(t, "/v1/chat/completions", body)
	var e struct {
		Error struct{ Type, Param, Code, Message string }
	}
	if err := json.Unmarshal([]byte(got), &e); err != nil {
		t.Fatalf("%d %s: %v", status, got, err)
	}
	if status != 404 || e.Error.Code != "model_not_found" || e.Error.Param != "model" {
		t.Errorf("unknown model with tools []: %d %s, want 404 model_not_found on param model", status, got)
	}
}
