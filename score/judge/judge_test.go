package judge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hone-rl/hone/score/judge"
	"github.com/hone-rl/hone/score/judge/judgetest"
)

var req3 = judge.Request{Model: "judge-m", PromptVersion: "v", System: "sys", User: "user", IDs: []string{"1", "2", "3"}}

func TestParse(t *testing.T) {
	good := judgetest.Answer([]string{"3", "1", "2"}, []float64{0.5, 1, 0})
	s, err := judge.Parse(req3, good)
	if err != nil {
		t.Fatal(err)
	}
	// Matched by id, returned in request order.
	if s[0].ID != "1" || s[0].Score != 1 || s[1].Score != 0 || s[2].Score != 0.5 {
		t.Fatalf("scores = %+v", s)
	}
	if _, err := judge.Parse(req3, "```json\n"+good+"\n```"); err != nil {
		t.Fatalf("fenced answer: %v", err)
	}
	// The keyed form the json_schema asks for, in any key order.
	keyed := `{"scores":{"2":{"explanation":"meh","score":0.25},"1":{"explanation":"best","score":1},"3":{"explanation":"worst","score":0}}}`
	s, err = judge.Parse(req3, keyed)
	if err != nil {
		t.Fatal(err)
	}
	if s[0] != (judge.Score{ID: "1", Explanation: "best", Score: 1}) || s[1].Score != 0.25 || s[2].Explanation != "worst" {
		t.Fatalf("keyed scores = %+v", s)
	}
	bad := map[string]struct{ answer, want string }{
		"non-json":     {"I think trajectory 1 is best.", "not the expected JSON"},
		"empty":        {"", "empty answer"},
		"wrong count":  {judgetest.Answer([]string{"1", "2"}, []float64{1, 0}), "2 scores for 3 trajectories"},
		"above range":  {judgetest.Answer([]string{"1", "2", "3"}, []float64{1, 1.5, 0}), `"2": score 1.5 is outside [0,1]`},
		"below range":  {judgetest.Answer([]string{"1", "2", "3"}, []float64{1, 0, -0.1}), `"3": score -0.1 is outside [0,1]`},
		"unknown id":   {judgetest.Answer([]string{"1", "2", "7"}, []float64{1, 0, 0}), `unknown trajectory_id "7"`},
		"duplicate id": {judgetest.Answer([]string{"1", "2", "2"}, []float64{1, 0, 0}), `"2" scored twice`},
		"trailing":     {good + " and more", "trailing text"},
		"wrong shape":  {`{"scores": {"1": 0.5}}`, `scores: trajectory_id "1"`},
		"scalar":       {`{"scores": 0.5}`, "want an object keyed by trajectory id or a list"},
		"keyed repeat": {`{"scores":{"1":{"explanation":"","score":1},"2":{"explanation":"","score":0},"2":{"explanation":"","score":0}}}`, `"2" scored twice`},
		"keyed count":  {`{"scores":{"1":{"explanation":"","score":1},"3":{"explanation":"","score":0}}}`, "2 scores for 3 trajectories"},
		"keyed range":  {`{"scores":{"1":{"explanation":"","score":1},"2":{"explanation":"","score":2},"3":{"explanation":"","score":0}}}`, `"2": score 2 is outside [0,1]`},
	}
	for name, c := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := judge.Parse(req3, c.answer)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			var je *judge.Error
			if !errors.As(err, &je) || !je.Retryable || !errors.Is(err, judge.ErrFailed) {
				t.Fatalf("err = %#v, want a retryable *judge.Error wrapping ErrFailed", err)
			}
		})
	}
}

// strictKeywords are the schema keywords OpenAI's strict structured
// outputs accept (its guide's list of supported keywords, without those
// the answer schema has no use for). maxLength is not among them.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"description": true, "enum": true, "minimum": true, "maximum": true, "items": true,
	"minItems": true, "maxItems": true,
}

// keywords collects the keywords used anywhere in a schema, descending
// into properties' values (whose keys are names, not keywords).
func keywords(v any, into map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, sub := range m {
		into[k] = true
		if k == "properties" {
			for _, p := range sub.(map[string]any) {
				keywords(p, into)
			}
		} else {
			keywords(sub, into)
		}
	}
}

