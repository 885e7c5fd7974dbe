package chattemplate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"

	"github.com/hone-rl/hone/format/chatmsg"
	"github.com/hone-rl/hone/format/internal/exactjson"
	"github.com/hone-rl/hone/format/internal/tokconfig"
)

// Template is a model's chat template (or its set of named templates) with
// the special tokens of its tokenizer_config.json. It is safe for concurrent
// Render calls once loaded; set Clock before sharing it.
type Template struct {
	names    []string // sorted
	sources  map[string]string
	origins  map[string]string // where each template came from, for errors
	compiled map[string]*compiled
	special  map[string]jinja.Value // bos_token, eos_token, ..., additional_special_tokens
	// reserved is reservedNames(), built once: building it constructs
	// every callable of the tables, which cost each rendering a third of
	// its time when built per call (TestVariablesDoNotBuildTheReservedNames).
	reserved map[string]bool

	// Clock gives the time strftime_now prints; nil means time.Now. Tests
	// and reproducible pipelines set a fixed clock.
	Clock func() time.Time
	// Limits bound every rendering; the zero value means the defaults.
	// Set it before sharing the Template.
	Limits Limits
}

// compiled is a template rewritten to report to a rendering's budget
// (instrument.go) and compiled.
type compiled struct {
	tmpl    *jinja.Template
	regions []region
	// parts: the template loops over a message's content (loopsOverContent),
	// so a list of content parts reaches it as the list; otherwise as the
	// parts' text.
	parts bool
	// py: the callables of pyCallables, strMethodCallables,
	// strBoundCallables and mutatorCallables that the rewritten source
	// calls, given to its renderings; no others, which would cost every
	// rendering (the engine copies each variable into its scope).
	py map[string]jinja.Value
}

// Input is what a chat template is rendered with.
type Input struct {
	// Messages are OpenAI chat messages (format/chatmsg, the shape's one
	// codec, which also reads tool-call arguments given as JSON objects).
	Messages []chatmsg.Message
	// Tools are OpenAI tool definitions as JSON, key order kept. Bare
	// function descriptions are wrapped as {"type":"function","function":…}.
	Tools               []json.RawMessage
	AddGenerationPrompt bool
	// ContinueFinalMessage renders the conversation so that the model
	// continues its last message (an assistant prefill): the text ends
	// right after that message's content, as transformers'
	// apply_chat_template(continue_final_message=True) cuts it. It cannot
	// go with AddGenerationPrompt.
	ContinueFinalMessage bool
	// Kwargs are extra template variables such as enable_thinking. Values
	// may be bool, string, int, float64, nil, json.RawMessage (decoded with
	// key order kept) or jinja.Value. They override special tokens of the
	// same name, as in transformers.
	Kwargs map[string]any
	// TemplateName picks one of several named templates; empty means
	// "tool_use" when tools are given and the model has one, else "default".
	TemplateName string
	// Now is the time strftime_now prints (Llama 3.2's template writes
	// today's date into the system prompt): a conversation rendered again
	// for training gives the time it was sampled at, so that its prompt is
	// the one the model saw. Zero means the Template's Clock, else the time
	// of the call.
	Now time.Time
}

// specialTokenKeys are the tokenizer attributes transformers passes to every
// chat template (its special_tokens_map), when they are set.
var specialTokenKeys = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// reservedNames are the variables Render sets itself, which a kwarg may
// not take: those transformers passes (a kwarg named so is an error there
// too, a duplicate keyword argument), the variables our rewriters set, and
// every callable Render may bind, taken from the tables it binds them
// from so that a new one cannot be left out. raise_exception and
// strftime_now are not among them: transformers makes them globals, which
// a kwarg shadows.
func reservedNames() map[string]bool {
	names := map[string]bool{"messages": true, "tools": true, "documents": true, "add_generation_prompt": true,
		dictsortName: true, unpackedName: true}
	// A budget with no limits makes the same table (its callables are
	// not called here).
	for _, calls := range []map[string]jinja.Value{pyCallables(), (&budget{}).callables()} {
		for k := range calls {
			names[k] = true
		}
	}
	return names
}

