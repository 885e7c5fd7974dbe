package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/trajectory"
	"github.com/hone-rl/hone/serve/constrain"
	"github.com/hone-rl/hone/serve/engine"
)

// toolMode is what tool_choice asks for.
type toolMode struct {
	parse  bool                       // parse tool calls out of the output
	force  bool                       // required or a named function: the output must be a call
	name   string                     // a named function (tool_choice {"type":"function",...})
	names  map[string]bool            // the functions offered
	params map[string]json.RawMessage // their parameter schemas
	strict map[string]bool            // those with "strict": true
	// single is parallel_tool_calls false: a message holds at most one
	// call, the first the model wrote (as OpenAI's API and vLLM answer).
	single bool
}

// toolNames returns the function names of OpenAI tool definitions, their
// parameter schemas and which ask for "strict": true.
func toolNames(tools []json.RawMessage) (names map[string]bool, params map[string]json.RawMessage, strict map[string]bool) {
	names, params, strict = map[string]bool{}, map[string]json.RawMessage{}, map[string]bool{}
	for _, raw := range tools {
		type def struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
			Strict     json.RawMessage `json:"strict"` // read as true or not, so that a stray value loses no tool
		}
		var t struct {
			def
			Function def `json:"function"`
		}
		if json.Unmarshal(raw, &t) == nil {
			d := t.Function
			if d.Name == "" {
				d = t.def
			}
			if d.Name != "" {
				names[d.Name], params[d.Name], strict[d.Name] = true, d.Parameters, bytes.Equal(bytes.TrimSpace(d.Strict), []byte("true"))
			}
		}
	}
	return names, params, strict
}

// toolCallFormat says how the model's template asks for calls: "hermes"
// (<tool_call>{"name", "arguments"}</tool_call>), "llama" (bare
// {"name", "parameters"}) or "" when the template shows neither.
func (s *Server) toolCallFormat() string {
	var all strings.Builder
	for _, n := range s.tmpl.Names() {
		all.WriteString(s.tmpl.Source(n))
	}
	src := all.String()
	switch {
	case strings.Contains(src, "<tool_call>"):
		return "hermes"
	case strings.Contains(src, `"parameters"`):
		return "llama"
	}
	return ""
}

// forceToolCall returns the constraint that makes the output one call in
// the template's format: of the named function, or of any offered one for
// "required" (vLLM's anyOf over the tools, told apart by the name, which
// the call writes first). Each function's arguments follow its parameter
// schema when constrain supports it and it allows only objects; else any
// object, or for a function with "strict": true, a 400 naming the keyword
// constrain lacks (strict asks for the schema to be followed exactly).
// With a nil constraint and nil error the call is not forced.
func (s *Server) forceToolCall(tm toolMode) (func(int) engine.Constraint, error) {
	format := s.toolCallFormat()
	if format == "" {
		return nil, nil
	}
	argKey, prefix, suffix := "arguments", "<tool_call>\n", "\n</tool_call>"
	if format == "llama" {
		argKey, prefix, suffix = "parameters", "", ""
	}
	names := []string{tm.name}
	if tm.name == "" {
		names = slices.Sorted(maps.Keys(tm.names))
	}
	var cases []constrain.Case
	for _, n := range names {
		args, err := argsSchema(n, tm.params[n], tm.strict[n])
		if err != nil {
			return nil, err
		}
		name, _ := json.Marshal(n)
		cases = append(cases, constrain.Case{Prefix: fmt.Sprintf(`{"name":%s,%q:`, name, argKey), Value: args, Suffix: "}"})
	}
	schema, err := constrain.Tagged(cases)
	if err != nil {
		s.log.Warn("tool_choice: cannot build the call schema; not forcing", "err", err)
		return nil, nil
	}
	return func(int) engine.Constraint { return constrain.NewWrapped(s.cvocab, s.eos, prefix, schema, suffix) }, nil
}

