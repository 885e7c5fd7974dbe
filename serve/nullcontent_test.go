package serve

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// promptIDs posts a chat body with return_token_ids and returns the prompt's
// token ids, or the status and body of a refusal.
func promptIDs(t *testing.T, ts *testServer, body string) ([]int32, int, string) {
	t.Helper()
	status, out := ts.post(t, "/v1/chat/completions", body)
	if status != http.StatusOK {
		return nil, status, out
	}
	var resp struct {
		PromptTokenIDs []int32 `json:"prompt_token_ids"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	return resp.PromptTokenIDs, status, out
}

// TestNullContentRendersAsEmpty: a message whose content is null (the
// assistant turn that only calls tools, as OpenAI answers it and clients
// send it back; a tool result with nothing in it) is rendered as content ""
// (as vLLM gives it to a template, and as format/layout lays the turn out
// for training), with the real templates: Llama 3.1 printed a null tool
// result as nothing where "" prints as '""', so the prompt served was not
// the prompt trained on; Gemma 3's template refused null ("Invalid content
// type"), a 400.
func TestNullContentRendersAsEmpty(t *testing.T) {
	conv := func(content string) string {
		return `{"model":"tiny","max_tokens":1,"return_token_ids":true,"messages":[
			{"role":"user","content":"Weather in Oslo?"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}}]},
			{"role":"tool","tool_call_id":"c1","content":` + content + `}]}`
	}
	t.Run("llama3.1", func(t *testing.T) {
		ts := startServer(t, Options{Model: tinyWithTemplate(t, "llama3.1")}, nil)
		null, status, out := promptIDs(t, ts, conv("null"))
		if status != http.StatusOK {
			t.Fatalf("null tool result: %d %s", status, out)
		}
		empty, status, out := promptIDs(t, ts, conv(`""`))
		if status != http.StatusOK {
			t.Fatalf(`"" tool result: %d %s`, status, out)
		}
		if !slices.Equal(null, empty) {
			t.Errorf("a null tool result renders otherwise than \"\":\n%q\n%q", decodeIDs(ts, null), decodeIDs(ts, empty))
		}
	})
	t.Run("gemma3", func(t *testing.T) {
		ts := startServer(t, Options{Model: tinyWithTemplate(t, "gemma3")}, nil)
		body := func(content string) string {
			return `{"model":"tiny","max_tokens":1,"return_token_ids":true,"messages":[
				{"role":"user","content":"hi"},{"role":"assistant","content":` + content + `},{"role":"user","content":"again"}]}`
		}
		null, status, out := promptIDs(t, ts, body("null"))
		if status != http.StatusOK {
			t.Fatalf("null assistant content: %d %s", status, out)
		}
		empty, _, _ := promptIDs(t, ts, body(`""`))
		if !slices.Equal(null, empty) || !strings.Contains(decodeIDs(ts, null), "<start_of_turn>model\n<end_of_turn>") {
			t.Errorf("null assistant content renders %q; \"\" renders %q", decodeIDs(ts, null), decodeIDs(ts, empty))
		}
	})
}

func decodeIDs(ts *testServer, ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		s, _ := ts.s.tokenString(id)
		b.WriteString(s)
	}
	return b.String()
}