// isReserved reports whether a kwarg named k would be set by Render itself
// (reserved, which reservedNames gives, or one of our str methods,
// mutators, call blocks' macros or loops' saved names).
func isReserved(reserved map[string]bool, k string) bool {
	return reserved[k] || strings.HasPrefix(k, strMethodPrefix) || strings.HasPrefix(k, mutCallPrefix) || strings.HasPrefix(k, dictMethodPrefix) || strings.HasPrefix(k, callerPrefix) ||
		strings.HasPrefix(k, loopOuterPrefix)
}

// ConfigName is the file of a model folder that holds the chat template and
// the tokenizer's special tokens.
const ConfigName = "tokenizer_config.json"

// SpecialTokensMapName is the file of an old model folder whose special
// tokens replace ConfigName's (Load).
const SpecialTokensMapName = "special_tokens_map.json"

// Load reads the chat template of the model folder dir the way transformers
// does: tokenizer_config.json's chat_template (a string, or a list of
// {"name", "template"} objects), replaced by chat_template.jinja when that
// file exists, plus named templates from additional_chat_templates/*.jinja.
// A folder with neither takes chat_template.json's, the processor file of
// multimodal checkpoints (Gemma3ForConditionalGeneration), whose template
// vLLM serves them with. Special tokens come from tokenizer_config.json,
// or, in a folder saved before transformers 4.34 (no added_tokens_decoder),
// from special_tokens_map.json where it names them (format/internal/tokconfig).
func Load(dir string) (*Template, error) {
	cfgPath := filepath.Join(dir, ConfigName)
	// The config with special_tokens_map.json applied, as transformers
	// loads an old folder's pair (tokconfig).
	cfg, err := tokconfig.Read(cfgPath, filepath.Join(dir, SpecialTokensMapName))
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	var override string
	jinjaPath := filepath.Join(dir, "chat_template.jinja")
	if b, err := exactjson.ReadFile(jinjaPath); err == nil {
		override = string(b)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	if override == "" && !hasTemplate(cfg) {
		procPath := filepath.Join(dir, "chat_template.json")
		b, err := exactjson.ReadFile(procPath)
		switch {
		case err == nil:
			var p struct {
				ChatTemplate string `json:"chat_template"`
			}
			// By the key's exact name, as transformers reads the file (a
			// dict): "Chat_Template" is a key of its own.
			if err := exactjson.Unmarshal(b, &p); err != nil {
				return nil, fmt.Errorf("chat template: %s: %w", procPath, err)
			}
			override, jinjaPath = p.ChatTemplate, procPath
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("chat template: %w", err)
		}
	}
	t, err := fromConfig(cfg, override, cfgPath, jinjaPath)
	if err != nil {
		if cfg == nil {
			return nil, fmt.Errorf("chat template in %s: %w", dir, err)
		}
		return nil, fmt.Errorf("chat template in %s: %w", cfgPath, err)
	}
	extra, _ := filepath.Glob(filepath.Join(dir, "additional_chat_templates", "*.jinja"))
	for _, p := range extra {
		b, err := exactjson.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("chat template: %w", err)
		}
		if err := t.add(strings.TrimSuffix(filepath.Base(p), ".jinja"), string(b), p); err != nil {
			return nil, fmt.Errorf("chat template %s: %w", p, err)
		}
	}
	if len(t.names) == 0 {
		return nil, fmt.Errorf("chat template: %s has no chat_template and there is no %s", cfgPath, jinjaPath)
	}
	return t, nil
}

// hasTemplate reports whether a tokenizer_config.json gives a chat_template
// (a malformed file says yes, leaving the error to fromConfig).
func hasTemplate(cfg []byte) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(cfg, &fields) != nil {
		return cfg != nil
	}
	raw, ok := fields["chat_template"]
	return ok && string(raw) != "null"
}

// FromConfig builds a Template from the bytes of a tokenizer_config.json.
// A non-empty override is used as the default template instead of the
// config's (the content of a chat_template.jinja file).
func FromConfig(tokenizerConfig []byte, override string) (*Template, error) {
	t, err := fromConfig(tokenizerConfig, override, ConfigName, "chat_template.jinja")
	if err != nil {
		return nil, err
	}
	if len(t.names) == 0 {
		return nil, errors.New("chat template: none in the config and no override")
	}
	return t, nil
}

