package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hone-rl/hone/collect/proxy"
)

// Regression: the proxy read messages with a copy of the chat message
// shape that dropped reasoning_content (the reasoning vLLM's reasoning
// parsers return apart from the content), streamed or not; joined the text
// of every content part whatever its type, where the trajectory format
// takes only "text" parts; and turned null content into "". It now reads
// them with format/chatmsg, as every stage does.
func TestProxyRecordsWhatTheMessagesHold(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"model":"agent@7","choices":[{"index":0,"message":{"role":"assistant","content":"4","reasoning_content":"2+2 is 4."},"finish_reason":"stop","token_ids":[52],"logprobs":{"content":[{"token":"4","logprob":-0.5}]}}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{`{"role":"assistant","content":""}`, `{"reasoning_content":"2+2 "}`, `{"reasoning_content":"is 4."}`, `{"content":"4"}`} {
			event(w, `{"model":"agent@7","choices":[{"index":0,"delta":`+d+`,"finish_reason":null,"token_ids":[52],"logprobs":{"content":[{"token":"x","logprob":-0.5}]}}]}`)
		}
		event(w, `{"model":"agent@7","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		event(w, "[DONE]")
	}))
	defer up.Close()
	out := t.TempDir()
	p, err := proxy.New(proxy.Options{Upstream: up.URL + "/v1", OutDir: out, Run: "px"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()

	const msgs = `[{"role":"user","content":[{"type":"text","text":"2+2"},{"type":"input_text","text":" (not a chat part)"},{"type":"text","text":"?"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"calc","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c","content":"4"}]`
	for _, tid := range []string{"plain", "streamed"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"agent","stream":`+map[string]string{"plain": "false", "streamed": "true"}[tid]+`,"messages":`+msgs+`}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hone-Trajectory", tid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", tid, resp.Status)
		}
	}
	for tid, tr := range readGroups(t, srv.URL, out, "plain", "streamed") {
		if len(tr.Messages) != 4 {
			t.Fatalf("%s: %d messages", tid, len(tr.Messages))
		}
		if u := tr.Messages[0]; u.Content != "2+2?" || !strings.Contains(u.ContentParts, `"input_text"`) {
			t.Errorf("%s: user turn %q / %q, want the text parts' text and the parts kept", tid, u.Content, u.ContentParts)
		}
		if a := tr.Messages[1]; a.ContentParts != "null" || len(a.ToolCalls) != 1 {
			t.Errorf("%s: tool-call turn %+v, want its null content kept", tid, a)
		}
		if a := tr.Messages[3]; a.Content != "4" || a.ReasoningContent != "2+2 is 4." || !a.Trainable {
			t.Errorf("%s: answer %+v, want reasoning_content recorded", tid, a)
		}
	}
}
