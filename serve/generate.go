package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/serve/engine"
)

// choiceOut gathers one choice's output.
type choiceOut struct {
	text   strings.Builder
	ids    []int32
	lps    []float32
	tops   [][]engine.TokenLogprob
	finish string
}

func (c *choiceOut) add(ev engine.Event) {
	if ev.Token >= 0 {
		c.ids = append(c.ids, ev.Token)
		c.lps = append(c.lps, ev.Logprob)
		c.tops = append(c.tops, ev.Top)
	}
	c.text.WriteString(ev.Text)
	if ev.Finish != "" {
		c.finish = ev.Finish
	}
}

// params turns the shared request fields into sampling parameters.
// promptParam names the field that holds the prompt (messages or prompt),
// for the 400 of a prompt that leaves no room in the context; allowZero
// permits max_tokens 0 (an echo-only completion).
func (s *Server) params(f *samplingFields, promptParam string, promptLen int, allowZero bool) (engine.Params, int, error) {
	p := engine.Params{Temperature: 1, TopP: 1, SkipSpecial: true, IgnoreEOS: f.IgnoreEOS, IncludeStop: f.IncludeStopStrInOutput}
	if f.StreamOptions != nil && !f.Stream {
		// As OpenAI and vLLM answer it: include_usage without a stream
		// would otherwise be silently ignored.
		return p, 0, badRequest("stream_options", "stream_options is only allowed when stream is true")
	}
	if f.Priority != 0 {
		// vLLM's answer, in its words, unless started with
		// --scheduling-policy priority: a client relying on the order
		// would otherwise be served in another.
		return p, 0, badRequest("priority", "Got priority %d but Priority scheduling is not enabled.", f.Priority)
	}
	n := 1
	if f.N != nil {
		n = *f.N
		if n < 1 || n > s.eng.MaxBatch() {
			return p, 0, badRequest("n", "n must be between 1 and %d, got %d", s.eng.MaxBatch(), n)
		}
	}
	if f.UseBeamSearch {
		// Sampled choices returned as beams would answer another request.
		return p, 0, badRequest("use_beam_search", "use_beam_search is not supported by this server, which samples; leave it out or false")
	}
	if g := f.guidedField(); g != "" {
		// Ignored, the answer would look constrained to a client that
		// relies on it (a judge's "yes" or "no") and hold anything.
		return p, 0, badRequest(g, "%s (vLLM's guided decoding) is not supported by this server; send response_format json_schema (or json_object), which chat and completions take, instead", g)
	}
	if len(f.LogitsProcessors) > 0 {
		return p, 0, badRequest("logits_processors", "logits_processors is not supported by this server, which runs no Python logits processors (as vLLM without --logits-processor-pattern); leave it out")
	}
	s.gen.apply(&p)
	if err := shapeParams(f, &p); err != nil {
		return p, 0, err
	}
	if len(f.LogitBias) > 0 {
		p.LogitBias = make(map[int32]float32, len(f.LogitBias))
		for key, b := range f.LogitBias {
			id, err := strconv.ParseInt(key, 10, 32)
			if err != nil || id < 0 || int(id) >= s.m.Config.Vocab {
				return p, 0, badRequest("logit_bias", "logit_bias key %q is not a token id of this model's vocabulary (0 to %d)", key, s.m.Config.Vocab-1)
			}
			if !(b >= -100 && b <= 100) {
				return p, 0, badRequest("logit_bias", "logit_bias of token %d must be between -100 and 100, got %v", id, b)
			}
			p.LogitBias[int32(id)] = float32(b)
		}
	}
	if f.Seed != nil {
		p.Seed, p.HasSeed = uint64(*f.Seed), true
	}
	if f.SkipSpecialTokens != nil {
		p.SkipSpecial = *f.SkipSpecialTokens
	}
	for _, st := range f.Stop {
		if st == "" {
			return p, 0, badRequest("stop", "stop strings must not be empty")
		}
	}
	if len(f.Stop) > 16 {
		return p, 0, badRequest("stop", "at most 16 stop strings, got %d", len(f.Stop))
	}
	p.Stop = f.Stop
	for i, id := range f.StopTokenIDs {
		if id == nil {
			// encoding/json decodes a null element into an int32 as 0,
			// which made token 0 a stop token.
			at := fmt.Sprintf("stop_token_ids[%d]", i)
			return p, 0, badRequest(at, "%s: expected a 32-bit integer, got null", at)
		}
		if *id < 0 || int(*id) >= s.m.Config.Vocab {
			return p, 0, badRequest("stop_token_ids", "stop token id %d outside the vocabulary", *id)
		}
		p.StopIDs = append(p.StopIDs, *id)
	}
	room := s.maxCtx - promptLen
	if room < 0 {
		return p, 0, s.contextError(promptParam, promptLen, false)
	}
	if room == 0 && !allowZero {
		return p, 0, badRequest(promptParam, "the prompt has %d tokens, the whole of the model's context of %d, which leaves none for the completion", promptLen, s.maxCtx)
	}
	mt := f.MaxCompletionTokens
	param := "max_completion_tokens"
	if mt == nil {
		mt, param = f.MaxTokens, "max_tokens"
	}
	if mt != nil && (*mt < 0 || (*mt == 0 && !allowZero)) {
		return p, 0, badRequest(param, "%s must be at least 1, got %d", param, *mt)
	}
	var err error
	if p.MaxTokens, err = s.maxTokens(mt, param, promptParam, promptLen, room, n); err != nil {
		return p, 0, err
	}
	if f.MinTokens != nil {
		// As vLLM bounds it: a choice cannot be made to run past its end.
		if *f.MinTokens < 0 || *f.MinTokens > p.MaxTokens {
			return p, 0, badRequest("min_tokens", "min_tokens must be between 0 and max_tokens (%d), got %d", p.MaxTokens, *f.MinTokens)
		}
		p.MinTokens = *f.MinTokens
	}
	return p, n, nil
}

