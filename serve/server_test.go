package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/spf13/pflag"

	"github.com/hone-rl/hone/internal/waitfor"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

func chatParams(model string, seed int64, maxTokens int64) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:     model,
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello there")},
		MaxTokens: openai.Int(maxTokens),
		Seed:      openai.Int(seed),
	}
}

func TestChatPlainAndSeeded(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	ctx := context.Background()
	p := chatParams("tiny", 7, 12)
	a, err := ts.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ts.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if a.Model != "tiny" || len(a.Choices) != 1 || a.Object != "chat.completion" {
		t.Fatalf("response %+v", a)
	}
	ca, cb := a.Choices[0], b.Choices[0]
	if ca.Message.Content != cb.Message.Content || ca.FinishReason != cb.FinishReason {
		t.Fatalf("same seed, different output: %q (%s) vs %q (%s)", ca.Message.Content, ca.FinishReason, cb.Message.Content, cb.FinishReason)
	}
	if ca.FinishReason != "length" && ca.FinishReason != "stop" {
		t.Fatalf("finish_reason %q", ca.FinishReason)
	}
	if a.Usage.PromptTokens == 0 || a.Usage.CompletionTokens == 0 || a.Usage.CompletionTokens > 12 ||
		a.Usage.TotalTokens != a.Usage.PromptTokens+a.Usage.CompletionTokens {
		t.Fatalf("usage %+v", a.Usage)
	}
	p.Seed = openai.Int(8)
	p.MaxTokens = openai.Int(30)
	c, err := ts.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Choices[0].Message.Content == ca.Message.Content {
		t.Fatalf("seeds 7 and 8 gave the same %d-token output %q", c.Usage.CompletionTokens, ca.Message.Content)
	}
}