func TestSchema(t *testing.T) {
	ids := []string{"1", "2", "10"}
	for _, maxChars := range []int{0, 300} {
		b, err := json.Marshal(judge.Schema(ids, judge.SchemaOptions{ExplanationMaxChars: maxChars}))
		if err != nil {
			t.Fatal(err)
		}
		// Round-trip through JSON so the check sees what the server sees.
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		used := map[string]bool{}
		keywords(s, used)
		for k := range used {
			if !strictKeywords[k] && !(k == "maxLength" && maxChars > 0) {
				t.Errorf("maxChars %d: keyword %q is not one OpenAI strict mode accepts", maxChars, k)
			}
		}
		if used["maxLength"] != (maxChars > 0) {
			t.Errorf("maxChars %d: maxLength used = %v", maxChars, used["maxLength"])
		}
		scores := s["properties"].(map[string]any)["scores"].(map[string]any)
		props := scores["properties"].(map[string]any)
		if fmt.Sprint(scores["required"]) != "[1 2 10]" || len(props) != 3 || scores["additionalProperties"] != false || s["additionalProperties"] != false {
			t.Fatalf("scores schema = %s", b)
		}
		entry := props["10"].(map[string]any)
		ep := entry["properties"].(map[string]any)
		score := ep["score"].(map[string]any)
		if fmt.Sprint(entry["required"]) != "[explanation score]" || entry["additionalProperties"] != false ||
			score["minimum"] != 0.0 || score["maximum"] != 1.0 || score["type"] != "number" {
			t.Fatalf("entry schema = %s", b)
		}
		if maxChars > 0 && ep["explanation"].(map[string]any)["maxLength"] != float64(maxChars) {
			t.Fatalf("explanation schema = %s", b)
		}
	}
}

func newOpenAI(s *judgetest.Server, key string, timeout time.Duration) judge.Judge {
	return judge.NewOpenAI(judge.OpenAIOptions{BaseURL: s.BaseURL(), APIKey: key, Timeout: timeout})
}

func TestOpenAIRequestAndAnswer(t *testing.T) {
	s := judgetest.NewServer(t, func(n int, r judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Content: judgetest.Answer(r.IDsFromSchema(), []float64{0.1, 0.9, 0.5}), PromptTokens: 100, CompletionTokens: 20}
	})
	v, err := newOpenAI(s, "sk-secret", 0).Judge(context.Background(), req3)
	if err != nil {
		t.Fatal(err)
	}
	if v.Scores[1].Score != 0.9 || v.Usage != (judge.Usage{Calls: 1, PromptTokens: 100, CompletionTokens: 20}) || v.Model != "judge-m" {
		t.Fatalf("verdict = %+v", v)
	}
	got := s.Requests()[0]
	if got.Model != "judge-m" || got.System() != "sys" || got.User() != "user" || got.Auth != "Bearer sk-secret" {
		t.Fatalf("request = %+v", got)
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string         `json:"name"`
			Strict bool           `json:"strict"`
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(got.ResponseFormat, &rf); err != nil {
		t.Fatal(err)
	}
	if rf.Type != "json_schema" || rf.JSONSchema.Name == "" || !rf.JSONSchema.Strict || rf.JSONSchema.Schema["type"] != "object" {
		t.Fatalf("response_format = %s", got.ResponseFormat)
	}
}

func TestOpenAIFailures(t *testing.T) {
	cases := map[string]struct {
		reply     judgetest.Reply
		kind      string
		retryable bool
	}{
		"http 500":  {judgetest.Reply{Status: 500}, "http", true},
		"http 429":  {judgetest.Reply{Status: 429}, "http", true},
		"http 401":  {judgetest.Reply{Status: 401}, "http", false},
		"non-json":  {judgetest.Reply{Content: "sure! here you go", PromptTokens: 7, CompletionTokens: 3}, "malformed", true},
		"no choice": {judgetest.Reply{Body: `{"id":"x","object":"chat.completion","model":"m","choices":[]}`}, "malformed", true},
		"timeout":   {judgetest.Reply{Delay: 5 * time.Second}, "timeout", true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return c.reply })
			// Only the timeout case gets a short limit, so a slow machine
			// does not turn the other cases into timeouts.
			limit := 10 * time.Second
			if c.kind == "timeout" {
				limit = 300 * time.Millisecond
			}
			_, err := newOpenAI(s, "sk-secret", limit).Judge(context.Background(), req3)
			var je *judge.Error
			if !errors.As(err, &je) || je.Kind != c.kind || je.Retryable != c.retryable {
				t.Fatalf("err = %v (%#v), want kind %s retryable %v", err, err, c.kind, c.retryable)
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Fatalf("error leaks the API key: %v", err)
			}
			if s.Hits() != 1 {
				t.Fatalf("server hits = %d, want 1 (client retries must be off)", s.Hits())
			}
			if c.kind == "malformed" && c.reply.Body == "" && je.Usage.PromptTokens != 7 {
				t.Fatalf("usage of a malformed answer = %+v, want its tokens counted", je.Usage)
			}
		})
	}
}

