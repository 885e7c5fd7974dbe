package chattemplate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"

	"github.com/hone-rl/hone/format/chatmsg"
)

// messageValue is the message as the template sees it: an ordered dict
// with keys role, content, reasoning_content, tool_calls, tool_call_id,
// name, where the optional ones are present only when set (templates test
// `'tool_calls' in message` and `message.reasoning_content is defined`).
// Content given as a list of parts reaches the template as that list, as
// transformers passes it; except when parts is false, which reaches it as its text parts joined by newlines
// (chatmsg.ContentLines), as vLLM gives a template that takes content as a
// string. Null content (an assistant turn that only calls tools, as OpenAI
// returns it and clients send it back) reaches the template as vLLM gives
// it: "" to a template that takes a string, an empty list to one that loops
// over parts. Passed as None it rendered otherwise than the "" that
// format/layout lays the same turn out with (Llama 3.1 prints a tool
// result's "" as tojson, '""', and None as nothing), so the prompt served
// was not the one trained on, and Gemma 3's template refused it.
func messageValue(m chatmsg.Message, parts bool, args argsMode) (jinja.Value, error) {
	d := jinja.NewDict()
	dict := d.AsDict()
	dict.Set("role", jinja.NewString(m.Role))
	if chatmsg.JSONKind(m.ContentJSON) == "null" {
		if parts {
			dict.Set("content", jinja.NewList([]jinja.Value{}))
		} else {
			dict.Set("content", jinja.NewString(""))
		}
	} else if !parts && chatmsg.JSONKind(m.ContentJSON) == "array" {
		text, err := chatmsg.ContentLines(m.ContentJSON)
		if err != nil {
			return jinja.Undefined(), err
		}
		dict.Set("content", jinja.NewString(text))
	} else if m.ContentJSON != nil {
		v, err := DecodeJSON(m.ContentJSON)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("content: %w", err)
		}
		dict.Set("content", v)
	} else {
		dict.Set("content", jinja.NewString(m.Content))
	}
	if m.ReasoningContent != nil {
		dict.Set("reasoning_content", jinja.NewString(*m.ReasoningContent))
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]jinja.Value, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			v, err := toolCallValue(tc, args)
			if err != nil {
				return jinja.Undefined(), fmt.Errorf("tool_calls[%d]: %w", i, err)
			}
			calls[i] = v
		}
		dict.Set("tool_calls", jinja.NewList(calls))
	}
	if m.ToolCallID != "" {
		dict.Set("tool_call_id", jinja.NewString(m.ToolCallID))
	}
	if m.Name != "" {
		dict.Set("name", jinja.NewString(m.Name))
	}
	return d, nil
}

func toolCallValue(tc chatmsg.ToolCall, mode argsMode) (jinja.Value, error) {
	fn := jinja.NewDict()
	fn.AsDict().Set("name", jinja.NewString(tc.Name))
	args := argumentsValue(tc.Arguments)
	switch {
	case mode == argsText:
		args = jinja.NewString(tc.Arguments)
	case mode == argsProbe && args.IsDict():
		args = jinja.NewDict()
		args.AsDict().Set(probeKey, jinja.NewInt(0))
	}
	fn.AsDict().Set("arguments", args)
	d := jinja.NewDict()
	if tc.ID != "" {
		d.AsDict().Set("id", jinja.NewString(tc.ID))
	}
	typ := tc.Type
	if typ == "" {
		typ = "function"
	}
	d.AsDict().Set("type", jinja.NewString(typ))
	d.AsDict().Set("function", fn)
	return d, nil
}

// argsMode is how a rendering passes tool calls' arguments.
type argsMode int

const (
	argsDict  argsMode = iota // a dict when they are a JSON object (argumentsValue)
	argsText                  // the text the model wrote
	argsProbe                 // a dict holding only probeKey in place of each dict
)

// probeKey is the key of the probe dict, and probeRepr the text of that
// dict printed by {{ }} or joined by +, alike for the two printers.
const (
	probeKey  = "__hone_arguments_probe"
	probeRepr = "{'" + probeKey + "': 0}"
)

// argumentsValue parses arguments that are a JSON object into an ordered
// dict, as ART does before applying the template; other text (malformed
// JSON from a sampled call, a bare string) stays a string so that templates
// testing `arguments is string` print it verbatim.
func argumentsValue(args string) jinja.Value {
	a := bytes.TrimSpace([]byte(args))
	if len(a) > 0 && a[0] == '{' {
		if v, err := DecodeJSON(a); err == nil {
			return v
		}
	}
	return jinja.NewString(args)
}

// printsArgumentsDict says whether out holds a tool call's arguments of
// msgs printed as a dict (Python's repr, as {{ }} prints it, or the
// engine's, as + joins it to a string): a template that takes arguments as
// text. An empty dict prints as its JSON, so it is not looked for.
func printsArgumentsDict(out string, msgs []chatmsg.Message) bool {
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			v := argumentsValue(tc.Arguments)
			if !v.IsDict() || v.AsDict().Len() == 0 {
				continue
			}
			if strings.Contains(out, pythonStr(v)) || strings.Contains(out, v.String()) {
				return true
			}
		}
	}
	return false
}

// toolValue converts one tool's JSON. A bare function description
// ({"name", "description", "parameters"} without "function") is wrapped as
// {"type": "function", "function": tool}, as ART does before rendering.
func toolValue(raw json.RawMessage) (jinja.Value, error) {
	v, err := DecodeJSON(raw)
	if err != nil {
		return jinja.Undefined(), err
	}
	if !v.IsDict() {
		return v, nil
	}
	d := v.AsDict()
	if _, hasFn := d.Get("function"); !hasFn && d.Has("name") {
		w := jinja.NewDict()
		w.AsDict().Set("type", jinja.NewString("function"))
		w.AsDict().Set("function", v)
		return w, nil
	}
	return v, nil
}