// shapeParams sets in p the fields of f that shape the distribution drawn
// from (temperature, top_p, top_k, min_p and the penalties), refusing one
// out of its range with a 400 naming it. p holds the defaults already, so a
// generation_config.json temperature is raised to minTemperature too.
func shapeParams(f *samplingFields, p *engine.Params) error {
	if f.Temperature != nil {
		if *f.Temperature < 0 || *f.Temperature > 100 {
			return badRequest("temperature", "temperature must be between 0 and 100, got %v", *f.Temperature)
		}
		p.Temperature = *f.Temperature
	}
	if f.TopP != nil {
		if !(*f.TopP > 0 && *f.TopP <= 1) {
			return badRequest("top_p", "top_p must be in (0, 1], got %v", *f.TopP)
		}
		p.TopP = *f.TopP
	}
	if f.TopK != nil {
		if *f.TopK < -1 {
			return badRequest("top_k", "top_k must be -1 (off), 0 (off) or positive, got %d", *f.TopK)
		}
		p.TopK = max(*f.TopK, 0)
	}
	if f.RepetitionPenalty != nil {
		// vLLM's bound: it divides and multiplies logits by it.
		if !(*f.RepetitionPenalty > 0) {
			return badRequest("repetition_penalty", "repetition_penalty must be greater than 0 (1: off), got %v", *f.RepetitionPenalty)
		}
		p.RepetitionPenalty = *f.RepetitionPenalty
	}
	if f.MinP != nil {
		if !(*f.MinP >= 0 && *f.MinP <= 1) {
			return badRequest("min_p", "min_p must be between 0 and 1, got %v", *f.MinP)
		}
		p.MinP = *f.MinP
	}
	for _, pen := range []struct {
		name string
		v    *float64
		dst  *float64
	}{{"presence_penalty", f.PresencePenalty, &p.PresencePenalty}, {"frequency_penalty", f.FrequencyPenalty, &p.FrequencyPenalty}} {
		if pen.v != nil {
			if *pen.v < -2 || *pen.v > 2 {
				return badRequest(pen.name, "%s must be between -2 and 2, got %v", pen.name, *pen.v)
			}
			*pen.dst = *pen.v
		}
	}
	if p.Temperature > 0 && p.Temperature < minTemperature {
		// As vLLM's SamplingParams raises it: dividing logits by a tinier
		// temperature overflows, and a client that sent one expects vLLM's
		// answer, a draw at 0.01, not greedy nor a draw at its own value.
		p.Temperature = minTemperature
	}
	return nil
}