func TestChatStreamMatchesPlain(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	ctx := context.Background()
	p := chatParams("tiny", 3, 16)
	plain, err := ts.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := ts.client.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	chunks, usageChunks := 0, 0
	for st.Next() {
		ch := st.Current()
		acc.AddChunk(ch)
		chunks++
		if ch.Usage.TotalTokens > 0 {
			usageChunks++
			if len(ch.Choices) != 0 {
				t.Fatalf("usage chunk has choices: %+v", ch.Choices)
			}
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if got, want := acc.Choices[0].Message.Content, plain.Choices[0].Message.Content; got != want {
		t.Fatalf("streamed %q, plain %q", got, want)
	}
	if acc.Choices[0].FinishReason != plain.Choices[0].FinishReason {
		t.Fatalf("finish %q vs %q", acc.Choices[0].FinishReason, plain.Choices[0].FinishReason)
	}
	if usageChunks != 1 || acc.Usage.CompletionTokens != plain.Usage.CompletionTokens {
		t.Fatalf("%d usage chunks, usage %+v, want %+v", usageChunks, acc.Usage, plain.Usage)
	}
	if chunks < 3 {
		t.Fatalf("only %d chunks", chunks)
	}
}

func intsField(t *testing.T, raw string) []int32 {
	t.Helper()
	var ids []int32
	if err := json.Unmarshal([]byte(raw), &ids); err != nil {
		t.Fatalf("token ids %q: %v", raw, err)
	}
	return ids
}

// TestTokenIDsRescore: n=3 choices with logprobs and return_token_ids; the
// prompt and sampled ids, sent back through /v1/completions with echo, get
// the logprobs the chat response reported.
func TestTokenIDsRescore(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	ctx := context.Background()
	p := chatParams("tiny", 11, 10)
	p.N = openai.Int(3)
	p.Logprobs = openai.Bool(true)
	p.TopLogprobs = openai.Int(3)
	resp, err := ts.client.Chat.Completions.New(ctx, p, option.WithJSONSet("return_token_ids", true))
	if err != nil {
		t.Fatal(err)
	}
	prompt := intsField(t, resp.JSON.ExtraFields["prompt_token_ids"].Raw())
	if len(resp.Choices) != 3 || len(prompt) != int(resp.Usage.PromptTokens) {
		t.Fatalf("%d choices, %d prompt ids, usage %+v", len(resp.Choices), len(prompt), resp.Usage)
	}
	distinct := map[string]bool{}
	for i, ch := range resp.Choices {
		ids := intsField(t, ch.JSON.ExtraFields["token_ids"].Raw())
		lps := ch.Logprobs.Content
		if len(ids) != len(lps) || len(ids) == 0 {
			t.Fatalf("choice %d: %d ids, %d logprobs", i, len(ids), len(lps))
		}
		distinct[ch.Message.Content] = true
		for j, lp := range lps {
			if len(lp.TopLogprobs) != 3 || lp.TopLogprobs[0].Logprob < lp.Logprob-1e-6 {
				t.Fatalf("choice %d token %d: top_logprobs %+v vs logprob %v", i, j, lp.TopLogprobs, lp.Logprob)
			}
		}
		got := ts.rescore(t, prompt, ids)
		for j, lp := range lps {
			want, have := float64(lp.Logprob), got[j]
			if math.Abs(want-have) > 1e-4*max(1, math.Abs(want)) {
				t.Fatalf("choice %d token %d (id %d): chat logprob %v, re-scored %v", i, j, ids[j], want, have)
			}
		}
	}
	if len(distinct) < 2 {
		t.Fatalf("3 sampled choices all gave %q", resp.Choices[0].Message.Content)
	}
}

// rescore returns the server's logprobs of ids following prompt: the pair
// echoed through /v1/completions with max_tokens 0, as a trainer re-scores
// a rollout.
func (ts *testServer) rescore(t *testing.T, prompt, ids []int32) []float64 {
	t.Helper()
	all := make([]int64, 0, len(prompt)+len(ids))
	for _, id := range append(slices.Clone(prompt), ids...) {
		all = append(all, int64(id))
	}
	sc, err := ts.client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:     "tiny",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: all},
		Echo:      openai.Bool(true),
		Logprobs:  openai.Int(0),
		MaxTokens: openai.Int(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := sc.Choices[0].Logprobs.TokenLogprobs
	if len(got) != len(all) {
		t.Fatalf("echo returned %d logprobs for %d tokens", len(got), len(all))
	}
	return got[len(prompt):]
}

func TestCompletionsTextAndStream(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	ctx := context.Background()
	p := openai.CompletionNewParams{
		Model:     "tiny",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("once upon")},
		MaxTokens: openai.Int(8),
		Seed:      openai.Int(5),
		Echo:      openai.Bool(true),
	}
	plain, err := ts.client.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plain.Choices[0].Text, "once upon") || plain.Usage.CompletionTokens != 8 {
		t.Fatalf("echo text %q, usage %+v", plain.Choices[0].Text, plain.Usage)
	}
	p.Echo = openai.Bool(false)
	st := ts.client.Completions.NewStreaming(ctx, p)
	var text strings.Builder
	for st.Next() {
		for _, c := range st.Current().Choices {
			text.WriteString(c.Text)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if "once upon"+text.String() != plain.Choices[0].Text {
		t.Fatalf("streamed %q, plain %q", text.String(), plain.Choices[0].Text)
	}
}

func TestErrors(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxBodyBytes: 1 << 16, MaxTokens: 64}, nil)
	for _, c := range []struct {
		name, path, body string
		status           int
		param            string
	}{
		{"malformed", "/v1/chat/completions", `{"model":"tiny","messages":[`, 400, ""},
		{"wrong type", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":"ten"}`, 400, "max_tokens"},
		{"wrong type n", "/v1/completions", `{"model":"tiny","prompt":"x","n":[1]}`, 400, "n"},
		{"huge body", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"` + strings.Repeat("a", 1<<17) + `"}]}`, 413, ""},
		{"unknown model", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "model"},
		{"path traversal model", "/v1/completions", `{"model":"../etc@1","prompt":"x"}`, 404, "model"},
		{"negative max_tokens", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"max_tokens":-1}`, 400, "max_tokens"},
		{"max_tokens over cap", "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":65}`, 400, "max_tokens"},
		{"empty messages", "/v1/chat/completions", `{"model":"tiny","messages":[]}`, 400, "messages"},
		{"bad n", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"n":0}`, 400, "n"},
		{"bad top_p", "/v1/completions", `{"model":"tiny","prompt":"x","top_p":1.5}`, 400, "top_p"},
		{"token out of vocab", "/v1/completions", `{"model":"tiny","prompt":[1,99999]}`, 400, "prompt"},
		{"json_schema anyOf", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"anyOf":[{"type":"string"}]}}}}`, 400, "response_format"},
		{"response_format type", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}],"response_format":{"type":"yaml"}}`, 400, "response_format"},
		{"no route", "/v1/embeddings", `{}`, 404, ""},
		{"wrong method", "/v1/models", `{}`, 405, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := ts.post(t, c.path, c.body)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			var eb struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error.Message == "" || eb.Error.Type == "" {
				t.Fatalf("error body %q (%v)", body, err)
			}
			if c.param != "" && (eb.Error.Param == nil || *eb.Error.Param != c.param) {
				t.Fatalf("param %v, want %q: %s", eb.Error.Param, c.param, body)
			}
		})
	}
	// GET on a path served by POST is a 405 naming the method to use.
	if status, body := ts.get(t, "/v1/chat/completions"); status != http.StatusMethodNotAllowed || !strings.Contains(body, "use POST") {
		t.Errorf("GET /v1/chat/completions: %d %s; want 405 saying to use POST", status, body)
	}
	// The official client sees the same as a typed error, and the server
	// still serves.
	_, err := ts.client.Chat.Completions.New(context.Background(), chatParams("nope", 1, 4))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("unknown model through the client: %v", err)
	}
	if _, err := ts.client.Chat.Completions.New(context.Background(), chatParams("tiny", 1, 4)); err != nil {
		t.Fatalf("server stopped serving after bad requests: %v", err)
	}
}