func TestOpenAICallerCancel(t *testing.T) {
	s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Delay: 5 * time.Second} })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := newOpenAI(s, "", time.Minute).Judge(ctx, req3)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, judge.ErrFailed) {
		t.Fatalf("err = %v, want the caller's deadline, not a judge failure", err)
	}
}

func TestRetry(t *testing.T) {
	good := judgetest.Answer([]string{"1", "2", "3"}, []float64{1, 0, 0.5})
	t.Run("recovers", func(t *testing.T) {
		s := judgetest.NewServer(t, func(n int, _ judgetest.Request) judgetest.Reply {
			switch n {
			case 0:
				return judgetest.Reply{Status: 500}
			case 1:
				return judgetest.Reply{Content: "not json", PromptTokens: 5, CompletionTokens: 2}
			}
			return judgetest.Reply{Content: good, PromptTokens: 5, CompletionTokens: 9}
		})
		j := judge.Retry{Next: newOpenAI(s, "", time.Second), Attempts: 3}
		v, err := j.Judge(context.Background(), req3)
		if err != nil {
			t.Fatal(err)
		}
		if s.Hits() != 3 || v.Usage != (judge.Usage{Calls: 3, Retries: 2, PromptTokens: 10, CompletionTokens: 11}) {
			t.Fatalf("hits %d, usage %+v", s.Hits(), v.Usage)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
			return judgetest.Reply{Content: judgetest.Answer([]string{"1"}, []float64{1})}
		})
		j := judge.Retry{Next: newOpenAI(s, "", time.Second), Attempts: 3}
		_, err := j.Judge(context.Background(), req3)
		var je *judge.Error
		if !errors.As(err, &je) || je.Kind != "malformed" || s.Hits() != 3 || je.Usage.Calls != 3 || je.Usage.Retries != 2 {
			t.Fatalf("err %v, hits %d", err, s.Hits())
		}
	})
	t.Run("not retryable", func(t *testing.T) {
		s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Status: 404} })
		j := judge.Retry{Next: newOpenAI(s, "", time.Second), Attempts: 5}
		if _, err := j.Judge(context.Background(), req3); err == nil || s.Hits() != 1 {
			t.Fatalf("err %v, hits %d, want one call", err, s.Hits())
		}
	})
}

func TestMeterAndFake(t *testing.T) {
	f := &judge.Fake{Answer: func(n int, r judge.Request) (string, error) {
		if n == 1 {
			return "garbage", nil
		}
		return judgetest.Answer(r.IDs, []float64{0, 0.5, 1}), nil
	}}
	m := &judge.Meter{Next: f}
	for i := 0; i < 3; i++ {
		r := req3
		if i == 2 {
			r.Model = "other"
		}
		m.Judge(context.Background(), r)
	}
	u := m.Usage()
	if u["judge-m"].Calls != 2 || u["other"].Calls != 1 || len(f.Calls()) != 3 {
		t.Fatalf("usage %+v, calls %d", u, len(f.Calls()))
	}
}

func TestOpenAIResponseFormats(t *testing.T) {
	for format, want := range map[string]string{"": `"type":"json_schema"`, judge.FormatJSONObject: `"response_format":{"type":"json_object"}`, judge.FormatNone: ""} {
		s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
			return judgetest.Reply{Content: judgetest.Answer([]string{"1", "2", "3"}, []float64{1, 0, 0})}
		})
		j := judge.NewOpenAI(judge.OpenAIOptions{BaseURL: s.BaseURL(), ResponseFormat: format})
		if _, err := j.Judge(context.Background(), req3); err != nil {
			t.Fatal(err)
		}
		raw := string(s.Requests()[0].Raw)
		if (want == "" && strings.Contains(raw, "response_format")) || !strings.Contains(raw, want) {
			t.Errorf("format %q: request %s", format, raw)
		}
	}
}

