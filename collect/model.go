package collect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hone-rl/hone/collect/env"
	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/format/urlmask"
	"github.com/hone-rl/hone/internal/retry"
	"github.com/hone-rl/hone/internal/servedmodels"
)

// ModelOptions says how to reach the policy's OpenAI-compatible endpoint
// and how to sample. The values are taken as given: the caller (cmd) fills
// BaseURL and APIKey from $OPENAI_BASE_URL and $OPENAI_API_KEY; this
// package reads no environment.
type ModelOptions struct {
	BaseURL     string // "" : api.openai.com
	APIKey      string // "" : none (servers without keys accept any)
	Model       string
	Temperature *float64 // nil: the server's default
	TopP        *float64
	MaxTokens   int // 0: the server's default
	// Retries is how many times a call is repeated after a 429, a 5xx, a
	// timeout or a broken connection; Backoff is the first wait, doubled
	// each time up to a minute (with jitter; internal/retry), or the
	// Retry-After of the failed answer, up to a minute, when that is longer.
	Retries        int
	Backoff        time.Duration // 0: 500ms
	RequestTimeout time.Duration // per attempt; 0: none
	HTTPClient     *http.Client
	// TemplateKwargs are sent as chat_template_kwargs on every call
	// (Qwen3's {"enable_thinking": false}); nil: none. They change the
	// prompt the server renders, so Run records them on every row.
	TemplateKwargs map[string]any
}

// Model is the policy that asks an OpenAI-compatible server for each turn,
// with logprobs and the sampled token ids (vLLM's return_token_ids, else
// read from the logprobs tokens of its return_tokens_as_token_ids).
type Model struct {
	client openai.Client
	o      ModelOptions
	retry  retry.Policy
	// stop, when set, is told of every call that failed before any call
	// of the model was answered in a way every other call would fail
	// too (firstCallStop: a model the server does not serve, a
	// --max-tokens over the server's cap): Run stops there.
	stop func(error)
	// answered: a call was answered. A 404 after that is no wrong
	// --model but a server between two loads of the adapter (vLLM
	// restarted under hone-serve's front, a step folder loaded again),
	// which fails its episode only.
	answered atomic.Bool
}

// NewModel returns a Model. The client's own retries are off; Model
// retries through internal/retry, the decorator score's judge uses too,
// so that a test can make the backoff short.
func NewModel(o ModelOptions) *Model {
	ro := []option.RequestOption{
		option.WithMaxRetries(0),
		option.WithAPIKey(orDefault(o.APIKey, "none")), // servers without keys accept any
	}
	// The client would take $OPENAI_BASE_URL for an empty BaseURL: name
	// the endpoint either way, so that only cmd reads the environment.
	ro = append(ro, option.WithBaseURL(orDefault(o.BaseURL, openAIBaseURL)))
	if o.HTTPClient == nil {
		// The default transport keeps 2 idle connections per host; with many
		// episodes in flight every call would then open a new one.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 1024
		o.HTTPClient = &http.Client{Transport: t}
	}
	ro = append(ro, option.WithHTTPClient(o.HTTPClient))
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	return &Model{client: openai.NewClient(ro...), o: o, retry: retry.Policy{
		Attempts:  o.Retries + 1,
		Retryable: retryable,
		Backoff:   retry.Jittered(retry.Exponential(o.Backoff, maxBackoff)),
	}}
}

// openAIBaseURL is where a Model without a BaseURL sends its calls.
const openAIBaseURL = "https://api.openai.com/v1/"

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Policy returns the model as an env.Policy for one episode; seed is sent
// as the request seed (offset by the turn), for servers that honour it.
func (m *Model) Policy(seed int64) env.Policy {
	turn := int64(0)
	return env.PolicyFunc(func(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool) (trajectory.Message, error) {
		turn++
		return m.Complete(ctx, msgs, tools, seed+turn)
	})
}