func TestAPIKey(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), APIKey: "s3cret"}, nil)
	body := `{"model":"tiny","prompt":"x","max_tokens":2}`
	if status, b := ts.post(t, "/v1/completions", body); status != 401 || !strings.Contains(b, "authentication_error") {
		t.Fatalf("no key: %d %s", status, b)
	}
	if status, b := ts.post(t, "/v1/completions", body, "Authorization", "Bearer wrong"); status != 401 {
		t.Fatalf("wrong key: %d %s", status, b)
	}
	if status, b := ts.post(t, "/v1/completions", body, "Authorization", "Bearer s3cret"); status != 200 {
		t.Fatalf("right key: %d %s", status, b)
	}
	if _, err := ts.client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}, MaxTokens: openai.Int(2)}); err != nil {
		t.Fatal(err)
	}
	if status, _ := ts.get(t, "/health"); status != 200 {
		t.Fatalf("/health needs no key, got %d", status)
	}
}

func TestModelsHealthMetrics(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), ServedModelName: "base"}, nil)
	page, err := ts.client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "base" {
		t.Fatalf("models %+v", page.Data)
	}
	if _, err := ts.client.Chat.Completions.New(context.Background(), chatParams("base", 1, 3)); err != nil {
		t.Fatal(err)
	}
	status, m := ts.get(t, "/metrics")
	for _, want := range []string{
		`hone_serve_requests_total{endpoint="chat",status="200"} 1`,
		"# TYPE hone_serve_time_to_first_token_seconds histogram",
		"hone_serve_time_to_first_token_seconds_count 1",
		"hone_serve_generation_tokens_total 3",
	} {
		if status != 200 || !strings.Contains(m, want) {
			t.Fatalf("/metrics (%d) lacks %q:\n%s", status, want, m)
		}
	}
	if status, b := ts.get(t, "/health"); status != 200 || !strings.Contains(b, "ok") {
		t.Fatalf("/health %d %s", status, b)
	}
}