// honeServeNoToken is the body hone-serve answers, with a 500, for a
// sequence left with no token to choose (serve's noCandidate), here for a
// judge model served as an adapter whose step diverged.
const honeServeNoToken = `{"error":{"message":"no token could be chosen for choice 0 after 0 generated tokens: model \"judge@7\" gave NaN or -Inf logits to every token: the adapter has likely diverged (a training step that blew up, leaving huge weights); serve an earlier step of its run (\u003crun\u003e@\u003cstep\u003e)","type":"server_error","param":null,"code":"%s"}}`

// A judge call's error carries the error body's code and the server's
// message; hone-serve's 500s for a sequence left with no token to choose
// are not retried (the same judge model gives the same NaN, the same
// schema the same dead end), while other 5xx still are.
func TestOpenAIErrorCodes(t *testing.T) {
	for _, c := range []struct {
		name, body string
		status     int
		hits       int
		want       string
	}{
		{"logits_not_finite", fmt.Sprintf(honeServeNoToken, "logits_not_finite"), 500, 1,
			`HTTP 500 logits_not_finite from %s: no token could be chosen for choice 0 after 0 generated tokens: model "judge@7" gave NaN or -Inf logits`},
		{"constraint_no_token", `{"error":{"message":"no token could be chosen for choice 0 after 5 generated tokens: the output constraint (response_format or tool_choice) left none for model \"tiny\"","type":"server_error","param":null,"code":"constraint_no_token"}}`, 500, 1,
			`HTTP 500 constraint_no_token from %s: no token could be chosen for choice 0 after 5 generated tokens: the output constraint`},
		{"500 without a code", `{"error":{"message":"generation failed: out of memory","type":"server_error","param":null,"code":null}}`, 500, 3,
			`HTTP 500 from %s: generation failed: out of memory`},
		{"503 with a code", `{"error":{"message":"the server is shutting down","type":"unavailable","param":null,"code":"shutting_down"}}`, 503, 3,
			`HTTP 503 shutting_down from %s: the server is shutting down`},
		{"vLLM's 500, its status as the code", `{"error":{"message":"EngineCore encountered an issue","type":"InternalServerError","param":null,"code":500}}`, 500, 3,
			`HTTP 500 from %s: EngineCore encountered an issue`},
		{"404", `{"error":{"message":"the model \"judge-m\" does not exist","type":"not_found_error","param":"model","code":"model_not_found"}}`, 404, 1,
			`HTTP 404 model_not_found from %s: the model "judge-m" does not exist (param model)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Status: c.status, Body: c.body} })
			j := judge.Retry{Next: newOpenAI(s, "sk-secret", 10*time.Second), Attempts: 3}
			_, err := j.Judge(context.Background(), req3)
			var je *judge.Error
			if !errors.As(err, &je) || je.Kind != "http" || !errors.Is(err, judge.ErrFailed) {
				t.Fatalf("err %v (%#v), want a judge http failure", err, err)
			}
			want := fmt.Sprintf(c.want, s.BaseURL()+"/chat/completions")
			if !strings.HasPrefix(je.Err.Error(), want) || s.Hits() != c.hits || je.Usage.Calls != int64(c.hits) {
				t.Errorf("error %q after %d calls (usage %+v),\nwant it to start %q after %d", je.Err, s.Hits(), je.Usage, want, c.hits)
			}
		})
	}
}

// A refusal is final, and its error, which --on-judge-error mark writes
// into rows, is valid UTF-8 even where the refusal is cut short.
func TestOpenAIRefusal(t *testing.T) {
	refusal := strings.Repeat("我不能评分。", 40) // 720 bytes
	s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Body: fmt.Sprintf(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"","refusal":%q}}]}`, refusal)}
	})
	_, err := newOpenAI(s, "", 10*time.Second).Judge(context.Background(), req3)
	var je *judge.Error
	if !errors.As(err, &je) || je.Kind != "refusal" || je.Retryable {
		t.Fatalf("err = %v, want a final refusal", err)
	}
	if !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), "我不能评分") {
		t.Fatalf("refusal error %q: want valid UTF-8 naming the refusal", err)
	}
}

