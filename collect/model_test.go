package collect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

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

// An error answer's message reaches the call's error (openai-go's own
// text says only the status), cut at a bound; a 5xx is retried unless
// its code is one of hone-serve's for a sequence left with no token to
// choose (NaN logits from a diverged adapter, a constraint that allowed
// nothing), which the same request cannot get past.
func TestModelErrorAnswers(t *testing.T) {
	long := "a" + strings.Repeat("é", 2000) // the cut falls inside an é, which is dropped
	for _, c := range []struct {
		name, body string
		status     int
		calls      int64
		want       string
	}{
		{"NaN logits", `{"error":{"message":"no token could be chosen: model \"r1@2\" gave NaN or -Inf logits","type":"server_error","param":null,"code":"logits_not_finite"}}`,
			500, 1, `HTTP 500 logits_not_finite: no token could be chosen: model "r1@2" gave NaN or -Inf logits`},
		{"constraint", `{"error":{"message":"the output constraint left none","type":"server_error","code":"constraint_no_token"}}`,
			500, 1, `HTTP 500 constraint_no_token: the output constraint left none`},
		{"other 500", `{"error":{"message":"out of memory","type":"server_error","code":null}}`, 500, 4, "HTTP 500: out of memory"},
		{"503 with the code", `{"error":{"message":"x","code":"logits_not_finite"}}`, 503, 1, "HTTP 503 logits_not_finite: x"},
		{"no message", `{}`, 502, 4, "HTTP 502: OpenAI API error: 502 Bad Gateway"},
		{"vLLM's status as the code", `{"error":{"message":"EngineCore encountered an issue","type":"InternalServerError","param":null,"code":500}}`,
			500, 4, "HTTP 500: EngineCore encountered an issue"},
		{"404", `{"error":{"message":"the model \"m\" does not exist","code":"model_not_found"}}`, 404, 1, `HTTP 404 model_not_found: the model "m" does not exist`},
		{"long message", `{"error":{"message":"` + long + `"}}`, 500, 4, "HTTP 500: " + long[:999] + "…"},
		// A message that is not UTF-8 (a proxy writing Latin-1): openai-go
		// keeps its bytes, and the error would be a row's error string that
		// Parquet readers such as DuckDB refuse; each bad byte is U+FFFD.
		{"not UTF-8", "{\"error\":{\"message\":\"caf\xe9 closed\"}}", 400, 1, "HTTP 400: caf\uFFFD closed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			m := collect.NewModel(collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "m", Retries: 3, Backoff: time.Millisecond})
			_, err := m.Complete(context.Background(), []trajectory.Message{{Role: "user", Content: "hi"}}, nil, 1)
			if err == nil || err.Error() != c.want || calls.Load() != c.calls {
				t.Errorf("error %v after %d calls, want %q after %d", err, calls.Load(), c.want, c.calls)
			}
			var ae *openai.Error
			if !errors.As(err, &ae) || ae.StatusCode != c.status {
				t.Errorf("error %v does not wrap openai-go's of status %d", err, c.status)
			}
		})
	}
}

// Some OpenAI-compatible gateways answer a failure with status 200 and the
// error in the body ({"error": {"message", "code"}}, no choices). The
// episode's error quotes the server's message; it said only "response
// without choices", and the summary's advice sent the user to check the
// base URL and model name.
func TestModelErrorInA200(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"error":{"message":"upstream provider overloaded","code":502}}`)
	}))
	defer srv.Close()
	m := collect.NewModel(collect.ModelOptions{BaseURL: srv.URL + "/v1", Model: "m", Backoff: time.Millisecond})
	_, err := m.Complete(context.Background(), []trajectory.Message{{Role: "user", Content: "hi"}}, nil, 1)
	if want := "response without choices: error 502: upstream provider overloaded"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