func TestQueueFull429(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxBatch: 1, MaxQueue: 1, MaxTokens: 4000}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	long := openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}, MaxTokens: openai.Int(4000)}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts.client.Completions.New(ctx, long, option.WithJSONSet("ignore_eos", true))
		}()
		// Wait until the first runs and the second waits.
		waitfor.Until(t, 10*time.Second, "the first request running, then the second queued", func() bool {
			st := ts.s.eng.Stats()
			return (i == 0 && st.Running == 1) || (i == 1 && st.Queued == 1)
		})
	}
	status, header, body := ts.postHeader(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":2}`)
	if status != http.StatusTooManyRequests || !strings.Contains(body, "rate_limit_error") {
		t.Fatalf("third request: %d %s", status, body)
	}
	if ra := header.Get("Retry-After"); ra != "1" {
		t.Fatalf("429 with Retry-After %q, want 1 (second)", ra)
	}
	cancel()
	wg.Wait()
	waitfor.Until(t, 10*time.Second, "the cancelled requests to leave the engine", func() bool {
		st := ts.s.eng.Stats()
		return st.Queued+st.Running == 0
	})
	if status, body := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":2}`); status != 200 {
		t.Fatalf("after the queue emptied: %d %s", status, body)
	}
	if st := ts.s.eng.Stats(); st.Cancelled != 2 {
		t.Fatalf("stats %+v, want 2 cancelled", st)
	}
}

// TestClientDisconnectCancels: a client that goes away frees its sequence.
func TestClientDisconnectCancels(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxTokens: 4000}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	p := chatParams("tiny", 1, 4000)
	st := ts.client.Chat.Completions.NewStreaming(ctx, p, option.WithJSONSet("ignore_eos", true), option.WithJSONSet("return_token_ids", true))
	for range 3 { // the role chunk, then token chunks: the sequence runs
		if !st.Next() {
			t.Fatal(st.Err())
		}
	}
	cancel()
	st.Close()
	waitfor.Until(t, 10*time.Second, "the sequence to stop after the client left", func() bool {
		st := ts.s.eng.Stats()
		return st.Running == 0 && st.Cancelled == 1
	})
	if st := ts.s.eng.Stats(); st.GenTokens >= 4000 || st.KVUsedBytes != 0 {
		t.Fatalf("after disconnect: %+v", st)
	}
}

// TestGracefulShutdown: a request in flight when the server is told to stop
// finishes; requests arriving meanwhile get 503.
func TestGracefulShutdown(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t), MaxTokens: 4000}, nil)
	ctx := context.Background()
	p := chatParams("tiny", 1, 300)
	st := ts.client.Chat.Completions.NewStreaming(ctx, p, option.WithJSONSet("ignore_eos", true))
	if !st.Next() {
		t.Fatal(st.Err())
	}
	ts.stop()
	waitfor.Until(t, 10*time.Second, "the server to start draining", ts.s.draining.Load)
	status, header, body := ts.postHeader(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":2}`)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
		t.Fatalf("during drain: %d %s", status, body)
	}
	if ra := header.Get("Retry-After"); ra != "5" {
		t.Fatalf("503 while draining with Retry-After %q, want 5 (seconds)", ra)
	}
	resp, err := http.Get(ts.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("health while draining: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var acc openai.ChatCompletionAccumulator
	acc.AddChunk(st.Current())
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].FinishReason != "length" {
		t.Fatalf("in-flight request finished with %q", acc.Choices[0].FinishReason)
	}
	if err := <-ts.done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	ts.stop = nil
}