// minTemperature is vLLM's _MAX_TEMP, the least temperature above 0 that
// it samples at; only 0 itself is greedy there (engine.SamplingEps).
const minTemperature = 1e-2

// maxTokens is the request's max_tokens: mt, the field param names (0
// only where params allowed it), within the server's cap, the context
// left (room) and the KV cache budget for n choices; or, mt left out, the
// server's cap within both.
func (s *Server) maxTokens(mt *int, param, promptParam string, promptLen, room, n int) (int, error) {
	fit := s.eng.MaxTokensFit(promptLen, n)
	switch {
	case mt == nil && fit < 1:
		// Not even one token a choice fits: refused naming the prompt or
		// n, not in the engine's words with param null.
		return 0, s.kvBudgetError(param, promptParam, 1, promptLen, n)
	case mt == nil:
		// Within the KV budget too: the default is the server's, and a
		// default over the budget refused every request that left
		// max_tokens out (n choices of the cap's length each).
		if s.gen.maxTokens > 0 {
			return min(s.o.MaxTokens, s.gen.maxTokens, room, fit), nil
		}
		return min(s.o.MaxTokens, room, fit), nil
	case s.gen.maxTokens > 0 && *mt > s.gen.maxTokens:
		// generation_config.json's max_new_tokens caps every request, as
		// in vLLM, which answers with that many rather than a 400.
		// A 400 for the clamped value names the value the client sent:
		// "max_tokens=8" for a request of 10 named a number it never used.
		m := s.gen.maxTokens
		clamped := fmt.Sprintf("%s=%d, clamped to max_new_tokens %d of %s (--generation-config %s)", param, *mt, m, s.gen.src, s.o.GenerationConfig)
		if m > s.o.MaxTokens {
			return 0, badRequest(param, "%s, is more than this server's cap of %d (%s)", clamped, s.o.MaxTokens, capAdvice(param))
		}
		v, err := s.maxTokens(&m, param, promptParam, promptLen, room, n)
		if he, ok := errors.AsType[*httpError](err); ok {
			he.msg += " (" + clamped + ")"
		}
		return v, err
	case *mt > s.o.MaxTokens:
		return 0, badRequest(param, "%s=%d is more than this server's cap of %d (%s)", param, *mt, s.o.MaxTokens, capAdvice(param))
	case *mt > room:
		e := badRequest(param, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the %s, %d in the completion). Please reduce the length of the %s or completion.",
			s.maxCtx, promptLen+*mt, promptLen, promptParam, *mt, promptParam)
		e.code = "context_length_exceeded" // as contextError: the code and words clients read to shorten the request
		return 0, e
	case *mt > fit:
		return 0, s.kvBudgetError(param, promptParam, *mt, promptLen, n)
	}
	return *mt, nil
}