// argsSchema is the schema a forced call of function name writes its
// arguments in: its parameters when constrain supports them and they allow
// only objects, else any object (parameters such as {} or {"description": …}
// compile to any value, and a call's arguments must be an object). For a
// strict function, parameters constrain cannot read are a 400.
func argsSchema(name string, params json.RawMessage, strict bool) (*constrain.Schema, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		return constrain.Object(), nil
	}
	ps, err := constrain.Compile(params)
	if err != nil {
		if strict {
			return nil, badRequest("tools", "function %q has \"strict\": true, but its parameters cannot be enforced: %v", name, err)
		}
		return constrain.Object(), nil
	}
	if !objectOnly(ps) {
		return constrain.Object(), nil
	}
	return ps, nil
}

// objectOnly reports whether every document of s is a JSON object: a call's
// arguments must be one, and parameters such as {} or {"description": …}
// compile to any value, which let a forced call's arguments be 5 or "x".
func objectOnly(s *constrain.Schema) bool {
	st := s.Start()
	for b := range 256 {
		if st.Allowed([]byte{byte(b)}) != (b == '{') {
			return false
		}
	}
	return true
}

// WarningHeader carries hone-serve's warnings about a request it answered
// anyway, such as tools its model cannot call.
const WarningHeader = "X-Hone-Warning"

// checkToolSupport handles a request with tools when the template shows no
// tool-call markup (toolCallFormat ""): the model is not shown the tools
// in a form it was taught, and cannot be made to call. Forcing a call is
// refused (400, code tools_unsupported); otherwise the request is answered
// (calls that happen to be in the text are still parsed) with the
// WarningHeader, and the log says so once per served model, so that a
// plain-text answer is not mistaken for a model that chose not to call.
func (s *Server) checkToolSupport(w http.ResponseWriter, tm toolMode, modelName string) error {
	if s.toolCallFormat() != "" {
		return nil
	}
	const why = "the model's chat template has no tool-call format (neither Hermes <tool_call> nor Llama JSON)"
	if tm.force {
		return &httpError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "tools_unsupported", param: "tool_choice",
			msg: fmt.Sprintf("%s: tool_choice cannot force a call of model %q; serve a model whose template supports tools", why, modelName)}
	}
	w.Header().Add(WarningHeader, "tools ignored: "+why+"; expect a plain-text answer")
	if _, warned := s.toolsWarned.LoadOrStore(modelName, true); !warned {
		s.log.Warn("requests send tools, but "+why+": expect plain-text answers", "model", modelName)
	}
	return nil
}

func parseToolChoice(raw json.RawMessage, haveTools bool) (toolMode, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return toolMode{parse: haveTools}, nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		switch str {
		case "none":
			return toolMode{}, nil
		case "auto", "required":
			if !haveTools {
				return toolMode{}, badRequest("tool_choice", "tool_choice %q needs tools", str)
			}
			return toolMode{parse: true, force: str == "required"}, nil
		}
		return toolMode{}, badRequest("tool_choice", "tool_choice %q: want none, auto, required or a function", str)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Function.Name == "" {
		return toolMode{}, badRequest("tool_choice", "tool_choice: want a string or {\"type\":\"function\",\"function\":{\"name\":…}}")
	}
	if !haveTools {
		return toolMode{}, badRequest("tool_choice", "tool_choice names %q but no tools were given", named.Function.Name)
	}
	return toolMode{parse: true, force: true, name: named.Function.Name}, nil
}

// responseFormat returns the per-choice constraint response_format asks
// for (nil for text): json_object any JSON object, json_schema a document
// of the schema (serve/constrain; unsupported keywords are a 400).
func (s *Server) responseFormat(rf *responseFormat) (func(int) engine.Constraint, error) {
	if rf == nil || rf.Type == "" || rf.Type == "text" {
		return nil, nil
	}
	var schema *constrain.Schema
	switch rf.Type {
	case "json_object":
		schema = constrain.Object()
	case "json_schema":
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
			return nil, badRequest("response_format", "json_schema needs json_schema.schema")
		}
		var err error
		if schema, err = constrain.Compile(rf.JSONSchema.Schema); err != nil {
			return nil, badRequest("response_format", "json_schema: %v", err)
		}
	default:
		return nil, badRequest("response_format", "response_format type %q: want text, json_object or json_schema", rf.Type)
	}
	return func(int) engine.Constraint { return constrain.NewJSON(s.cvocab, s.eos, schema) }, nil
}