// chatRequest is the chat completion request Model sends: the messages
// and tools in the OpenAI chat shape (format/chatmsg) as they are, so a
// tool's schema reaches the server with its key order, plus vLLM's
// return_token_ids and, for servers that predate it, vLLM's older
// return_tokens_as_token_ids (logprobs tokens written "token_id:<id>").
type chatRequest struct {
	Model          string            `json:"model"`
	Messages       []chatmsg.Message `json:"messages"`
	Tools          []trajectory.Tool `json:"tools,omitempty"`
	Logprobs       bool              `json:"logprobs,omitempty"`
	Seed           int64             `json:"seed"`
	Temperature    *float64          `json:"temperature,omitempty"`
	TopP           *float64          `json:"top_p,omitempty"`
	MaxTokens      int               `json:"max_tokens,omitempty"`
	ResponseFormat json.RawMessage   `json:"response_format,omitempty"`
	ReturnTokenIDs bool              `json:"return_token_ids"`
	// ReturnTokensAsTokenIDs names the sampled ids in the logprobs tokens,
	// so that an answer without token_ids still places them; collect
	// reads only the logprobs' values, never their token text.
	ReturnTokensAsTokenIDs bool           `json:"return_tokens_as_token_ids"`
	TemplateKwargs         map[string]any `json:"chat_template_kwargs,omitempty"`
}