func TestToolCallsForcedOutput(t *testing.T) {
	dir := tinyDir(t)
	out := `<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris"}}
</tool_call>`
	ts := startServer(t, Options{Model: dir}, func(s *Server) {
		ids := toInt32(s.tok.Encode(out, false))
		s.forceOutput = func([]int32, int) []int32 { return ids }
	})
	p := chatParams("tiny", 1, 200)
	p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:       "get_weather",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	})}
	resp, err := ts.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("choice %+v", ch)
	}
	tc := ch.Message.ToolCalls[0]
	if tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city": "Paris"}` || tc.ID == "" || tc.Type != "function" {
		t.Fatalf("tool call %+v", tc)
	}
	// Streamed, the call arrives whole in the last chunk.
	st := ts.client.Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].FinishReason != "tool_calls" || len(acc.Choices[0].Message.ToolCalls) != 1 ||
		acc.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" {
		t.Fatalf("streamed choice %+v", acc.Choices[0])
	}
	// tool_choice none: the text is content.
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
	resp, err = ts.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].FinishReason != "stop" || resp.Choices[0].Message.Content != out {
		t.Fatalf("tool_choice none: %+v", resp.Choices[0])
	}
}

func TestParseToolCallsOfferedNames(t *testing.T) {
	names := map[string]bool{"search": true}
	if _, calls := parseToolCalls(`{"name": "Bob", "arguments": {}}`, names); calls != nil {
		t.Fatalf("a JSON answer with a name field became a call: %+v", calls)
	}
	if c, calls := parseToolCalls(`<tool_call>{"name":"rm","arguments":{}}</tool_call>`, names); calls != nil || c == "" {
		t.Fatalf("a call to a function not offered: %q %+v", c, calls)
	}
	if _, calls := parseToolCalls(`<tool_call>{"name":"search","arguments":{"q":"x"}}</tool_call>`, names); len(calls) != 1 {
		t.Fatalf("offered call not parsed")
	}
}

func TestParseToolCalls(t *testing.T) {
	for _, c := range []struct {
		name, text, content string
		calls               []parsedCall
	}{
		{"hermes two", "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>{\"name\":\"b\",\"arguments\":{}}</tool_call>",
			"Let me check.", []parsedCall{{"a", `{"x": 1}`}, {"b", `{}`}}},
		{"hermes unterminated", "<tool_call>{\"name\":\"a\",\"arguments\":{\"q\":\"z\"}}", "", []parsedCall{{"a", `{"q":"z"}`}}},
		{"hermes bad json stays content", "<tool_call>{oops}</tool_call>", "<tool_call>{oops}</tool_call>", nil},
		{"hermes string arguments", `<tool_call>{"name":"a","arguments":"{\"k\":2}"}</tool_call>`, "", []parsedCall{{"a", `{"k":2}`}}},
		// A string that holds no JSON stays a JSON string: arguments
		// must parse as JSON (they were the bare text, which no client's
		// json.loads reads).
		{"hermes string arguments not json", `<tool_call>{"name":"a","arguments":"look up {k"}</tool_call>`, "", []parsedCall{{"a", `"look up {k"`}}},
		{"llama empty string parameters", `{"name": "a", "parameters": ""}`, "", []parsedCall{{"a", `""`}}},
		{"llama json", `{"name": "get_time", "parameters": {"tz": "UTC"}}`, "", []parsedCall{{"get_time", `{"tz": "UTC"}`}}},
		{"llama python tag two", `<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"n": 1}}`, "", []parsedCall{{"a", "{}"}, {"b", `{"n": 1}`}}},
		{"llama trailing semicolon", `{"name": "a", "parameters": {}}; {"name": "b", "parameters": {}};`, "", []parsedCall{{"a", "{}"}, {"b", "{}"}}},
		{"llama json without name", `{"answer": 42}`, `{"answer": 42}`, nil},
		{"llama trailing text", `{"name": "a", "parameters": {}} and more`, `{"name": "a", "parameters": {}} and more`, nil},
		{"plain text", "just words", "just words", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			content, calls := parseToolCalls(c.text, nil)
			if content != c.content || !slices.Equal(calls, c.calls) {
				t.Fatalf("got %q %+v, want %q %+v", content, calls, c.content, c.calls)
			}
		})
	}
}

