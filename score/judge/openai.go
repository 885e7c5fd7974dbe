package judge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hone-rl/hone/format/urlmask"
	"github.com/hone-rl/hone/internal/retry"
	"github.com/hone-rl/hone/internal/servedmodels"
)

// OpenAIOptions configures an OpenAI-compatible judge.
type OpenAIOptions struct {
	BaseURL string // e.g. http://localhost:8000/v1; "" means api.openai.com (no environment is read)
	APIKey  string // sent as a bearer token; never logged
	// Timeout bounds one call; 0 means none beyond ctx. A call that runs
	// past it fails with a retryable "timeout" error.
	Timeout     time.Duration
	Temperature *float64 // nil: the server's default
	MaxTokens   int64    // 0: the server's default
	// ResponseFormat is what the request asks of the answer's shape:
	// FormatJSONSchema (the default, ""), FormatJSONObject, or FormatNone for
	// servers without structured output. The answer is checked by Parse
	// either way.
	ResponseFormat string
	// ExplanationMaxChars bounds each explanation in the json_schema
	// (maxLength); 0 leaves it out, as OpenAI's strict mode requires. See
	// SchemaOptions.
	ExplanationMaxChars int
	// ContextTokens is hone-score's --judge-context-tokens (0: not given)
	// and Tokenizer whether --judge-tokenizer counts for it: they choose
	// the hint on an answer refusing the prompt for the judge's context.
	ContextTokens int
	Tokenizer     bool
	HTTPClient    *http.Client
}

// Response formats a judge request can ask for.
const (
	FormatJSONSchema = "json_schema"
	FormatJSONObject = "json_object"
	FormatNone       = "none"
)

// OpenAI is a Judge that calls /chat/completions on an OpenAI-compatible
// server and asks for the answer in the json_schema response format.
type OpenAI struct {
	client openai.Client
	opts   OpenAIOptions
}

// NewOpenAI returns a judge for the server described by opts. The
// client's own retries are off: Retry decides what to repeat, so that each
// attempt is counted.
func NewOpenAI(opts OpenAIOptions) *OpenAI {
	ro := []option.RequestOption{
		option.WithMaxRetries(0),
		// "none" keeps servers that ignore keys (vLLM, hone-serve) happy
		// when the user has none to give.
		option.WithAPIKey(orDefault(opts.APIKey, "none")),
	}
	// The client would take $OPENAI_BASE_URL for an empty BaseURL: name
	// the server either way, so that only cmd reads the environment.
	ro = append(ro, option.WithBaseURL(orDefault(opts.BaseURL, OpenAIBaseURL)),
		option.WithMiddleware(catchNotJSON))
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	return &OpenAI{client: openai.NewClient(ro...), opts: opts}
}

// Served returns the models the judge's server lists (GET models),
// comma-separated, or "" when it lists none or cannot be asked: for the
// error that stops a run at a --judge-model the server does not know.
func (o *OpenAI) Served(ctx context.Context) string {
	return servedmodels.Describe(ctx, &o.client)
}

// OpenAIBaseURL is where a judge without a BaseURL sends its calls.
const OpenAIBaseURL = "https://api.openai.com/v1/"

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Judge sends one chat completion and parses its answer.
func (o *OpenAI) Judge(ctx context.Context, req Request) (Verdict, error) {
	params := openai.ChatCompletionNewParams{
		Model: shared.ChatModel(req.Model),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(req.System),
			openai.UserMessage(req.User),
		},
	}
	switch o.opts.ResponseFormat {
	case "", FormatJSONSchema:
		params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   "trajectory_scores",
				Strict: openai.Bool(true),
				Schema: Schema(req.IDs, SchemaOptions{ExplanationMaxChars: o.opts.ExplanationMaxChars}),
			},
		}
	case FormatJSONObject:
		params.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
	}
	if t := cmp.Or(req.Temperature, o.opts.Temperature); t != nil {
		params.Temperature = openai.Float(*t)
	}
	if o.opts.MaxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(o.opts.MaxTokens)
	}
	callCtx := ctx
	if o.opts.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, o.opts.Timeout)
		defer cancel()
	}
	usage := Usage{Calls: 1}
	resp, err := o.client.Chat.Completions.New(callCtx, params)
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up: not the judge's fault, but the request
			// was sent.
			return Verdict{}, withUsage(ctx.Err(), usage)
		}
		var nj *notJSON
		if errors.As(err, &nj) {
			return Verdict{}, o.notCompletion(nj, usage)
		}
		return Verdict{}, classify(err, callCtx, o.opts.Timeout, usage, req.Model, o.contextHint(), o.opts.MaxTokens)
	}
	usage.PromptTokens = resp.Usage.PromptTokens
	usage.CompletionTokens = resp.Usage.CompletionTokens
	if len(resp.Choices) == 0 {
		return Verdict{}, &Error{Kind: "malformed", Retryable: true, Usage: usage, Err: noChoices(resp.RawJSON())}
	}
	msg := resp.Choices[0].Message
	if msg.Content == "" && msg.Refusal != "" {
		return Verdict{}, &Error{Kind: "refusal", Usage: usage, Err: fmt.Errorf("judge refused: %s", prefix(msg.Refusal, 200))}
	}
	scores, err := Parse(req, msg.Content)
	if err != nil {
		je := err.(*Error)
		je.Usage = usage
		if resp.Choices[0].FinishReason == "length" {
			// Else the error reads "unexpected EOF" or, from a reasoning
			// judge that spent the limit thinking, "empty answer".
			je.Err = fmt.Errorf("%w: the judge stopped at its token limit (%s, its thinking included; it wrote %d tokens): %s",
				je.Err, o.limitWords(), resp.Usage.CompletionTokens, o.raiseWords(resp.Usage.CompletionTokens))
		}
		return Verdict{}, je
	}
	model := resp.Model
	if model == "" {
		model = req.Model
	}
	return Verdict{Model: model, Scores: scores, Usage: usage}, nil
}