// New compiles a single template source with the given special tokens
// (for example {"eos_token": "<|im_end|>"}).
func New(source string, specialTokens map[string]string) (*Template, error) {
	t := newTemplate()
	for k, v := range specialTokens {
		t.special[k] = jinja.NewString(v)
	}
	if err := t.add("default", source, ""); err != nil {
		return nil, err
	}
	return t, nil
}

func newTemplate() *Template {
	return &Template{sources: map[string]string{}, origins: map[string]string{}, compiled: map[string]*compiled{}, special: map[string]jinja.Value{},
		reserved: reservedNames()}
}

// fromConfig reads a tokenizer_config.json; cfgName and overrideName name
// the config and the override file in errors.
func fromConfig(cfg []byte, override, cfgName, overrideName string) (*Template, error) {
	t := newTemplate()
	var fields map[string]json.RawMessage
	if cfg != nil {
		if err := json.Unmarshal(cfg, &fields); err != nil {
			return nil, fmt.Errorf("tokenizer config: %w", err)
		}
	}
	for _, k := range specialTokenKeys {
		raw, ok := fields[k]
		if !ok {
			continue
		}
		s, set, err := tokconfig.Content(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if set {
			t.special[k] = jinja.NewString(s)
		}
	}
	if raw, ok := fields["additional_special_tokens"]; ok {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("additional_special_tokens: %w", err)
		}
		var items []jinja.Value
		for i, r := range list {
			s, set, err := tokconfig.Content(r)
			if err != nil {
				return nil, fmt.Errorf("additional_special_tokens[%d]: %w", i, err)
			}
			if set {
				items = append(items, jinja.NewString(s))
			}
		}
		if len(items) > 0 {
			t.special["additional_special_tokens"] = jinja.NewList(items)
		}
	}
	if raw, ok := fields["chat_template"]; ok && override == "" {
		var one string
		var named []struct {
			Name     string `json:"name"`
			Template string `json:"template"`
		}
		switch {
		case json.Unmarshal(raw, &one) == nil:
			if err := t.add("default", one, cfgName); err != nil {
				return nil, err
			}
		case json.Unmarshal(raw, &named) == nil:
			for i, n := range named {
				if n.Name == "" {
					return nil, fmt.Errorf("chat_template[%d]: no name", i)
				}
				if err := t.add(n.Name, n.Template, cfgName); err != nil {
					return nil, fmt.Errorf("chat_template[%d] %q: %w", i, n.Name, err)
				}
			}
		default:
			if string(raw) != "null" {
				return nil, errors.New("chat_template is neither a string nor a list of {name, template}")
			}
		}
	}
	if override != "" {
		if err := t.add("default", override, overrideName); err != nil {
			return nil, fmt.Errorf("chat_template.jinja: %w", err)
		}
	}
	return t, nil
}

// tojsonName is the variable our tojson filter is passed as. The engine
// looks filters up in its own table before the render data, so its tojson
// (which sorts keys and escapes differently when indenting) cannot be
// replaced; instead the template text is rewritten to call ours.
const tojsonName = "__hone_tojson"