// chatOnlyParams adds to p the fields only chat requests have
// (logprobs, top_logprobs), and refuses min_tokens under an output
// constraint (constrained).
func chatOnlyParams(req *chatRequest, p *engine.Params, constrained bool) error {
	if req.TopLogprobs != nil {
		if *req.TopLogprobs < 0 || *req.TopLogprobs > 20 {
			return badRequest("top_logprobs", "top_logprobs must be between 0 and 20, got %d", *req.TopLogprobs)
		}
		if !req.Logprobs && *req.TopLogprobs > 0 {
			return badRequest("top_logprobs", "top_logprobs needs logprobs: true")
		}
		p.TopLogprobs = *req.TopLogprobs
	}
	p.Logprobs = req.Logprobs
	return minTokensConstrained(p, constrained, `response_format or tool_choice "required" or naming a function`)
}

// minTokensConstrained refuses min_tokens under an output constraint
// (constrained; constraints names what the route constrains with, for the
// 400): a complete document allows only its end, so holding that back
// would leave the choice no token (a 500), not a longer answer.
func minTokensConstrained(p *engine.Params, constrained bool, constraints string) error {
	if constrained && p.MinTokens > 0 {
		return badRequest("min_tokens", "min_tokens cannot be combined with %s: the constrained output ends when its document does", constraints)
	}
	return nil
}

// chatConstraint reads a chat request's tool_choice and response_format:
// the tool mode, and the per-choice constraint on the output (nil: none),
// a forced call's or response_format's.
func (s *Server) chatConstraint(w http.ResponseWriter, req *chatRequest, modelName string) (toolMode, func(int) engine.Constraint, error) {
	if req.Tools != nil && len(req.Tools) == 0 {
		// "tools": [] (not left out, not null): vLLM and OpenAI refuse it
		// rather than read it as no tools, so a client that sends it learns
		// here, not only from another server.
		return toolMode{}, nil, badRequest("tools", "'tools' must not be an empty array; give at least one tool or leave the field out")
	}
	tm, err := parseToolChoice(req.ToolChoice, len(req.Tools) > 0)
	if err != nil {
		return tm, nil, err
	}
	if len(req.Tools) > 0 {
		if err := s.checkToolSupport(w, tm, modelName); err != nil {
			return tm, nil, err
		}
	}
	tm.names, tm.params, tm.strict = toolNames(req.Tools)
	tm.single = req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	if tm.name != "" && !tm.names[tm.name] {
		return tm, nil, badRequest("tool_choice", "tool_choice names %q, which is not among the tools", tm.name)
	}
	cons, err := s.responseFormat(req.ResponseFormat)
	if err != nil {
		return tm, nil, err
	}
	if tm.force {
		if cons != nil {
			choice := `"required"`
			if tm.name != "" {
				choice = fmt.Sprintf("naming the function %q", tm.name)
			}
			return tm, nil, badRequest("response_format", "response_format cannot be combined with tool_choice %s: both constrain the output", choice)
		}
		if cons, err = s.forceToolCall(tm); err != nil {
			return tm, nil, err
		}
	}
	return tm, cons, nil
}

// withMaxTokens makes the JSON documents of constraint cons (nil: none)
// end within maxTokens, so a choice stops with a complete document instead
// of being cut mid-string.
func withMaxTokens(cons func(int) engine.Constraint, maxTokens int) func(int) engine.Constraint {
	if cons == nil {
		return nil
	}
	return func(i int) engine.Constraint {
		c := cons(i)
		if j, ok := c.(*constrain.JSON); ok {
			j.WithMaxTokens(maxTokens)
		}
		return c
	}
}