// notJSON is a 2xx answer whose body is no chat completion: a web page (a
// proxy's login page, a chat UI's) where the judge's API was expected, or
// JSON that is not one (another endpoint's answer, a body cut short by
// the server itself).
type notJSON struct {
	contentType string
	head        []byte // the body's first bytes
	// reason says what the body is, where it is labelled JSON or parses
	// as JSON; "" for a page, which its content type says.
	reason string
}

func (e *notJSON) Error() string {
	if e.reason != "" {
		return e.reason
	}
	return fmt.Sprintf("with content type %q, not JSON's (application/json)", e.contentType)
}

// completionShape says why body, a 2xx answer, is no chat completion, ""
// where it may be one. A JSON object with an error and no choices is
// left to the caller (noChoices): gateways answer an upstream failure so,
// which may pass, and the call is retried. Anything else is the same
// answer at every call: asked again, it only spent --judge-retries (taken
// before for a transport failure, or a malformed answer).
func completionShape(body []byte) string {
	if !json.Valid(body) {
		return "a body labelled JSON that does not parse as JSON"
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); trimmed[0] != '{' {
		return "JSON that is not an object"
	}
	var o struct {
		Choices json.RawMessage `json:"choices"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return "a JSON object that does not parse as a chat completion"
	}
	if bytes.HasPrefix(o.Choices, []byte("[")) || (len(o.Error) > 0 && string(o.Error) != "null") {
		return ""
	}
	return "a JSON object without a choices list"
}

// notJSONHead is how much of such a body an error shows: enough to tell
// an HTML page from a plain-text message.
const notJSONHead = 80

// catchNotJSON is the client's middleware that turns a 2xx answer that
// is not JSON into a *notJSON error: the client would fail it with a
// message about Go destination types that says nothing of the body, and
// the body is gone by the time its error comes back. The media type test
// is the client's own (application/json, or a +json suffix). A body that
// is a JSON object under another type (a proxy that labels it
// text/plain, a server that gives none) is the answer all the same, as
// the OpenAI Python client reads it: it goes on labelled as JSON. A body
// that parses as no chat completion, whatever its label, is a *notJSON
// too (completionShape): the client failed it as a transport error, which
// was retried.
func catchNotJSON(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	labelled := strings.Contains(mt, "application/json") || strings.HasSuffix(mt, "+json")
	defer resp.Body.Close()
	head, err := io.ReadAll(io.LimitReader(resp.Body, notJSONHead+1))
	if err != nil {
		return nil, fmt.Errorf("read the judge's answer (content type %q): %w", ct, err)
	}
	if !labelled && !bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("{")) {
		// A page is not read past what its error shows.
		return nil, &notJSON{contentType: ct, head: head}
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read the judge's answer (content type %q): %w", ct, err)
	}
	body := append(head, rest...)
	if !labelled && !json.Valid(body) {
		return nil, &notJSON{contentType: ct, head: head}
	}
	// Only a chat completion's answer is one: the client lists the
	// server's models through here too.
	if why := completionShape(body); why != "" && strings.HasSuffix(req.URL.Path, "/chat/completions") {
		return nil, &notJSON{contentType: ct, head: head, reason: why}
	}
	resp.Header.Set("Content-Type", "application/json")
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// notCompletion is the judge error of a notJSON answer. It is not
// retried: a URL that serves a web page, or JSON that is no chat
// completion, will serve it again. It names
// --judge-base-url (masked: its userinfo may hold a token) as what to
// check, and the body's first bytes quoted, so that control bytes or a
// page's script cannot garble the log.
func (o *OpenAI) notCompletion(nj *notJSON, usage Usage) error {
	begins := strconv.Quote(strings.TrimSuffix(prefix(string(nj.head), notJSONHead), "…"))
	if len(nj.head) > notJSONHead {
		begins += "…"
	}
	return &Error{Kind: "http", Status: http.StatusOK, Usage: usage, Err: fmt.Errorf("the judge answered %w (it begins %s), not an OpenAI chat completion: check --judge-base-url %s, which should be an OpenAI-compatible API's base (for vLLM and hone-serve, http://HOST:PORT/v1), not a web page or another endpoint",
		nj, begins, urlmask.Shown(orDefault(o.opts.BaseURL, OpenAIBaseURL)))}
}

// NotCompletion reports whether err is a judge's 2xx answer that is no
// chat completion (not JSON at all, or JSON of another shape): the base
// URL serves something other than an OpenAI API, and every call will get
// the same.
func NotCompletion(err error) bool {
	var nj *notJSON
	return errors.As(err, &nj)
}

// noChoices is the error of a response without choices. Gateways
// (OpenRouter) answer an upstream failure with a 200 whose body is an
// error object; its message and code say what went wrong, where "no
// choices" alone does not.
func noChoices(body string) error {
	var e struct {
		Error *struct {
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) != nil || e.Error == nil || e.Error.Message == "" {
		return errors.New("response has no choices")
	}
	code := strings.Trim(string(e.Error.Code), `"`)
	if code == "" || code == "null" {
		return fmt.Errorf("response has no choices but an error: %s", prefix(e.Error.Message, 200))
	}
	return fmt.Errorf("response has no choices but an error (code %s): %s", prefix(code, 40), prefix(e.Error.Message, 200))
}

// litellmProviders are the provider prefixes of LiteLLM model names that
// ART's RULER takes (judge_model="openai/o3"); an OpenAI-compatible server
// knows the model by the rest of the name.
var litellmProviders = map[string]bool{
	"openai": true, "anthropic": true, "azure": true, "gemini": true, "vertex_ai": true, "bedrock": true,
	"ollama": true, "ollama_chat": true, "hosted_vllm": true, "openrouter": true, "groq": true,
	"mistral": true, "together_ai": true, "deepseek": true, "xai": true, "fireworks_ai": true,
}

// providerHint is said of a 404 for a model named the LiteLLM way, with
// its provider first: what this server may know it as. "" for other names
// (Qwen/Qwen3-32B is a model of its own on vLLM).
func providerHint(model string) string {
	provider, rest, ok := strings.Cut(model, "/")
	if !ok || rest == "" || !litellmProviders[provider] {
		return ""
	}
	// Hedged: OpenRouter names its models with the provider (openai/o4-mini)
	// and vLLM serves Hugging Face ids such as openai/gpt-oss-20b, so there
	// a 404 is a typo, not the prefix.
	return fmt.Sprintf(" (%q may be a LiteLLM name, as ART's RULER takes it: OpenAI, and most OpenAI-compatible servers, name the model without the provider, e.g. %q; OpenRouter and a vLLM serving a Hugging Face id keep it)", model, rest)
}

// limitWords names the answer's token limit for an error.
func (o *OpenAI) limitWords() string {
	if o.opts.MaxTokens > 0 {
		return fmt.Sprintf("%d tokens", o.opts.MaxTokens)
	}
	return "the server's default"
}

// raiseWords says how to give the judge more room, given that it wrote
// wrote tokens: "raise the limit" left a user with no way to tell which.
// The flag helps only where it was the limit: hone-serve's --max-tokens is
// its default and its cap alike (a larger max_tokens is a 400), vLLM's
// default is the rest of its context, and a generation config's
// max_new_tokens (vLLM's or hone-serve's --generation-config auto) clamps
// a larger max_tokens, so a cut at the server's default, or below the
// flag, is the server's limit to raise.
func (o *OpenAI) raiseWords(wrote int64) string {
	const server = "raise the server's limit (hone-serve's --max-tokens, its default and cap alike; vLLM's context, --max-model-len, or its generation_config.json max_new_tokens)"
	switch {
	case o.opts.MaxTokens <= 0:
		return server + ", or, on a server whose default is below its cap, set --judge-max-tokens"
	case wrote > 0 && wrote < o.opts.MaxTokens:
		return fmt.Sprintf("fewer than --judge-max-tokens %d asked for, so the server cut it at a limit of its own: %s", o.opts.MaxTokens, server)
	}
	return "raise --judge-max-tokens (within the server's own cap, such as hone-serve's --max-tokens)"
}

// contextHint says what to do when the judge refuses a prompt as longer
// than its context: give --judge-context-tokens, or, given, lower it to
// the judge's real context (what was given is larger, or the count of
// the prompt's tokens falls short of the judge's).
func (o *OpenAI) contextHint() string {
	const tok = "--judge-tokenizer (the judge's tokenizer.json) where the estimate of 3 bytes a token falls short"
	switch {
	case o.opts.ContextTokens <= 0:
		return "the ruler prompt is longer than the judge's context: hone-score --judge-context-tokens N (the judge's context length) cuts it to fit, counting with " + tok
	case !o.opts.Tokenizer:
		return fmt.Sprintf("the ruler prompt fits --judge-context-tokens %d but not the judge's context: give the judge's context length or less, and count with %s", o.opts.ContextTokens, tok)
	}
	return fmt.Sprintf("the ruler prompt fits --judge-context-tokens %d, counted with --judge-tokenizer, but not the judge's context: give the judge's context length or less, and check that --judge-tokenizer is the judge's own", o.opts.ContextTokens)
}

// classify turns a client error into a judge Error, deciding whether a
// retry may help: rate limits, server errors and timeouts may pass;
// authentication, unknown models and bad requests will not, nor
// hone-serve's 500s for a sequence left with no token to choose (codes
// logits_not_finite and constraint_no_token: a judge model whose logits
// are NaN, or an answer schema it cannot follow, gives the same answer
// however often it is asked; retry.Answer). The error names the answer
// by its status and its body's code (retry.Label: logits_not_finite,
// model_not_found, as collect's model calls do) and the server's message.
func classify(err error, callCtx context.Context, timeout time.Duration, usage Usage, model, contextHint string, maxTokens int64) error {
	// A transport error names the URL: its token user masked (ShownErr).
	err = urlmask.ShownErr(err)
	var apiErr *openai.Error
	switch {
	case errors.As(err, &apiErr):
		status := apiErr.StatusCode
		// The server's own message says what to fix (an unknown model, an
		// unsupported response_format); it never holds the key.
		msg := err.Error()
		if apiErr.Message != "" {
			msg = apiErr.Message
			if apiErr.Param != "" {
				msg += " (param " + apiErr.Param + ")"
			}
		}
		if status == http.StatusNotFound {
			msg += providerHint(model)
		}
		if status == http.StatusBadRequest && maxTokens > 0 && (apiErr.Param == "max_completion_tokens" || apiErr.Param == "max_tokens") {
			// The server names the request's field; the user set it with
			// hone-score's flag, which is what to change.
			msg += fmt.Sprintf(": hone-score asked for it with --judge-max-tokens %d; give one within the server's cap, or raise the cap", maxTokens)
		}
		if retry.ContextFull(status, apiErr.Code, apiErr.Type, apiErr.Message) {
			// The server asks to shorten the messages, which a scorer
			// cannot do; the flags that cut the prompt can.
			msg += ": " + contextHint
		}
		where := "the judge"
		if apiErr.Request != nil && apiErr.Request.URL != nil {
			// Shown, not Redacted: a token given as the userinfo's user is
			// masked too.
			where = urlmask.Shown(apiErr.Request.URL.String())
		}
		return &Error{Kind: "http", Retryable: retry.Answer(status, apiErr.Code), Status: status, Usage: usage, RetryAfter: serverWait(apiErr.Response),
			Err: fmt.Errorf("%s from %s: %s", retry.Label(status, apiErr.Code), where, msg)}
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		return &Error{Kind: "timeout", Retryable: true, Usage: usage, Err: fmt.Errorf("no answer within %v (--judge-timeout, each call; a slow judge, such as a small model on CPU, needs more): %w", timeout, err)}
	default:
		return &Error{Kind: "transport", Retryable: true, Usage: usage, Err: err}
	}
}

// MaxServerWait caps the wait a server's Retry-After may impose on one
// retry: a group waiting holds one of --concurrency judge slots, and a
// server that asks for hours is better answered by failing the group
// (under --on-judge-error) after the retries than by a stalled run.
const MaxServerWait = time.Minute

// serverWait returns the pause an error answer asks for before the next
// call (retry.ServerWait), capped at MaxServerWait; 0 without an answer.
func serverWait(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	return retry.ServerWait(resp.Header, time.Now(), MaxServerWait)
}