// add compiles a template: its static limits are checked, the source is
// compiled as written (so that syntax errors read as the engine reports
// them), and then the instrumented text that Render runs. Errors about the
// template itself match ErrBadTemplate.
func (t *Template) add(name, source, origin string) error {
	text := separateClosers(lexerSource(source))
	// The static limits are checked before the engine parses anything:
	// its parser recurses once per bracket and operator.
	ins, insErr := instrument(text, true)
	var unclosed *unclosedTagError
	if insErr != nil && !errors.As(insErr, &unclosed) {
		return &badTemplate{fmt.Errorf("compile: %w", insErr)}
	}
	// An unclosed tag stops the engine's scanner too, before its parser,
	// and the engine words it better. x.0.1 is read as x[0][1] here, as
	// jinja2 reads it (indexAttrsInTags); the engine's lexer takes 0.1
	// for a float. Syntax jinja2 reads and the engine does not (a test's
	// argument without parentheses: pyops.go) is what the rewritten text
	// no longer has, so a template the engine refuses as written is
	// refused only when the rewritten one is too. That one is compiled
	// without the calls Render's text wraps expressions in
	// (syntaxSource): the engine reads their arguments without commas,
	// and {{ 1 2 }} compiled as __hone_out(1 2).
	if _, err := jinja.Compile(indexAttrsInTags(withoutKeepMarkers(text))); err != nil {
		if insErr != nil {
			return &badTemplate{fmt.Errorf("compile: %w", err)}
		}
		check, checkErr := syntaxSource(text)
		if checkErr == nil {
			_, checkErr = jinja.Compile(check)
		}
		if checkErr != nil {
			return &badTemplate{fmt.Errorf("compile: %w", err)}
		}
	}
	if insErr != nil {
		return &badTemplate{fmt.Errorf("compile: %w", insErr)}
	}
	// jinja2's parser refuses two operands with no comma between them
	// and tests it cannot read, which the engine reads (commas.go), and
	// its compiler a filter or test it has not, which the engine reports
	// only when it runs (names.go).
	msg, err := parseRefusal(text)
	if err == nil && msg == "" {
		msg, err = unknownName(text)
	}
	if err != nil {
		return &badTemplate{fmt.Errorf("compile: %w", err)}
	}
	if msg != "" {
		return &badTemplate{fmt.Errorf("compile: %w", &staticError{msg})}
	}
	c, err := jinja.Compile(ins.source)
	if err != nil {
		// instrument() keeps every tag the engine accepts parseable (it
		// refuses the one it cannot, a dangling `is`); this is a bug.
		return fmt.Errorf("compile with render limits (please report this as a bug): %w", err)
	}
	if _, ok := t.sources[name]; !ok {
		t.names = append(t.names, name)
		sort.Strings(t.names)
	}
	t.sources[name] = source
	t.origins[name] = origin
	py := map[string]jinja.Value{}
	for _, calls := range []map[string]jinja.Value{pyCallables(), strMethodCallables(), strBoundCallables(), mutatorCallables(), dictMethodCallables()} {
		for k, v := range calls {
			if strings.Contains(ins.source, k) {
				py[k] = v
			}
		}
	}
	if strings.Contains(ins.source, dictsortName) {
		py[dictsortName] = jinja.NewCallable("dictsort", dictsortFilter(ins.intKeys))
	}
	t.compiled[name] = &compiled{tmpl: c, regions: ins.regions, parts: loopsOverContent(source), py: py}
	return nil
}

// lexerSource is the template text jinja2's lexer reads, with its default
// settings, which transformers keeps: every line break (\r\n, \r or \n,
// in literals too) becomes \n, and one line break at the very end is
// dropped (keep_trailing_newline=False). A template file that ends with a
// newline after its last {{ }} or text (DeepSeek Coder's ends with
// {{'### Response:\n'}} and one) rendered that newline after the
// generation prompt, where the model was never prompted with it.
func lexerSource(src string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.Map(func(r rune) rune {
		if r == '\r' {
			return '\n'
		}
		return r
	}, src)
	return strings.TrimSuffix(src, "\n")
}

// Names lists the template names: "default", and others such as "tool_use".
func (t *Template) Names() []string { return append([]string(nil), t.names...) }

// Source returns the text of the named template ("" if there is none).
func (t *Template) Source(name string) string { return t.sources[name] }

// SpecialTokens returns the special tokens given to the template, by
// attribute name (bos_token, eos_token, ...); unset ones are absent.
func (t *Template) SpecialTokens() map[string]string {
	out := map[string]string{}
	for k, v := range t.special {
		if v.IsString() {
			out[k] = v.AsString()
		}
	}
	return out
}

// pick chooses the template for in, following transformers.
func (t *Template) pick(in Input) (string, error) {
	if in.TemplateName != "" {
		if _, ok := t.compiled[in.TemplateName]; !ok {
			return "", fmt.Errorf("no chat template named %q (have %s)", in.TemplateName, strings.Join(t.names, ", "))
		}
		return in.TemplateName, nil
	}
	if len(in.Tools) > 0 {
		if _, ok := t.compiled["tool_use"]; ok {
			return "tool_use", nil
		}
	}
	if _, ok := t.compiled["default"]; ok {
		return "default", nil
	}
	return "", fmt.Errorf("no default chat template (have %s); set TemplateName", strings.Join(t.names, ", "))
}

// RaisedError is the error of a template that called raise_exception, for
// example Llama 3.1's refusal of parallel tool calls.
type RaisedError struct{ Message string }

func (e *RaisedError) Error() string { return "chat template raised: " + e.Message }