// kvBudgetError is the 400 for a max_tokens whose n choices do not fit
// the KV cache budget. It names the prompt (promptParam) when the prompt
// leaves no room for a completion, n when one choice would fit, the
// max_tokens field (param) otherwise, with how many would fit: refused
// here rather than by the engine's Check, so that the 400 names the field
// to change, in the API's words.
func (s *Server) kvBudgetError(param, promptParam string, maxTokens, promptLen, n int) error {
	holds := s.eng.MaxTokensFit(0, 1) // the budget, in tokens
	need := int64(n) * int64(promptLen+maxTokens)
	// A prompt that leaves no room for one completion token (none for an
	// echo with max_tokens 0) is the prompt's to shorten: lowering
	// max_tokens or n cannot make it fit.
	if least := min(maxTokens, 1); promptLen+least > holds {
		return badRequest(promptParam, "%d prompt tokens (in the %s) + %d completion tokens need %d tokens of KV cache; this server's KV cache holds %d tokens. Please reduce the length of the %s.",
			promptLen, promptParam, least, promptLen+least, holds, promptParam)
	}
	if n > 1 && maxTokens <= s.eng.MaxTokensFit(promptLen, 1) {
		return badRequest("n", "n=%d choices of %d prompt tokens + %s=%d need %d tokens of KV cache; this server's KV cache holds %d tokens. At most %d choices fit; lower n or %s.",
			n, promptLen, param, maxTokens, need, holds, holds/(promptLen+maxTokens), param)
	}
	return badRequest(param, "%s=%d with n=%d and %d prompt tokens needs %d tokens of KV cache; this server's KV cache holds %d tokens. At most %d fit this prompt at n=%d; lower %s.",
		param, maxTokens, n, promptLen, need, holds, max(s.eng.MaxTokensFit(promptLen, n), 0), n, param)
}

// encodePrompt tokenizes a prompt's text, giving up as soon as it cannot
// fit the model's context: a text far over it is refused by its length
// before any tokenizing, so a large body costs neither the time nor the
// memory of its tokens. param names the field for the 400.
// keep (truncateKeep; 0: none) cuts the prompt to its last keep tokens.
func (s *Server) encodePrompt(text string, addSpecial bool, param string, keep int) ([]int32, error) {
	if keep > 0 {
		return s.encodeTruncated(text, addSpecial, param, keep)
	}
	ids, err := s.ptok.Encode(text, addSpecial, s.maxCtx)
	var tl *tokenizer.TooLongError
	if errors.As(err, &tl) {
		return nil, s.contextError(param, tl.AtLeast, true)
	}
	if err != nil {
		return nil, err
	}
	// A token the model has no embedding for, written in the text, is
	// refused by name (tokenizer.PastVocabError) before the forward pass.
	if err := tokenizer.CheckVocab(s.tok, ids, s.m.Config.Vocab); err != nil {
		return nil, badRequest(param, "%s holds %v", param, err)
	}
	return toInt32(ids), nil
}

// truncateKeep reads truncate_prompt_tokens: how many tokens of the
// prompt to keep, 0 for the whole prompt. -1 (vLLM's) is the model's
// context; more than the context is a 400, as in vLLM, and so is 0 (which
// would leave no prompt) or below -1.
func (s *Server) truncateKeep(f *samplingFields) (int, error) {
	k := f.TruncatePromptTokens
	switch {
	case k == nil:
		return 0, nil
	case *k == -1:
		return s.maxCtx, nil
	case *k < 1:
		return 0, badRequest("truncate_prompt_tokens", "truncate_prompt_tokens must be -1 (the model's context) or at least 1, got %d", *k)
	case *k > s.maxCtx:
		return 0, badRequest("truncate_prompt_tokens", "truncate_prompt_tokens value (%d) is greater than the model's maximum context length (%d); please select a smaller truncation size", *k, s.maxCtx)
	}
	return *k, nil
}