// chatRun serves POST /v1/chat/completions for req (jsonHandler decoded it).
func (s *Server) chatRun(w http.ResponseWriter, r *http.Request, req *chatRequest) error {
	held, modelName, err := s.holdModel(req.Model)
	if err != nil {
		return err
	}
	defer held.release()
	if len(req.Messages) == 0 {
		return badRequest("messages", "messages must not be empty")
	}
	if err := checkMessages(req.Messages); err != nil {
		return err
	}
	if err := req.requestTemplate(); err != nil {
		return err
	}
	tm, cons, err := s.chatConstraint(w, req, modelName)
	if err != nil {
		return err
	}
	agp := true
	if req.AddGenerationPrompt != nil {
		agp = *req.AddGenerationPrompt
	}
	if req.ContinueFinalMessage && agp {
		// As vLLM answers it, whose add_generation_prompt is true unless
		// the request sets it false: the two ask for different prompts.
		return badRequest("add_generation_prompt", "continue_final_message needs add_generation_prompt false (true unless sent): the one continues the last message, the other starts a new one")
	}
	text, err := s.renderPrompt(r.Context(), chattemplate.Input{Messages: req.Messages, Tools: req.Tools, AddGenerationPrompt: agp,
		ContinueFinalMessage: req.ContinueFinalMessage, Kwargs: req.ChatTemplateKwargs})
	if err != nil {
		return err
	}
	if s.rendered != nil {
		s.rendered(r.Context())
	}
	keep, err := s.truncateKeep(&req.samplingFields)
	if err != nil {
		return err
	}
	prompt, err := s.encodePrompt(text, req.AddSpecialTokens, "messages", keep)
	if err != nil {
		return err
	}
	p, n, err := s.params(&req.samplingFields, "messages", len(prompt), false)
	if err != nil {
		return err
	}
	if err := chatOnlyParams(req, &p, cons != nil); err != nil {
		return err
	}
	ctx := r.Context() // the request's deadline, from its arrival (Handler)
	// Every field is read before the prompt is scored: a request that
	// can only be a 400 must cost no forward, nor be told to retry (429).
	if cons, err = s.filterTokens(&req.samplingFields, &p, withMaxTokens(cons, p.MaxTokens)); err != nil {
		return err
	}
	plk, wantPL, err := promptLogprobsK(&req.samplingFields, s.m.Config.Vocab)
	if err != nil {
		return err
	}
	var promptLPs []map[string]promptLogprob
	if wantPL { // scored first: a failure here costs no generation
		sc, err := s.scoreRequestPrompt(ctx, prompt, held, n, "messages", plk)
		if err != nil {
			return err
		}
		promptLPs = s.promptLogprobList(prompt, sc, plk)
	}
	ereq := &engine.Request{Prompt: prompt, N: n, Params: p, Constraint: cons}
	held.handTo(ereq)
	h, err := s.submit(ctx, ereq)
	if err != nil {
		return err
	}
	id, created := newID("chatcmpl-"), time.Now().Unix()
	if req.Stream {
		return s.chatStream(ctx, w, req, h, n, prompt, tm, id, created, modelName)
	}
	outs, err := s.collect(ctx, h, n, modelName)
	if err != nil {
		return err
	}
	resp := chatResponse{ID: id, Object: "chat.completion", Created: created, Model: modelName, PromptLogprobs: promptLPs}
	if req.ReturnTokenIDs {
		resp.PromptTokenIDs = prompt
	}
	u := s.usage(h, len(prompt))
	for i := range outs {
		o := &outs[i]
		u.CompletionTokens += len(o.ids)
		msg, finish := s.chatMessage(chatRole(req), o.text.String(), o.finish, tm)
		if echo := chatEcho(req); echo != "" {
			msg.Content, msg.ContentJSON = echo+msg.Content, nil
		}
		ch := chatChoice{Index: i, Message: msg, FinishReason: &finish}
		if req.Logprobs {
			ch.Logprobs = &chatLogprobs{Content: s.tokenLogprobs(o.ids, o.lps, o.tops, req.tokensAsIDs(s.o.ReturnTokensAsTokenIDs))}
		}
		if req.ReturnTokenIDs {
			ch.TokenIDs = nonNil(o.ids)
		}
		resp.Choices = append(resp.Choices, ch)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	resp.Usage = &u
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// chatEcho is the text vLLM's echo begins each choice's content with: the
// last message's content when its role is the response's (chatRole; a
// list of parts as its text parts joined by newlines, as vLLM joins them),
// else "": a prompt without the generation prompt ends in that message
// and the answer continues it, whatever its role.
func chatEcho(req *chatRequest) string {
	if !req.Echo || len(req.Messages) == 0 {
		return ""
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != chatRole(req) {
		return ""
	}
	if len(last.ContentJSON) == 0 {
		return last.Content
	}
	text, _ := chatmsg.ContentLines(last.ContentJSON) // checkMessages read it already
	return text
}

// chatRole is the role of a chat answer, as vLLM's get_chat_request_role
// gives it: the assistant's after the generation prompt, and without it
// the last message's, which the answer continues (a client appending the
// answer to the conversation then continues that message, not a new
// assistant turn).
func chatRole(req *chatRequest) string {
	if req.AddGenerationPrompt == nil || *req.AddGenerationPrompt || len(req.Messages) == 0 {
		return "assistant"
	}
	return req.Messages[len(req.Messages)-1].Role
}

// chatMessage builds the answer's message (of role chatRole), with tool
// calls parsed out when tools are in play; a message of tool calls alone
// has null content.
func (s *Server) chatMessage(role, text, finish string, tm toolMode) (*chatmsg.Message, string) {
	msg := &chatmsg.Message{Role: role, Content: text}
	if !tm.parse {
		return msg, finish
	}
	content, calls := parseToolCalls(text, tm.names)
	if len(calls) == 0 {
		return msg, finish
	}
	if tm.single {
		calls = calls[:1]
	}
	for _, c := range calls {
		msg.ToolCalls = append(msg.ToolCalls, chatmsg.ToolCall{ID: newID("call_"), Type: "function", Name: c.Name, Arguments: c.Arguments})
	}
	msg.Content = content
	if content == "" {
		msg.ContentJSON = json.RawMessage("null")
	}
	if tm.name != "" {
		// A call forced by name keeps the engine's finish ("stop"), as
		// OpenAI's API and vLLM report it; auto and required say
		// "tool_calls".
		return msg, finish
	}
	return msg, "tool_calls"
}

func (s *Server) tokenString(id int32) (string, []int) {
	b, _ := s.tok.TokenBytes(int(id))
	return string(b), bytesOf(string(b))
}

// tokenLogprobs are chat logprobs of the tokens ids. With asIDs (the
// request's return_tokens_as_token_ids) each token is named by
// trajectory.LogprobTokenName; bytes are then as vLLM writes them: the
// sampled token's are still its text's, an alternative's are those of its
// "token_id:<id>" string.
func (s *Server) tokenLogprobs(ids []int32, lps []float32, tops [][]engine.TokenLogprob, asIDs bool) []tokenLogprob {
	out := make([]tokenLogprob, len(ids))
	for i, id := range ids {
		t, b := s.tokenString(id)
		if asIDs {
			t = trajectory.LogprobTokenName(id)
		}
		out[i] = tokenLogprob{Token: t, Logprob: wireLogprob(lps[i]), Bytes: b, TopLogprobs: []topLogprob{}}
		for _, tl := range tops[i] {
			tt, tb := s.tokenString(tl.ID)
			if asIDs {
				tt = trajectory.LogprobTokenName(tl.ID)
				tb = bytesOf(tt)
			}
			out[i].TopLogprobs = append(out[i].TopLogprobs, topLogprob{Token: tt, Logprob: wireLogprob(tl.Logprob), Bytes: tb})
		}
	}
	return out
}

// bytesOf is the bytes field of text t.
func bytesOf(t string) []int {
	out := make([]int, len(t))
	for i := range len(t) {
		out[i] = int(t[i])
	}
	return out
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func toInt32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// chatStream writes the output as server-sent events, one chunk per token
// (per choice). With tools in play a choice's text is held until it ends,
// because only the whole output tells content from tool calls.
func (s *Server) chatStream(ctx context.Context, w http.ResponseWriter, req *chatRequest, h *engine.Handle, n int, prompt []int32, tm toolMode, id string, created int64, modelName string) error {
	sse := newSSE(w)
	completion := 0
	chunk := func(choices []chatChoice, u *usage, first bool) {
		if u == nil && req.StreamOptions.continuous() {
			u = continuousUsage(len(prompt), completion)
		}
		c := chatResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: modelName, Choices: choices, Usage: u}
		if first && req.ReturnTokenIDs {
			c.PromptTokenIDs = prompt
		}
		if choices == nil {
			c.Choices = []chatChoice{}
		}
		sse.send(c)
	}
	echo := chatEcho(req) // "" unless asked for
	var firsts []chatChoice
	for i := range n {
		firsts = append(firsts, chatChoice{Index: i, Delta: &chatmsg.Delta{Role: chatRole(req), Content: &echo}})
	}
	chunk(firsts, nil, true)
	held := make([]choiceOut, n)
	t0, first := time.Now(), true
	for {
		evs, done, err := h.Next(ctx)
		if err != nil {
			sse.sendError(genError(ctx, err))
			return nil
		}
		for _, ev := range evs {
			if ev.Err != nil {
				sse.sendError(s.seqError(ctx, ev.Err, modelName))
				return nil
			}
			if ev.Token >= 0 {
				completion++
				if first {
					s.met.ttft(time.Since(t0))
					first = false
				}
			}
			ch := chatChoice{Index: ev.Choice, Delta: &chatmsg.Delta{}}
			text := ev.Text
			if tm.parse {
				held[ev.Choice].add(ev)
				text = ""
			}
			if text != "" {
				ch.Delta.Content = &text
			}
			if ev.Token >= 0 {
				if req.Logprobs {
					ch.Logprobs = &chatLogprobs{Content: s.tokenLogprobs([]int32{ev.Token}, []float32{ev.Logprob}, [][]engine.TokenLogprob{ev.Top}, req.tokensAsIDs(s.o.ReturnTokensAsTokenIDs))}
				}
				if req.ReturnTokenIDs {
					ch.TokenIDs = []int32{ev.Token}
				}
			}
			if ev.Finish != "" {
				finish := ev.Finish
				if tm.parse {
					msg, f := s.chatMessage(chatRole(req), held[ev.Choice].text.String(), ev.Finish, tm)
					finish = f
					d := msg.Delta()
					ch.Delta.Content, ch.Delta.ToolCalls = d.Content, d.ToolCalls
				}
				ch.FinishReason = &finish
			}
			if ch.Delta.Content == nil && ch.Delta.ToolCalls == nil && ch.Logprobs == nil && ch.TokenIDs == nil && ch.FinishReason == nil {
				continue
			}
			chunk([]chatChoice{ch}, nil, false)
		}
		if done {
			break
		}
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		chunk(nil, s.usageSoFar(h, len(prompt), completion), false)
	}
	sse.done()
	return nil
}

// sse writes server-sent events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sse) sendError(err error) {
	var he *httpError
	e := apiError{Message: err.Error(), Type: "server_error"}
	if errors.As(err, &he) {
		e.Type = he.typ
		if he.code != "" {
			e.Code = he.code
		}
	}
	s.send(errorBody{Error: e})
	s.done()
}

func (s *sse) done() {
	fmt.Fprint(s.w, "data: [DONE]\n\n")
	if s.f != nil {
		s.f.Flush()
	}
}