// TestPrefixSharedForN: an n=4 request prefills its prompt once.
func TestPrefixSharedForN(t *testing.T) {
	ts := startServer(t, Options{Model: tinyDir(t)}, nil)
	p := chatParams("tiny", 2, 5)
	p.N = openai.Int(4)
	resp, err := ts.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	st := ts.s.eng.Stats()
	if len(resp.Choices) != 4 || st.PromptTokens != resp.Usage.PromptTokens || resp.Usage.CompletionTokens != 20 {
		t.Fatalf("%d choices, usage %+v, prompt tokens prefilled %d (want %d: once)", len(resp.Choices), resp.Usage, st.PromptTokens, resp.Usage.PromptTokens)
	}
}

// TestDeadlineAndBudget: a request past --request-timeout gets 504; one
// that can never fit --kv-cache-bytes gets 400; the server keeps serving.
// The first request cannot finish in time, however fast the machine: the
// backend holds its first forward until the 504 is in.
func TestDeadlineAndBudget(t *testing.T) {
	be := &gatedBackend{Backend: ref.New(), release: make(chan struct{})}
	ts := startServer(t, Options{Model: tinyDir(t), Backend: be, RequestTimeout: 100 * time.Millisecond, KVCacheBytes: 1 << 19, MaxTokens: 4000}, nil)
	be.armed.Store(true)
	status, body := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":1000,"ignore_eos":true}`)
	be.armed.Store(false)
	close(be.release)
	if status != http.StatusGatewayTimeout || !strings.Contains(body, "deadline") {
		t.Fatalf("long request: %d %s", status, body)
	}
	status, body = ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":3000}`)
	if status != http.StatusBadRequest || !strings.Contains(body, "KV cache") {
		t.Fatalf("request over the KV budget: %d %s", status, body)
	}
	if status, body := ts.post(t, "/v1/completions", `{"model":"tiny","prompt":"x","max_tokens":3}`); status != 200 {
		t.Fatalf("afterwards: %d %s", status, body)
	}
}

// gatedBackend holds every LinearForward while armed, until release is
// closed: generation that cannot advance, for a deadline test that does
// not depend on how fast the machine is.
type gatedBackend struct {
	kernels.Backend
	armed   atomic.Bool
	release chan struct{}
}

func (g *gatedBackend) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	if g.armed.Load() {
		<-g.release
	}
	g.Backend.LinearForward(out, inp, weight, bias, N, C, OC)
}

// TestDTypeBF16: --dtype bfloat16 serves the model from bfloat16 weights
// (the same folder, rounded): the logprobs of one greedy reply, re-scored by
// a float32 server, differ a little (the rounding) but not much. A dtype it
// does not know is refused, naming the flag.
func TestDTypeBF16(t *testing.T) {
	bf := startServer(t, Options{Model: tinyDir(t), DType: "bfloat16"}, nil)
	if bf.s.m.Embed.BF16 == nil || bf.s.m.Blocks[0].MLP.Down.Weight.BF16 == nil {
		t.Fatal("--dtype bfloat16 kept float32 matrices")
	}
	f32 := startServer(t, Options{Model: tinyDir(t)}, nil)
	if f32.s.m.Embed.BF16 != nil {
		t.Fatal("the default dtype loaded bfloat16 matrices")
	}
	ctx := context.Background()
	p := chatParams("tiny", 3, 12)
	p.Temperature = openai.Float(0)
	p.Logprobs = openai.Bool(true)
	resp, err := bf.client.Chat.Completions.New(ctx, p, option.WithJSONSet("return_token_ids", true))
	if err != nil {
		t.Fatal(err)
	}
	prompt := intsField(t, resp.JSON.ExtraFields["prompt_token_ids"].Raw())
	ids := intsField(t, resp.Choices[0].JSON.ExtraFields["token_ids"].Raw())
	lps := resp.Choices[0].Logprobs.Content
	if len(ids) == 0 || len(ids) != len(lps) {
		t.Fatalf("%d ids, %d logprobs", len(ids), len(lps))
	}
	got := f32.rescore(t, prompt, ids)
	worst := 0.0
	for j, lp := range lps {
		worst = max(worst, math.Abs(float64(lp.Logprob)-got[j]))
	}
	t.Logf("%d tokens, largest logprob difference %g", len(lps), worst)
	if worst == 0 || worst > 0.05 {
		t.Fatalf("bfloat16 logprobs against float32 re-scoring: largest difference %g, want in (0, 0.05]", worst)
	}
	if _, err := NewServer(Options{Model: tinyDir(t), DType: "int4", Backend: ref.New()}); err == nil || !strings.Contains(err.Error(), "--dtype") {
		t.Fatalf("--dtype int4: %v", err)
	}
}

