package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestNonJSONContentTypeRefused: a POST whose Content-Type names another
// media type than application/json (a form, plain text) is refused with a
// 400 saying so, as vLLM refuses it, on both generating endpoints;
// application/json with parameters, in any case, and no Content-Type at
// all still answer, as does openai-go. Before, any type was read as JSON.
func TestNonJSONContentTypeRefused(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	bodies := map[string]string{
		"/v1/chat/completions": `{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`,
		"/v1/completions":      `{"model":"tiny","max_tokens":2,"prompt":"hi"}`,
	}
	for path, body := range bodies {
		for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x", "application/jsonx"} {
			status, out := ts.post(t, path, body, "Content-Type", ct)
			var e struct {
				Error struct{ Type, Message string }
			}
			json.Unmarshal([]byte(out), &e)
			if status != 400 || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "application/json") {
				t.Errorf("%s with %q: %d %s, want 400 naming application/json", path, ct, status, out)
			}
		}
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
			if status, out := ts.post(t, path, body, "Content-Type", ct); status != 200 {
				t.Errorf("%s with %q: %d %s, want 200", path, ct, status, out)
			}
		}
		req, err := http.NewRequest("POST", ts.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req) // no Content-Type
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s without Content-Type: %d %s, want 200", path, resp.StatusCode, out)
		}
	}
	if _, err := ts.client.Chat.Completions.New(context.Background(), chatParams("tiny", 1, 2)); err != nil {
		t.Fatalf("openai-go: %v", err)
	}
}