// Render renders the conversation with the model's template. The template
// sees messages, tools (none when empty), documents (none),
// add_generation_prompt, the special tokens and the kwargs — the variables
// transformers' apply_chat_template passes. A message's content given as a
// list of content parts reaches a template that loops over a message's
// content (Gemma 3's, for its images) as that list, and any other template
// (Qwen's and Llama's put content into the prompt as a string) as the
// parts' text joined by newlines: vLLM's "auto" content format, so that
// training renders a recorded conversation as the server that sampled it
// did. A tool call's arguments that are a JSON object reach the template as
// a dict (for tojson and .items()), except in a template that prints the
// dict as text: there they are the text the model wrote.
//
// The rendering stops with a *LimitError (errors.Is ErrLimit) when the
// template passes t.Limits, and with ctx's error (wrapped) soon after ctx
// is done; a panic inside the engine becomes an error matching ErrEngine.
func (t *Template) Render(ctx context.Context, in Input) (string, error) {
	if !in.ContinueFinalMessage {
		return t.renderInput(ctx, in)
	}
	if in.AddGenerationPrompt {
		return "", errors.New("continue_final_message and add_generation_prompt cannot both be set: one continues the last message, the other starts a new one")
	}
	marked, final, err := markFinalMessage(in.Messages)
	if err != nil {
		return "", err
	}
	in.Messages = marked
	out, err := t.renderInput(ctx, in)
	if err != nil {
		return "", err
	}
	return cutAtContinueTag(out, final)
}

// renderInput is Render without ContinueFinalMessage's cut.
func (t *Template) renderInput(ctx context.Context, in Input) (string, error) {
	name, err := t.pick(in)
	if err != nil {
		return "", err
	}
	out, err := t.render(ctx, name, in, argsDict)
	if err != nil || !printsArgumentsDict(out, in.Messages) {
		return out, err
	}
	// The output holds the repr of a call's arguments: the template put
	// them into the prompt as text ('…' + arguments, or {{ arguments }}),
	// unless the text came from elsewhere (a tool result echoing them). A
	// rendering with a probe dict in their place, whose repr nothing else
	// holds, tells the two apart.
	if probe, perr := t.render(ctx, name, in, argsProbe); perr != nil || !strings.Contains(probe, probeRepr) {
		return out, nil
	}
	// Such a template was written for the JSON string OpenAI's messages
	// carry (DeepSeek-R1 and V3 and their distills, functionary), not the
	// dict that templates using tojson want. jinja2 raises on the
	// concatenation and prints Python's repr of the dict otherwise, so the
	// prompt held {'city': 'Paris'} where the model had written
	// {"city": "Paris"}: the history trained on and served was not the
	// text sampled. Rendered again with every call's arguments as the text
	// the model wrote, as verl and SGLang do for these templates.
	return t.render(ctx, name, in, argsText)
}

// render is one rendering of in with the template called name, tool
// calls' arguments passed as args says.
func (t *Template) render(ctx context.Context, name string, in Input, args argsMode) (out string, err error) {
	c := t.compiled[name]
	data, err := t.variables(in, c.parts, args)
	if err != nil {
		return "", err
	}
	b := &budget{ctx: ctx, lim: t.Limits.withDefaults(), regions: c.regions, name: name, source: t.origins[name]}
	if err := b.check(); err != nil {
		return "", err
	}
	for k, v := range b.callables() {
		data[k] = v
	}
	for k, v := range c.py {
		data[k] = v
	}
	if _, ok := c.py[sliceName]; ok {
		// slice's columns cost this rendering's steps (budget.slice)
		data[sliceName] = jinja.NewCallable("slice", b.slice)
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("render chat template %q: %w: %s", name, ErrEngine, panicText(p))
		}
	}()
	out, err = c.tmpl.RenderValues(data)
	if b.err != nil {
		// A limit hit where the engine dropped the error still counts.
		return "", b.err
	}
	if err != nil {
		var raised *RaisedError
		if errors.As(err, &raised) {
			return "", raised
		}
		return "", fmt.Errorf("render chat template %q: %w", name, err)
	}
	return out, nil
}

// panicText says what a panic in the engine was, without Go type names
// (an interface conversion names the engine's internal types).
func panicText(p any) string {
	s := fmt.Sprint(p)
	if strings.Contains(s, "interface conversion") {
		return "a value of the wrong kind reached one of its functions"
	}
	return s
}