// TestPrefixCacheChat: the second turn of a chat starts from the first
// turn's KV rows (usage.prompt_tokens_details.cached_tokens, /metrics) and
// answers what a server without prefix caching answers.
func TestPrefixCacheChat(t *testing.T) {
	warm := startServer(t, Options{Model: tinyDir(t)}, nil)
	cold := startServer(t, Options{Model: tinyDir(t), DisablePrefixCaching: true}, nil)
	ctx := context.Background()
	turn := func(ts *testServer, p openai.ChatCompletionNewParams) *openai.ChatCompletion {
		t.Helper()
		r, err := ts.client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	p := chatParams("tiny", 3, 8)
	a, coldA := turn(warm, p), turn(cold, p)
	if a.Choices[0].Message.Content != coldA.Choices[0].Message.Content {
		t.Fatalf("turn 1: %q with prefix caching, %q without", a.Choices[0].Message.Content, coldA.Choices[0].Message.Content)
	}
	if a.Usage.PromptTokensDetails.CachedTokens != 0 || !a.Usage.PromptTokensDetails.JSON.CachedTokens.Valid() {
		t.Fatalf("turn 1 usage %+v: want cached_tokens 0", a.Usage)
	}
	if coldA.Usage.JSON.PromptTokensDetails.Valid() {
		t.Fatalf("without prefix caching usage has prompt_tokens_details: %s", coldA.Usage.RawJSON())
	}
	p.Messages = append(p.Messages, a.Choices[0].Message.ToParam(), openai.UserMessage("and then?"))
	b, coldB := turn(warm, p), turn(cold, p)
	if b.Choices[0].Message.Content != coldB.Choices[0].Message.Content {
		t.Fatalf("turn 2: %q with prefix caching, %q without", b.Choices[0].Message.Content, coldB.Choices[0].Message.Content)
	}
	cached := b.Usage.PromptTokensDetails.CachedTokens
	if cached < a.Usage.PromptTokens || cached >= b.Usage.PromptTokens {
		t.Fatalf("turn 2 reused %d of %d prompt tokens, want at least turn 1's %d", cached, b.Usage.PromptTokens, a.Usage.PromptTokens)
	}
	_, m := warm.get(t, "/metrics")
	for _, want := range []string{
		fmt.Sprintf("hone_serve_prefix_cache_hits_total %d\n", cached),
		fmt.Sprintf("hone_serve_prefix_cache_queries_total %d\n", a.Usage.PromptTokens+b.Usage.PromptTokens),
	} {
		if !strings.Contains(m, want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, m)
		}
	}
}

func TestPrefixCachingFlags(t *testing.T) {
	for _, c := range []struct {
		args    []string
		disable bool
	}{
		{nil, false},
		{[]string{"--enable-prefix-caching"}, false},
		{[]string{"--enable-prefix-caching=false"}, true},
		{[]string{"--no-enable-prefix-caching"}, true},
		{[]string{"--enable-prefix-caching=true"}, false},
	} {
		var o Options
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if o.DisablePrefixCaching != c.disable {
			t.Errorf("%v: DisablePrefixCaching %v, want %v", c.args, o.DisablePrefixCaching, c.disable)
		}
	}
	var o Options
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--enable-prefix-caching=maybe"}); err == nil {
		t.Fatal("--enable-prefix-caching=maybe parsed")
	}
}