// A 429 or 503 that says when to come back (Retry-After in seconds, as
// hone-serve sends while draining, or Retry-After-Ms, as OpenAI sends) is
// asked again no sooner than that, even where the backoff would pause
// less: the client's own retries, which honour it, are off.
func TestRetryHonoursRetryAfter(t *testing.T) {
	good := judgetest.Answer([]string{"1", "2", "3"}, []float64{1, 0, 0.5})
	for _, c := range []struct {
		name   string
		status int
		header map[string]string
		wait   time.Duration
	}{
		{"503 Retry-After seconds", 503, map[string]string{"Retry-After": "1"}, time.Second},
		{"429 Retry-After-Ms", 429, map[string]string{"Retry-After-Ms": "400"}, 400 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var at []time.Time
			s := judgetest.NewServer(t, func(n int, _ judgetest.Request) judgetest.Reply {
				mu.Lock()
				at = append(at, time.Now())
				mu.Unlock()
				if n == 0 {
					return judgetest.Reply{Status: c.status, Header: c.header}
				}
				return judgetest.Reply{Content: good}
			})
			// No backoff of its own: any pause is the server's asking.
			j := judge.Retry{Next: newOpenAI(s, "", 10*time.Second), Attempts: 2}
			if _, err := j.Judge(context.Background(), req3); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(at) != 2 {
				t.Fatalf("%d calls, want 2", len(at))
			}
			if gap := at[1].Sub(at[0]); gap < c.wait {
				t.Fatalf("asked again after %v, want no sooner than the %v the server asked for", gap, c.wait)
			}
		})
	}
}

// The wait a failed call's server asked for is on its error, read from
// either header and either form of Retry-After, and capped so that one
// answer cannot hold a group (and a --concurrency slot) for hours.
func TestOpenAIRetryAfterOnError(t *testing.T) {
	for _, c := range []struct {
		name     string
		header   map[string]string
		min, max time.Duration
	}{
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second, 7 * time.Second},
		{"milliseconds first", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, 250 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": time.Now().Add(20 * time.Second).UTC().Format(http.TimeFormat)}, 15 * time.Second, 20 * time.Second},
		{"capped", map[string]string{"Retry-After": "3600"}, judge.MaxServerWait, judge.MaxServerWait},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, 0},
		{"none", nil, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
				return judgetest.Reply{Status: 429, Header: c.header}
			})
			_, err := newOpenAI(s, "", 10*time.Second).Judge(context.Background(), req3)
			var je *judge.Error
			if !errors.As(err, &je) || !je.Retryable {
				t.Fatalf("err = %v, want a retryable judge failure", err)
			}
			if je.RetryAfter < c.min || je.RetryAfter > c.max {
				t.Fatalf("RetryAfter = %v, want within [%v, %v]", je.RetryAfter, c.min, c.max)
			}
		})
	}
}

// An answer the server stopped at its token limit (finish_reason
// "length") says so and names the limit to raise: cut mid-JSON it read
// "unexpected EOF", and a reasoning judge (o4-mini) that spent the limit
// thinking gave an empty content, "empty answer", naming neither.
func TestOpenAIAnswerCutAtTokenLimit(t *testing.T) {
	for name, content := range map[string]string{
		"cut mid-JSON":    `{"scores":{"1":{"explanation":"The agent guessed`,
		"nothing written": "",
	} {
		t.Run(name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "model": "judge-m",
				"choices": []any{map[string]any{"index": 0, "finish_reason": "length",
					"message": map[string]any{"role": "assistant", "content": content}}},
				"usage": map[string]any{"prompt_tokens": 50, "completion_tokens": 64, "total_tokens": 114}})
			s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Body: string(body)} })
			j := judge.NewOpenAI(judge.OpenAIOptions{BaseURL: s.BaseURL(), Timeout: 10 * time.Second, MaxTokens: 64})
			_, err := j.Judge(context.Background(), req3)
			var je *judge.Error
			if !errors.As(err, &je) || je.Kind != "malformed" || je.Usage.CompletionTokens != 64 {
				t.Fatalf("err = %v, want a malformed answer that cost its tokens", err)
			}
			if !strings.Contains(err.Error(), "stopped at its token limit (64 tokens") || !strings.Contains(err.Error(), "raise --judge-max-tokens") {
				t.Fatalf("err = %v, want it to say the answer was cut at the 64-token limit and which flag raises it", err)
			}
		})
	}
}

// An answer cut at the server's own default (no --judge-max-tokens: a
// hone-serve judge started with --max-tokens 8, as README's round starts
// it) said "raise the limit" without naming how: the error names
// --judge-max-tokens, the flag that sends one.
func TestOpenAIAnswerCutAtServerDefault(t *testing.T) {
	body, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "model": "judge-m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "length",
			"message": map[string]any{"role": "assistant", "content": `{"scores`}}},
		"usage": map[string]any{"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58}})
	s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Body: string(body)} })
	_, err := judge.NewOpenAI(judge.OpenAIOptions{BaseURL: s.BaseURL(), Timeout: 10 * time.Second}).Judge(context.Background(), req3)
	if err == nil || !strings.Contains(err.Error(), "the server's default") || !strings.Contains(err.Error(), "--judge-max-tokens") {
		t.Fatalf("err = %v, want it to name the server's default and --judge-max-tokens", err)
	}
}