// encodeTruncated is encodePrompt's keep: the whole text is tokenized (the
// body cap bounds it), then cut to its last keep tokens. Special tokens the
// tokenizer puts before the text (a BOS) stay, counted in keep, as the
// Hugging Face tokenizer vLLM calls truncates from the left.
func (s *Server) encodeTruncated(text string, addSpecial bool, param string, keep int) ([]int32, error) {
	ids := s.tok.Encode(text, addSpecial)
	if len(ids) > keep {
		lead := 0
		if addSpecial {
			// The tokens addSpecial put before the text, when it added
			// them there only.
			plain := s.tok.Encode(text, false)
			if n := len(ids) - len(plain); n > 0 && n < keep && slices.Equal(ids[n:], plain) {
				lead = n
			}
		}
		ids = append(ids[:lead:lead], ids[len(ids)-(keep-lead):]...)
	}
	if err := tokenizer.CheckVocab(s.tok, ids, s.m.Config.Vocab); err != nil {
		return nil, badRequest(param, "%s holds %v", param, err)
	}
	return toInt32(ids), nil
}

// contextError is the 400 for a prompt over the model's context, in the
// words of vLLM's (and OpenAI's code): tokens is the prompt's size, or a
// lower bound on it with atLeast.
func (s *Server) contextError(param string, tokens int, atLeast bool) error {
	size := fmt.Sprint(tokens)
	if atLeast {
		size = "at least " + size
	}
	e := badRequest(param, "This model's maximum context length is %d tokens. However, your request has %s input tokens. Please reduce the length of the %s.", s.maxCtx, size, param)
	e.code = "context_length_exceeded"
	return e
}

// submit queues a generation; the context carries the request deadline.
func (s *Server) submit(ctx context.Context, req *engine.Request) (*engine.Handle, error) {
	req.Ctx = ctx
	if s.forceOutput != nil && req.Constraint == nil {
		prompt, eos := req.Prompt, s.eosID()
		req.Constraint = func(choice int) engine.Constraint { return &forced{ids: s.forceOutput(prompt, choice), eos: eos} }
	}
	h, err := s.eng.Submit(req)
	if err != nil {
		return nil, submitError(err)
	}
	return h, nil
}

func (s *Server) eosID() int32 {
	if id, ok := s.tok.TokenID(s.tmpl.SpecialTokens()["eos_token"]); ok {
		return int32(id)
	}
	return 0
}

// collect waits for every choice of h to finish. A choice that fails
// fails the whole request at once: the handler returns, its context ends,
// and the engine drops the other choices at its next step instead of
// generating answers nobody reads (a stream ends the same way). An RL
// client wants the whole group or an error, not a group with a hole.
func (s *Server) collect(ctx context.Context, h *engine.Handle, n int, model string) ([]choiceOut, error) {
	outs := make([]choiceOut, n)
	t0 := time.Now()
	first := true
	for {
		evs, done, err := h.Next(ctx)
		if err != nil {
			return nil, genError(ctx, err)
		}
		for _, ev := range evs {
			if first && ev.Token >= 0 {
				s.met.ttft(time.Since(t0))
				first = false
			}
			if ev.Err != nil {
				return nil, s.seqError(ctx, ev.Err, model)
			}
			outs[ev.Choice].add(ev)
		}
		if done {
			break
		}
	}
	return outs, nil
}

// seqError maps the error that ended a sequence of model's to HTTP: a
// sequence left with no token to choose by noCandidate, the rest by
// genError.
func (s *Server) seqError(ctx context.Context, err error, model string) error {
	if errors.Is(err, engine.ErrNoCandidate) {
		return s.noCandidate(err, model)
	}
	return genError(ctx, err)
}

// The codes of a sequence left with no token to choose
// (engine.ErrNoCandidate), by cause.
const (
	codeLogitsNotFinite   = "logits_not_finite"
	codeConstraintNoToken = "constraint_no_token"
)

