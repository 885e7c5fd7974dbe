package serve

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/serve/engine"
)

// The OpenAI wire shapes hone-serve reads and writes, with vLLM's extras
// (top_k, return_token_ids, token_ids, prompt_token_ids,
// return_tokens_as_token_ids, chat_template_kwargs).
// Messages, their stream deltas and tool calls are format/chatmsg's.

// stringList is OpenAI's "string or array of strings" (stop).
type stringList []string

func (s *stringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*s = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stringList{one}
		return nil
	}
	if len(b) == 0 || b[0] != '[' {
		// A type error, so that readJSON names the field and the types.
		return &json.UnmarshalTypeError{Value: chatmsg.JSONKind(b), Type: reflect.TypeFor[stringList]()}
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
	// ContinuousUsageStats (vLLM's) has every chunk carry the usage so
	// far; as in vLLM it applies only with IncludeUsage.
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

// continuous says whether every chunk carries the usage so far.
func (o *streamOptions) continuous() bool {
	return o != nil && o.IncludeUsage && o.ContinuousUsageStats
}

// samplingFields are shared by chat and completions requests.
type samplingFields struct {
	Model               string     `json:"model"`
	N                   *int       `json:"n"`
	Temperature         *float64   `json:"temperature"`
	TopP                *float64   `json:"top_p"`
	TopK                *int       `json:"top_k"`
	MinP                *float64   `json:"min_p"`
	Seed                *int64     `json:"seed"`
	MaxTokens           *int       `json:"max_tokens"`
	MaxCompletionTokens *int       `json:"max_completion_tokens"`
	MinTokens           *int       `json:"min_tokens"` // vLLM's: no end of sequence or stop string before this many tokens
	Stop                stringList `json:"stop"`
	StopTokenIDs        []*int32   `json:"stop_token_ids"` // by pointer: a null element is an error, not token 0
	IgnoreEOS           bool       `json:"ignore_eos"`
	// IncludeStopStrInOutput (vLLM's) keeps the stop string or stop
	// token's text that ended a choice in its text.
	IncludeStopStrInOutput bool           `json:"include_stop_str_in_output"`
	PresencePenalty        *float64       `json:"presence_penalty"`
	FrequencyPenalty       *float64       `json:"frequency_penalty"`
	RepetitionPenalty      *float64       `json:"repetition_penalty"`
	Stream                 bool           `json:"stream"`
	StreamOptions          *streamOptions `json:"stream_options"`
	ReturnTokenIDs         bool           `json:"return_token_ids"`
	// ReturnTokensAsTokenIDs writes every logprobs token as
	// "token_id:<id>" (vLLM's extension), so that a client recovers the
	// exact ids sampled, which a token's text cannot always name.
	// By pointer: left out, the server's --return-tokens-as-token-ids
	// applies (tokensAsIDs).
	ReturnTokensAsTokenIDs *bool  `json:"return_tokens_as_token_ids"`
	SkipSpecialTokens      *bool  `json:"skip_special_tokens"`
	User                   string `json:"user"`
	// LogitBias maps token ids (as strings, OpenAI's shape) to a bias in
	// [−100, 100] added to their logits before the choice.
	LogitBias map[string]float64 `json:"logit_bias"`
	// AllowedTokenIDs (vLLM's) are the only tokens that may be chosen;
	// by pointer, so that a null element is an error, not token 0.
	AllowedTokenIDs []*int32 `json:"allowed_token_ids"`
	// BadWords (vLLM's) are words the output must not complete.
	BadWords []string `json:"bad_words"`
	// TruncatePromptTokens (vLLM's) keeps the prompt's last k tokens
	// (-1: the model's context).
	TruncatePromptTokens *int `json:"truncate_prompt_tokens"`
	// PromptLogprobs (vLLM's) asks for each prompt token's logprob and
	// rank and this many alternatives'.
	PromptLogprobs *int `json:"prompt_logprobs"`
	// UseBeamSearch is read only to refuse it; LengthPenalty, which only
	// vLLM's beam search reads, has nothing to change without it.
	UseBeamSearch bool     `json:"use_beam_search"`
	LengthPenalty *float64 `json:"length_penalty"`
	// vLLM's guided decoding is read only to refuse it (guidedField):
	// answered without, the output would be unconstrained. By any, so
	// that null is leaving it out.
	GuidedJSON        any `json:"guided_json"`
	GuidedChoice      any `json:"guided_choice"`
	GuidedRegex       any `json:"guided_regex"`
	GuidedGrammar     any `json:"guided_grammar"`
	StructuredOutputs any `json:"structured_outputs"`
	// LogitsProcessors (vLLM's: Python logits processors by qualified
	// name) is read only to refuse a non-empty list, as vLLM refuses it
	// without --logits-processor-pattern: this server runs no such code,
	// and answered without them the output would not be what was asked.
	LogitsProcessors []json.RawMessage `json:"logits_processors"`
	// Priority (vLLM's) is read only to refuse one other than 0: this
	// server schedules first come first served, as vLLM's default policy.
	Priority int `json:"priority"`
}

// guidedField names the first of vLLM's guided-decoding fields f sets
// ("" when none).
func (f *samplingFields) guidedField() string {
	for _, g := range []struct {
		name string
		v    any
	}{{"guided_json", f.GuidedJSON}, {"guided_choice", f.GuidedChoice}, {"guided_regex", f.GuidedRegex},
		{"guided_grammar", f.GuidedGrammar}, {"structured_outputs", f.StructuredOutputs}} {
		if g.v != nil {
			return g.name
		}
	}
	return ""
}

// tokensAsIDs says whether logprobs tokens are named "token_id:<id>": the
// request's return_tokens_as_token_ids when it sends one, else the
// server's default def (vLLM's --return-tokens-as-token-ids).
func (f *samplingFields) tokensAsIDs(def bool) bool {
	if f.ReturnTokensAsTokenIDs != nil {
		return *f.ReturnTokensAsTokenIDs
	}
	return def
}

type responseFormat struct {
	Type       string `json:"type"` // text, json_object, json_schema
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
}

type chatRequest struct {
	samplingFields
	Messages            []chatmsg.Message `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	Logprobs            bool              `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	ResponseFormat      *responseFormat   `json:"response_format"`
	ChatTemplateKwargs  map[string]any    `json:"chat_template_kwargs"`
	AddGenerationPrompt *bool             `json:"add_generation_prompt"`
	// ContinueFinalMessage (vLLM's) has the model continue the last
	// message instead of starting a new one.
	ContinueFinalMessage bool `json:"continue_final_message"`
	// AddSpecialTokens (vLLM's; false for chat, whose template writes
	// them) has the tokenizer add its special tokens, a BOS, to the
	// rendered prompt.
	AddSpecialTokens bool `json:"add_special_tokens"`
	// Echo (vLLM's) begins each choice's content with the last message's
	// when that message is the assistant's.
	Echo bool `json:"echo"`
	// ChatTemplate (vLLM's) is read only to refuse it (requestTemplate):
	// rendered with the model's template instead, the prompt would not be
	// the one the client wrote. By any, so that null is leaving it out.
	ChatTemplate any `json:"chat_template"`
}

// requestTemplate refuses a chat template sent with the request, in
// chat_template or as chat_template_kwargs' chat_template (which vLLM
// passes to apply_chat_template as the template itself), with the 400
// vLLM gives without --trust-request-chat-template: this server renders
// the model's own template only, and a prompt rendered with it would not
// be the one the client asked for.
func (req *chatRequest) requestTemplate() error {
	field := ""
	switch {
	case req.ChatTemplate != nil:
		field = "chat_template"
	case req.ChatTemplateKwargs["chat_template"] != nil:
		field = "chat_template_kwargs"
	default:
		return nil
	}
	return badRequest(field, "%s: a chat template passed with the request is refused; this server renders the model's own chat template (as vLLM without --trust-request-chat-template)", field)
}

type completionRequest struct {
	samplingFields
	Prompt   json.RawMessage `json:"prompt"`
	Echo     bool            `json:"echo"`
	Logprobs *int            `json:"logprobs"`
	// ResponseFormat constrains the text as chat's does (vLLM reads it
	// on completions too).
	ResponseFormat *responseFormat `json:"response_format"`
	// AddSpecialTokens (vLLM's; true unless sent) has the tokenizer add
	// its special tokens, a BOS, to a text prompt.
	AddSpecialTokens *bool `json:"add_special_tokens"`
	// Suffix and BestOf are read only to refuse what would need them.
	Suffix *string `json:"suffix"`
	BestOf *int    `json:"best_of"`
}

type usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *promptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// promptTokensDetails is sent when prefix caching is on, as OpenAI does.
type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// minWireLogprob is the lowest logprob the API writes. JSON has no −Inf or
// NaN, and Go's encoder refuses them with the whole response, while a
// token can have probability 0 (a row holding +Inf gives every finite
// token −Inf: kernels.RowChooser) or a broken row give NaN; vLLM's OpenAI
// server writes −9999 for such a token, and so does this one.
const minWireLogprob = -9999

// wireLogprob is v as the API writes it: −Inf, NaN and values below
// minWireLogprob become minWireLogprob, +Inf (no logprob is) becomes 0.
func wireLogprob(v float32) float32 {
	switch {
	case !(v >= minWireLogprob):
		return minWireLogprob
	case v > math.MaxFloat32:
		return 0
	}
	return v
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type tokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float32      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type chatLogprobs struct {
	Content []tokenLogprob `json:"content"`
}

type chatChoice struct {
	Index        int              `json:"index"`
	Message      *chatmsg.Message `json:"message,omitempty"`
	Delta        *chatmsg.Delta   `json:"delta,omitempty"`
	Logprobs     *chatLogprobs    `json:"logprobs"`
	FinishReason *string          `json:"finish_reason"`
	TokenIDs     []int32          `json:"token_ids,omitempty"`
}

type chatResponse struct {
	ID             string       `json:"id"`
	Object         string       `json:"object"`
	Created        int64        `json:"created"`
	Model          string       `json:"model"`
	Choices        []chatChoice `json:"choices"`
	Usage          *usage       `json:"usage,omitempty"`
	PromptTokenIDs []int32      `json:"prompt_token_ids,omitempty"`
	// PromptLogprobs is vLLM's prompt_logprobs: null for the first token,
	// then token id → logprob, rank and text.
	PromptLogprobs []map[string]promptLogprob `json:"prompt_logprobs,omitempty"`
}

type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float32           `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionChoice struct {
	Index          int                        `json:"index"`
	Text           string                     `json:"text"`
	Logprobs       *completionLogprobs        `json:"logprobs"`
	FinishReason   *string                    `json:"finish_reason"`
	TokenIDs       []int32                    `json:"token_ids,omitempty"`
	PromptTokenIDs []int32                    `json:"prompt_token_ids,omitempty"`
	PromptLogprobs []map[string]promptLogprob `json:"prompt_logprobs,omitempty"` // as chatResponse's
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	Root    string `json:"root,omitempty"`
	Parent  string `json:"parent,omitempty"`
	// MaxModelLen is the context a prompt and its completion share, as
	// vLLM's model card gives it, so that a client can size its prompts
	// and max_tokens before a 400 tells it. An adapter shares the base
	// model's.
	MaxModelLen int `json:"max_model_len"`
}

type modelList struct {
	Object string       `json:"object"`
	Data   []modelEntry `json:"data"`
}

// apiError is OpenAI's error object.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
}

type errorBody struct {
	Error apiError `json:"error"`
}

// usageSoFar is the usage of a stream after completion tokens: that of
// the last usage chunk.
func (s *Server) usageSoFar(h *engine.Handle, prompt, completion int) *usage {
	u := s.usage(h, prompt)
	u.CompletionTokens, u.TotalTokens = completion, prompt+completion
	return &u
}

// continuousUsage is the usage every chunk carries with
// continuous_usage_stats. It names no cached tokens, as vLLM's does not:
// the first chunk is sent before the request started, when the prefix
// cache has not been looked up, and would say 0 where the last usage
// chunk says how many were reused.
func continuousUsage(prompt, completion int) *usage {
	return &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// usage starts the usage of a request with prompt tokens: with prefix
// caching on, it says how many of them came from the cache.
func (s *Server) usage(h *engine.Handle, prompt int) usage {
	u := usage{PromptTokens: prompt, TotalTokens: prompt}
	if !s.o.DisablePrefixCaching {
		u.PromptTokensDetails = &promptTokensDetails{CachedTokens: h.CachedTokens()}
	}
	return u
}