// Where the server's limit, not --judge-max-tokens, cut the answer, the
// flag cannot help: hone-serve's --max-tokens is both its default and its
// cap (a --judge-max-tokens above it is a 400), vLLM's default is the rest
// of its context, and a max_new_tokens of its generation config clamps a
// larger max_tokens. The error said to set or raise --judge-max-tokens;
// it says to raise the server's limit.
func TestOpenAIAnswerCutByServerLimitNamesIt(t *testing.T) {
	for name, c := range map[string]struct{ flag, wrote int }{
		"no --judge-max-tokens": {0, 8},
		"clamped below it":      {64, 16},
	} {
		t.Run(name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "model": "judge-m",
				"choices": []any{map[string]any{"index": 0, "finish_reason": "length",
					"message": map[string]any{"role": "assistant", "content": `{"scores`}}},
				"usage": map[string]any{"prompt_tokens": 50, "completion_tokens": c.wrote, "total_tokens": 50 + c.wrote}})
			s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply { return judgetest.Reply{Body: string(body)} })
			_, err := judge.NewOpenAI(judge.OpenAIOptions{BaseURL: s.BaseURL(), Timeout: 10 * time.Second, MaxTokens: int64(c.flag)}).Judge(context.Background(), req3)
			if err == nil || !strings.Contains(err.Error(), "raise the server's limit") || strings.Contains(err.Error(), "raise --judge-max-tokens") || strings.Contains(err.Error(), "set --judge-max-tokens above it") {
				t.Fatalf("--judge-max-tokens %d, cut at %d tokens: err = %v, want it to say to raise the server's limit, not the flag", c.flag, c.wrote, err)
			}
		})
	}
}

// A gateway that answers an upstream failure with a 200 whose body is an
// error object (OpenRouter does, for a provider's 429 or 502) failed as
// "response has no choices", hiding what the gateway said. The error now
// carries the body's message and code; the call is still retried.
func TestOpenAIErrorIn200(t *testing.T) {
	s := judgetest.NewServer(t, func(int, judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Body: `{"error":{"message":"Provider returned error","code":429,"metadata":{"provider_name":"Example"}}}`}
	})
	_, err := newOpenAI(s, "", 10*time.Second).Judge(context.Background(), req3)
	var je *judge.Error
	if !errors.As(err, &je) || !je.Retryable {
		t.Fatalf("err = %v, want a retryable judge failure", err)
	}
	if !strings.Contains(err.Error(), "Provider returned error") || !strings.Contains(err.Error(), "429") {
		t.Fatalf("err = %v, want the body's error message and code", err)
	}
}

// ART names its judge the LiteLLM way, with the provider first
// ("openai/o4-mini"); sent as is to OpenAI the name is unknown. The
// error of a 404 for such a name says what the server may know it as.
// A name whose first part is no LiteLLM provider gets no such hint.
func TestOpenAIProviderPrefixHint(t *testing.T) {
	notFound := `{"error":{"message":"The model ` + "`%s`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`
	for model, hint := range map[string]string{
		"openai/o4-mini":                     `"o4-mini"`,
		"anthropic/claude-sonnet-4-20250514": `"claude-sonnet-4-20250514"`,
		"Qwen/Qwen3-32B":                     "",
	} {
		t.Run(model, func(t *testing.T) {
			s := judgetest.NewServer(t, func(_ int, r judgetest.Request) judgetest.Reply {
				return judgetest.Reply{Status: 404, Body: fmt.Sprintf(notFound, r.Model)}
			})
			req := req3
			req.Model = model
			_, err := newOpenAI(s, "", 10*time.Second).Judge(context.Background(), req)
			var je *judge.Error
			if !errors.As(err, &je) || je.Retryable {
				t.Fatalf("err = %v, want a final judge failure", err)
			}
			has := strings.Contains(err.Error(), "LiteLLM")
			if hint == "" && has {
				t.Fatalf("err = %v, want no provider-prefix hint for %s", err, model)
			}
			if hint != "" && (!has || !strings.Contains(err.Error(), hint)) {
				t.Fatalf("err = %v, want a hint naming the model without its LiteLLM provider, %s", err, hint)
			}
		})
	}
}