// noCandidate is the 500 of a sequence of model's left with no token to
// choose: a server-side fault that the same request cannot get past (the
// same weights give the same NaN), named in words a user can act on. The
// engine tells the model's cause (logits NaN, or −Inf everywhere: a
// diverged adapter, or a model whose activations overflow) from a
// constraint's (its mask left no token). Counted in /metrics by code;
// logged once per model and code, since a diverged adapter fails every
// request that uses it.
//
// vLLM has no defined answer for a row its masks empty (allowed_token_ids
// with bad_words, min_tokens or a structured output leaving no token after
// some drawn ones): its sampler's argmax over an all -inf (or NaN) row
// picks token 0, which goes out as if sampled, outside the allowlist
// (vllm-project/vllm#57986, open). An error is the clear answer here: the
// tokens so far are no complete output (finish "stop" would say they
// were, and a response_format document would not parse), and a 4xx would
// say the request's fields alone are at fault, where the tokens drawn (or
// the model's -Inf logits) had a part; only a first token that the
// request's fields leave none is knowable ahead, and that one is the 400
// of firstTokenLeft.
func (s *Server) noCandidate(err error, model string) error {
	var nc *engine.NoCandidateError
	if !errors.As(err, &nc) {
		nc = &engine.NoCandidateError{} // the bare sentinel: the model's cause
	}
	what := fmt.Sprintf("no token could be chosen for choice %d after %d generated tokens", nc.Choice, nc.Tokens)
	e := &httpError{status: http.StatusInternalServerError, typ: "server_error", code: codeLogitsNotFinite}
	switch {
	case nc.Constrained:
		e.code = codeConstraintNoToken
		e.msg = fmt.Sprintf("%s: the output constraint (response_format, tool_choice, allowed_token_ids or bad_words) left none for model %q: "+
			"it allowed no token, or the model gave -Inf to every token it allowed", what, model)
	case model == s.name:
		e.msg = fmt.Sprintf("%s: model %q gave NaN or -Inf logits to every token: its activations overflow "+
			"float32 (its weights are finite: the loader refuses NaN and infinities, so some are far too large); "+
			"check the model's weights", what, model)
	default:
		e.msg = fmt.Sprintf("%s: model %q gave NaN or -Inf logits to every token: the adapter has likely diverged "+
			"(a training step that blew up, leaving huge weights); serve an earlier step of its run (<run>@<step>)", what, model)
	}
	s.met.noCandidate(e.code)
	if _, logged := s.noTokenLogged.LoadOrStore(model+" "+e.code, true); !logged {
		s.log.Error("a sequence had no token to choose (logged once per model and code; /metrics counts them all)",
			"model", model, "code", e.code, "err", e.msg)
	}
	return e
}

// genError maps a failed generation to HTTP: 504 past the deadline, 503
// when the server stopped it, 499-like cancellation otherwise.
func genError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return &httpError{status: http.StatusGatewayTimeout, typ: "timeout", code: "timeout", msg: "the request ran past its deadline"}
	case errors.Is(err, engine.ErrClosed), errors.Is(err, engine.ErrQueueFull):
		return submitError(err)
	case errors.Is(err, context.Canceled):
		return &httpError{status: 499, typ: "cancelled", msg: "request cancelled"}
	}
	return fmt.Errorf("generation failed: %w", err)
}

// forced is the test hook's constraint: it allows exactly the next token of
// a fixed list, then the end-of-sequence token; an id outside the
// vocabulary allows no token at all.
type forced struct {
	ids []int32
	pos int
	eos int32
}

func (f *forced) Mask(logits []float32) {
	want := f.eos
	if f.pos < len(f.ids) {
		want = f.ids[f.pos]
	}
	for i := range logits {
		if int32(i) != want {
			logits[i] = float32(math.Inf(-1))
		}
	}
}

func (f *forced) Accept(id int32) error {
	if f.pos < len(f.ids) {
		if id != f.ids[f.pos] {
			return fmt.Errorf("forced output: got %d, want %d", id, f.ids[f.pos])
		}
		f.pos++
	}
	return nil
}

// capAdvice says both ways past the max_tokens cap: the client asks for
// less, or the server is started with a higher cap.
func capAdvice(param string) string {
	return "ask for a smaller " + param + ", or start hone-serve --max-tokens higher"
}