// variables are the render data of in; parts says whether a message's
// content given as a list of parts is passed as the list (messageValue),
// args how tool calls' arguments are passed.
func (t *Template) variables(in Input, parts bool, args argsMode) (map[string]jinja.Value, error) {
	data := make(map[string]jinja.Value, len(t.special)+len(in.Kwargs)+8)
	// transformers' globals, set first: a special token or kwarg of the
	// same name shadows them, as render()'s arguments shadow jinja2's
	// globals.
	data["raise_exception"] = jinja.NewCallable("raise_exception", raiseException)
	data["strftime_now"] = jinja.NewCallable("strftime_now", t.strftimeNow(in.Now))
	for k, v := range t.special {
		data[k] = v
	}
	for k, v := range in.Kwargs {
		if isReserved(t.reserved, k) {
			return nil, fmt.Errorf("template kwarg %q is set by Render itself", k)
		}
		val, err := kwargValue(v)
		if err != nil {
			return nil, fmt.Errorf("template kwarg %q: %w", k, err)
		}
		data[k] = val
	}
	msgs := make([]jinja.Value, len(in.Messages))
	for i, m := range in.Messages {
		v, err := messageValue(m, parts, args)
		if err != nil {
			return nil, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
		msgs[i] = v
	}
	data["messages"] = jinja.NewList(msgs)
	data["tools"] = jinja.None()
	if len(in.Tools) > 0 {
		tools := make([]jinja.Value, len(in.Tools))
		for i, raw := range in.Tools {
			v, err := toolValue(raw)
			if err != nil {
				return nil, fmt.Errorf("tool %d: %w", i, err)
			}
			tools[i] = v
		}
		data["tools"] = jinja.NewList(tools)
	}
	data["documents"] = jinja.None()
	data["add_generation_prompt"] = jinja.NewBool(in.AddGenerationPrompt)
	return data, nil
}

func kwargValue(v any) (jinja.Value, error) {
	switch x := v.(type) {
	case jinja.Value:
		return x, nil
	case json.RawMessage:
		return DecodeJSON(x)
	case float32:
		return jinja.NewFloat(float64(x)), nil
	case int32:
		return jinja.NewInt(int64(x)), nil
	case nil, bool, int, int64, float64, string:
		return jinja.FromGoValue(x), nil
	}
	return jinja.Undefined(), fmt.Errorf("unsupported type %T (use json.RawMessage for structured values)", v)
}

// raiseException is transformers' raise_exception(message): the message
// may be given by name too (message=..., or **{'message': ...}).
func raiseException(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	msg := "raise_exception called"
	m, given := kwargs["message"]
	if len(args) > 0 {
		m, given = args[0], true
	}
	if given {
		msg = m.String()
		if m.IsString() {
			msg = m.AsString()
		}
	}
	return jinja.Undefined(), &RaisedError{Message: msg}
}

// Now is the time a rendering with a zero Input.Now prints: the Clock's,
// else the call's. A caller that renders one conversation several times
// takes it once and passes it as Input.Now, so that every rendering
// prints the same date.
func (t *Template) Now() time.Time {
	if t.Clock != nil {
		return t.Clock()
	}
	return time.Now()
}

// strftimeNow is the template's strftime_now for a rendering at the time
// at (Input.Now), or, when it is zero, at the Template's Clock's or the
// call's.
func (t *Template) strftimeNow(at time.Time) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one format string")
		}
		now := at
		if now.IsZero() {
			now = t.Now()
		}
		s, err := strftime(now, args[0].AsString())
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewString(s), nil
	}
}

// KwargsFromJSON parses a JSON object of template kwargs, such as the value
// of a --chat-template-kwargs flag ({"enable_thinking": false}), into
// Input.Kwargs; nested objects keep their key order.
func KwargsFromJSON(data []byte) (map[string]any, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("template kwargs: %w", err)
	}
	out := make(map[string]any, len(fields))
	reserved := reservedNames()
	for k, v := range fields {
		if isReserved(reserved, k) {
			return nil, fmt.Errorf("template kwargs: %q is set by Render itself", k)
		}
		out[k] = v
	}
	return out, nil
}
