package serve

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCompletionsResponseFormat: /v1/completions honours response_format
// as vLLM's does: json_schema makes every choice's text a document of the
// schema, json_object a JSON object, and min_tokens with it is a 400 as
// on chat. The field was ignored (a warning header only), so a client
// asking for JSON got free text.
func TestCompletionsResponseFormat(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	texts := func(rf string) []string {
		t.Helper()
		status, out := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"answer:","max_tokens":60,"n":4,"seed":2,"response_format":`+rf+`}`)
		if status != 200 {
			t.Fatalf("response_format %s: %d %s", rf, status, out)
		}
		var resp struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatal(err)
		}
		var ts []string
		for _, c := range resp.Choices {
			ts = append(ts, c.Text)
		}
		return ts
	}
	for i, text := range texts(`{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}}}`) {
		var v struct {
			OK *bool `json:"ok"`
		}
		if err := json.Unmarshal([]byte(text), &v); err != nil || v.OK == nil {
			t.Errorf("json_schema choice %d: %q is not {\"ok\": <bool>} (%v)", i, text, err)
		}
	}
	for i, text := range texts(`{"type":"json_object"}`) {
		var v map[string]any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Errorf("json_object choice %d: %q is not a JSON object (%v)", i, text, err)
		}
	}
	status, out := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":8,"min_tokens":2,"response_format":{"type":"json_object"}}`)
	if status != 400 || !strings.Contains(out, `"param":"min_tokens"`) {
		t.Errorf("min_tokens with response_format: %d %s; want a 400 on min_tokens", status, out)
	}
	status, out = ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":8,"response_format":{"type":"xml"}}`)
	if status != 400 || !strings.Contains(out, `"param":"response_format"`) {
		t.Errorf("response_format xml: %d %s; want a 400 on response_format", status, out)
	}
}
