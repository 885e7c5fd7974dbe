package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/hone-rl/hone/collect"
	"github.com/hone-rl/hone/format/trajectory"
)

// Regression: Model turned the messages and tools into openai-go's
// params by way of JSON and read the answer back out of RawJSON. The
// params hold a tool's schema as a Go map, so the server got the schema's
// keys sorted, and rendered a tools prompt other than the one hone-train
// lays out; and the answer went through a copy of the message shape that
// dropped reasoning_content. Model now sends format/chatmsg's JSON and
// reads the answer with it.
func TestModelSendsAndReadsTheChatShape(t *testing.T) {
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m@3","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"Sunny.","reasoning_content":"The tool said so."},"finish_reason":"stop",`+
			`"token_ids":[1,2],"logprobs":{"content":[{"token":"a","logprob":-0.5},{"token":"b","logprob":-1}]}}]}`)
	}))
	defer srv.Close()
	const schema = `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}},"required":["zeta"]}`
	tools := []trajectory.Tool{{Type: "function", Name: "weather", Parameters: schema}}
	msgs := []trajectory.Message{
		{Role: "user", Content: "Weather?"},
		{Role: "assistant", ContentParts: "null", ReasoningContent: "Ask the tool.", ToolCalls: []trajectory.ToolCall{{ID: "c", Type: "function", Name: "weather", Arguments: `{"zeta":"Oslo"}`}}},
		{Role: "tool", ToolCallID: "c", Name: "weather", Content: "sunny"},
	}
	m := collect.NewModel(collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "m"})
	got, err := m.Complete(context.Background(), msgs, tools, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != "Sunny." || got.ReasoningContent != "The tool said so." || !got.Trainable || len(got.TokenIDs) != 2 || len(got.Logprobs) != 2 || got.AnswerModel != "m@3" {
		t.Errorf("turn %+v, want the answer with its reasoning_content", got)
	}
	body := <-bodies
	var req struct {
		Tools []struct {
			Function struct {
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Messages       []map[string]json.RawMessage `json:"messages"`
		ReturnTokenIDs bool                         `json:"return_token_ids"`
		Logprobs       bool                         `json:"logprobs"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	json.Compact(&compact, req.Tools[0].Function.Parameters)
	if compact.String() != schema {
		t.Errorf("the server got the schema\n%s\nwant it as the tool gave it\n%s", compact.String(), schema)
	}
	// OpenAI's API refuses message keys it does not define: no reasoning,
	// no name on a tool message.
	if _, ok := req.Messages[1]["reasoning_content"]; ok {
		t.Errorf("reasoning_content sent: %s", body)
	}
	if _, ok := req.Messages[2]["name"]; ok {
		t.Errorf("a tool message's name sent: %s", body)
	}
	if !req.ReturnTokenIDs || !req.Logprobs {
		t.Errorf("request without return_token_ids or logprobs: %s", body)
	}
}

// A tool whose parameters are not JSON fails before anything is sent,
// naming the tool (not encoding/json's Go types).
func TestModelRefusesABadToolUnsent(t *testing.T) {
	var asked atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { asked.Store(true) }))
	defer srv.Close()
	m := collect.NewModel(collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "m", Retries: 3})
	_, err := m.Complete(context.Background(), []trajectory.Message{{Role: "user", Content: "hi"}}, []trajectory.Tool{{Name: "broken", Parameters: "{"}}, 1)
	if err == nil || err.Error() != `tool "broken": parameters are not valid JSON` || asked.Load() {
		t.Errorf("error %v, request sent %v", err, asked.Load())
	}
}