// completion is the part of a chat completion response Model reads,
// including vLLM's token id fields and the logprobs tokens that
// return_tokens_as_token_ids writes as ids.
type completion struct {
	Model          string  `json:"model"`
	PromptTokenIDs []int32 `json:"prompt_token_ids"`
	Choices        []struct {
		FinishReason string          `json:"finish_reason"`
		Message      chatmsg.Message `json:"message"`
		TokenIDs     []int32         `json:"token_ids"`
		Logprobs     *struct {
			Content []struct {
				Token   string  `json:"token"`
				Logprob float32 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
	// Error is what a gateway that answers a failure with status 200
	// puts in place of the choices.
	Error json.RawMessage `json:"error"`
}

// bodyError describes the error a 200 answer's body carries ("" when
// none): its code and message, as an error status's are quoted.
func bodyError(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var e struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	var text string
	switch {
	case json.Unmarshal(raw, &text) == nil:
	case json.Unmarshal(raw, &e) == nil && e.Message != "":
		text = e.Message
	default:
		text = string(raw)
	}
	label := "error"
	if c := strings.Trim(string(e.Code), `"`); c != "" && c != "null" {
		label += " " + c
	}
	text = strings.ToValidUTF8(strings.TrimSpace(text), "\uFFFD")
	if len(text) > maxErrorMessage {
		text = strings.ToValidUTF8(text[:maxErrorMessage], "") + "…"
	}
	return label + ": " + text
}

// Complete asks for one assistant turn. The returned message is trainable
// and carries token ids, logprobs, finish reason, answering model and the
// latency of the successful attempt.
func (m *Model) Complete(ctx context.Context, msgs []trajectory.Message, tools []trajectory.Tool, seed int64) (trajectory.Message, error) {
	body, err := encodeRequest(m.request(msgs, tools, seed))
	if err != nil {
		return trajectory.Message{}, err
	}
	return m.call(ctx, body)
}

// call sends the request body, retried as m.retry says, but never sooner
// than a failed answer's Retry-After asks: a rate limit lifts when the
// server says, and retries spent before then fail the episode for nothing.
func (m *Model) call(ctx context.Context, body []byte) (trajectory.Message, error) {
	var after time.Duration // the last failed answer's Retry-After
	p := m.retry
	p.Backoff = func(i int) time.Duration { return max(m.retry.Backoff(i), after) }
	msg, err := retry.Do(ctx, p, func(ctx context.Context) (trajectory.Message, error) {
		msg, err := m.once(ctx, body)
		after = 0
		if ce := (*callError)(nil); errors.As(err, &ce) {
			after = ce.retryAfter
		}
		return msg, err
	})
	if err == nil {
		m.answered.Store(true)
	}
	if ce := (*callError)(nil); m.stop != nil && !m.answered.Load() && errors.As(err, &ce) {
		if serr := m.firstCallStop(ce); serr != nil {
			m.stop(serr)
		}
	}
	return msg, err
}

// firstCallStop is the error that stops a run at ce, a call failed before
// any was answered, when every other call would fail the same way: a
// model the server does not serve (ErrModelNotFound), or a --max-tokens
// the server can never grant (ErrMaxTokensOverCap); nil otherwise.
func (m *Model) firstCallStop(ce *callError) error {
	if missingModel(ce) {
		return m.notFound(ce)
	}
	return m.overLimit(ce)
}

// overLimit is the error for ce when it refuses --max-tokens for a limit
// of the server's that no prompt changes (maxTokensOver), naming the flag
// and its value, which the server's words cannot know; nil when ce is no
// such refusal.
func (m *Model) overLimit(ce *callError) error {
	limit, over := m.maxTokensOver(ce)
	if over == "" {
		return nil
	}
	// Worded by the limit, not ErrMaxTokensOverCap's own text: "the
	// server's cap" misnamed a model's context as the cause.
	return &limitError{
		msg: fmt.Sprintf("--max-tokens over %s: --max-tokens %d %s at %s, so every call is refused (%v); lower --max-tokens",
			limit, m.o.MaxTokens, over, urlmask.Shown(orDefault(m.o.BaseURL, openAIBaseURL)), ce),
		errs: []error{ErrMaxTokensOverCap, ce},
	}
}

// limitError is an error whose text is msg, matching each of errs
// (errors.Is, errors.As) without saying their texts.
type limitError struct {
	msg  string
	errs []error
}

func (e *limitError) Error() string   { return e.msg }
func (e *limitError) Unwrap() []error { return e.errs }

// The words of a 400 for a max_tokens over a cap of the server's, which
// every request with it gets whatever its prompt: hone-serve's ("max_tokens=N
// is more than this server's cap of M", also after a clamp to
// max_new_tokens) and OpenAI's ("This model supports at most M completion
// tokens").
var tokenCapRE = []*regexp.Regexp{
	regexp.MustCompile(`max_(?:completion_)?tokens\b.* is more than this server's cap of (\d+)`),
	regexp.MustCompile(`supports at most (\d+) completion tokens`),
}

// maxTokensOver names the limit of the server's that --max-tokens is over,
// and says how, when ce refuses it for one that no prompt changes: the
// server's cap on max_tokens, or a model context (contextSizeRE) that the
// completion the refusal names (completionSizeRE) alone fills, which
// leaves no room for any prompt; over is "" when ce is no such refusal. The completion is the
// refusal's, not --max-tokens: a server may clamp max_tokens first
// (hone-serve to generation_config.json's max_new_tokens), and a
// refusal that names no completion is of the prompt alone. Those depend
// on the prompt, as a context refusal of a completion below the context
// does, and on the turn: they stay an episode's (a cut after the first
// turn).
func (m *Model) maxTokensOver(ce *callError) (limit, over string) {
	if ce.status != http.StatusBadRequest || m.o.MaxTokens <= 0 {
		return "", ""
	}
	if c := firstMatch(ce.msg, tokenCapRE); c != "" {
		return "the server's cap", "is more than the server's cap of " + c
	}
	if !ce.full {
		return "", ""
	}
	n, err := strconv.Atoi(firstMatch(ce.msg, contextSizeRE))
	if err != nil {
		return "", ""
	}
	if c, err := strconv.Atoi(firstMatch(ce.msg, completionSizeRE)); err == nil && c >= n {
		return "the model's context", fmt.Sprintf("leaves no room for a prompt in the model's context of %d tokens", n)
	}
	return "", ""
}

// missingModel reports whether a failed call says the model is not there:
// OpenAI's (and vLLM's, hone-serve's) code model_not_found, or any 404 to
// chat/completions, which is also what a base URL without its /v1 gets.
// Every call of the run would be answered the same.
func missingModel(ce *callError) bool {
	return ce.status == http.StatusNotFound || ce.code == "model_not_found"
}

// notFound is the error that stops a run at a call that failed for a
// model the server does not serve.
func (m *Model) notFound(ce *callError) error {
	return fmt.Errorf("%w: %q at %s, %w", ErrModelNotFound, m.o.Model, urlmask.Shown(orDefault(m.o.BaseURL, openAIBaseURL)), ce)
}

// notFoundAdvice is err, notFound's error, with the models the server
// lists and what to check.
func (m *Model) notFoundAdvice(ctx context.Context, err error) error {
	served := servedmodels.Describe(ctx, &m.client)
	if ce := (*callError)(nil); served == "" && errors.As(err, &ce) && ce.code != "model_not_found" {
		// Neither a model list nor a model_not_found code: the URL has no
		// chat/completions, as a base URL without its /v1 has not. (vLLM
		// answers an unknown model with the 404's status as its code, and
		// lists its models from a right base URL.)
		err = fmt.Errorf("%w (no chat/completions there; an OpenAI base URL usually ends in /v1)", err)
	}
	if served != "" {
		served = "; it serves: " + served
	}
	return fmt.Errorf("%w%s; check --model and --base-url (the run stopped at the first such answer)", err, served)
}

// maxRetryAfter caps the wait a Retry-After asks for: a server that
// names an hour must not hold an episode without --episode-timeout that
// long; past the cap the backoff's own retries go on.
const maxRetryAfter = time.Minute

// maxBackoff caps the doubled backoff for the same reason: uncapped, the
// 12th retry of a 500ms backoff waits 17 minutes, and more retries hours,
// while the server may have been back long before.
const maxBackoff = maxRetryAfter

// request builds the request for one turn. The messages are sent as the
// OpenAI API takes them (chatmsg.Message.ForAPI).
func (m *Model) request(msgs []trajectory.Message, tools []trajectory.Tool, seed int64) *chatRequest {
	r := &chatRequest{Model: m.o.Model, Messages: make([]chatmsg.Message, len(msgs)), Tools: tools,
		Logprobs: true, Seed: seed, Temperature: m.o.Temperature, TopP: m.o.TopP, MaxTokens: max(m.o.MaxTokens, 0),
		ReturnTokenIDs: true, ReturnTokensAsTokenIDs: true, TemplateKwargs: m.o.TemplateKwargs}
	for i := range msgs {
		r.Messages[i] = msgs[i].Chat().ForAPI()
	}
	return r
}

// encodeRequest is the body of r. What cannot be sent (a tool whose
// parameters are not JSON) fails here, before any attempt, in its own
// words rather than encoding/json's.
func encodeRequest(r *chatRequest) ([]byte, error) {
	b, err := json.Marshal(r)
	var me *json.MarshalerError
	if errors.As(err, &me) {
		return nil, me.Err
	}
	return b, err
}

// callError is a failed attempt with what decides a retry.
type callError struct {
	status  int    // HTTP status, 0 when none came back
	code    string // the error body's code, when the server sent one
	timeout bool
	msg     string // what Error says, when not err's text
	err     error
	// retryAfter: the wait the answer's Retry-After asks for (0: none).
	retryAfter time.Duration
	// full: the server refused the prompt as longer than the model's
	// context; the error then wraps env.ErrContextFull too.
	full bool
}

func (e *callError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.err.Error()
}
func (e *callError) Unwrap() []error {
	if e.full {
		return []error{e.err, env.ErrContextFull}
	}
	return []error{e.err}
}

// retryable: a timeout or a broken connection (no status), or an error
// answer worth asking again (retry.Answer: not hone-serve's 500s for a
// sequence left with no token to choose, which would only spend the
// backoff of every turn of every episode before the episode fails anyway).
func retryable(err error) bool {
	var ce *callError
	if !errors.As(err, &ce) {
		return false
	}
	return ce.status == 0 || retry.Answer(ce.status, ce.code)
}

// maxErrorMessage caps the server's error message an episode's error
// carries, so that a server answering a long text cannot swell every row.
const maxErrorMessage = 1000

// apiCallError is the failed attempt of an answer with an error status: it
// says the status, the code and the server's message (openai-go's own
// text says only the status), so that an episode's error reads, say,
// "HTTP 500 logits_not_finite: ... gave NaN or -Inf logits ...".
func apiCallError(apiErr *openai.Error, err error) *callError {
	msg := retry.Label(apiErr.StatusCode, apiErr.Code)
	if m := strings.TrimSpace(apiErr.Message); m != "" {
		if len(m) > maxErrorMessage {
			m = strings.ToValidUTF8(m[:maxErrorMessage], "") + "…"
		}
		// openai-go keeps the message's bytes as the server sent them, and
		// the error becomes a row's error string, which must be UTF-8 for
		// Parquet readers such as DuckDB: a server's Latin-1 is U+FFFD.
		msg += ": " + strings.ToValidUTF8(m, "\uFFFD")
	} else {
		msg += ": " + err.Error()
	}
	ce := &callError{status: apiErr.StatusCode, code: apiErr.Code, msg: msg, err: err, full: contextFull(apiErr)}
	if apiErr.Response != nil {
		ce.retryAfter = retry.ServerWait(apiErr.Response.Header, time.Now(), maxRetryAfter)
	}
	return ce
}

// contextFull reports whether an error answer refuses the request for the
// model's context (retry.ContextFull).
func contextFull(apiErr *openai.Error) bool {
	return retry.ContextFull(apiErr.StatusCode, apiErr.Code, apiErr.Type, apiErr.Message)
}

// once sends the body through the openai-go client (base URL, key, error
// statuses) as it is, and reads the answer straight into completion: one
// encoding each way, and the fields openai-go's types lack (token_ids,
// reasoning_content) arrive with the rest.
func (m *Model) once(ctx context.Context, body []byte) (trajectory.Message, error) {
	callCtx := ctx
	if m.o.RequestTimeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, m.o.RequestTimeout)
		defer cancel()
	}
	start := time.Now()
	var c completion
	err := m.client.Post(callCtx, "chat/completions", body, &c)
	latency := time.Since(start)
	if err != nil {
		// openai-go returns the client's *url.Error as it is.
		err = urlmask.ShownErr(err)
		var apiErr *openai.Error
		switch {
		case errors.As(err, &apiErr):
			return trajectory.Message{}, apiCallError(apiErr, err)
		case ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded):
			return trajectory.Message{}, &callError{timeout: true, err: fmt.Errorf("no answer within %v", m.o.RequestTimeout)}
		case ctx.Err() != nil:
			return trajectory.Message{}, err
		}
		return trajectory.Message{}, &callError{err: err}
	}
	if len(c.Choices) == 0 {
		if e := bodyError(c.Error); e != "" {
			return trajectory.Message{}, fmt.Errorf("response without choices: %s", e)
		}
		return trajectory.Message{}, fmt.Errorf("response without choices")
	}
	ch := c.Choices[0]
	msg, err := trajectory.FromChat(ch.Message)
	if err != nil {
		return msg, fmt.Errorf("response message: %w", err)
	}
	msg.Role = "assistant"
	msg.Trainable = true
	msg.TokenIDs = ch.TokenIDs
	if ch.Logprobs != nil {
		var tokens []string
		for _, lp := range ch.Logprobs.Content {
			msg.Logprobs = append(msg.Logprobs, lp.Logprob)
			tokens = append(tokens, lp.Token)
		}
		// A server without return_token_ids (an older vLLM, another
		// OpenAI-compatible one) sends no token_ids; one that knows
		// return_tokens_as_token_ids still names the sampled ids in the
		// logprobs tokens, which training needs to place the logprobs
		// rather than tokenize the text again. Tokens written as text name
		// none, and the turn keeps no ids, as before.
		msg.TokenIDs = trajectory.SampledIDs(msg.TokenIDs, tokens)
	}
	if len(msg.TokenIDs) > 0 && len(msg.Logprobs) > 0 && len(msg.TokenIDs) != len(msg.Logprobs) {
		return msg, fmt.Errorf("server gave %d token ids but %d logprobs", len(msg.TokenIDs), len(msg.Logprobs))
	}
	msg.FinishReason = ch.FinishReason
	msg.AnswerModel = c.Model
	msg.Latency = latency
	return msg, nil
}

// stepOf reads the adapter step from a served name like "run@42"; any
// other name (a base model's, "org/model@2024") records step 0.
func stepOf(model string) int64 {
	n, _ := runfolder.ServedStep(model)
	return int64(n)
}
