package chattemplate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ardanlabs/jinja"
)

// Message is one chat message in the OpenAI chat-completions shape, the
// shape Hugging Face chat templates read.
type Message struct {
	Role string // system, user, assistant, tool, ...
	// Content is the message text. ContentJSON, when set, is the content's
	// original JSON value (null, or a list of content parts) and is given to
	// the template instead, as transformers would.
	Content     string
	ContentJSON json.RawMessage
	// ReasoningContent is the assistant's separate reasoning text (Qwen3's
	// reasoning_content); nil leaves the key out, so templates see it as
	// undefined.
	ReasoningContent *string
	ToolCalls        []ToolCall
	ToolCallID       string // role "tool": the call it answers
	Name             string // optional participant or tool name
}

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	ID   string
	Type string // "function" when empty
	Name string
	// Arguments is the JSON text of the arguments. A JSON object reaches the
	// template as an ordered dict (templates print it with tojson or iterate
	// it with |items); anything else is passed as the plain string.
	Arguments string
}

// wireMessage is the JSON form of Message.
type wireMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
}

// UnmarshalJSON reads an OpenAI chat message. Tool-call arguments may be a
// JSON string (the OpenAI wire form) or a JSON object (as Hugging Face
// examples write them); both end up as JSON text in Arguments.
func (m *Message) UnmarshalJSON(data []byte) error {
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*m = Message{Role: w.Role, ReasoningContent: w.ReasoningContent, ToolCallID: w.ToolCallID, Name: w.Name}
	c := bytes.TrimSpace(w.Content)
	switch {
	case len(c) == 0:
		m.ContentJSON = json.RawMessage("null")
	case c[0] == '"':
		if err := json.Unmarshal(c, &m.Content); err != nil {
			return fmt.Errorf("content: %w", err)
		}
	default:
		m.ContentJSON = append(json.RawMessage(nil), c...)
	}
	for i, tc := range w.ToolCalls {
		call := ToolCall{ID: tc.ID, Type: tc.Type, Name: tc.Function.Name}
		a := bytes.TrimSpace(tc.Function.Arguments)
		if len(a) > 0 && a[0] == '"' {
			if err := json.Unmarshal(a, &call.Arguments); err != nil {
				return fmt.Errorf("tool_calls[%d].function.arguments: %w", i, err)
			}
		} else {
			call.Arguments = string(a)
		}
		m.ToolCalls = append(m.ToolCalls, call)
	}
	return nil
}

// value is the message as the template sees it: an ordered dict with keys
// role, content, reasoning_content, tool_calls, tool_call_id, name, where
// the optional ones are present only when set (templates test
// `'tool_calls' in message` and `message.reasoning_content is defined`).
func (m Message) value() (jinja.Value, error) {
	d := jinja.NewDict()
	dict := d.AsDict()
	dict.Set("role", jinja.NewString(m.Role))
	if m.ContentJSON != nil {
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
			v, err := tc.value()
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

func (tc ToolCall) value() (jinja.Value, error) {
	fn := jinja.NewDict()
	fn.AsDict().Set("name", jinja.NewString(tc.Name))
	fn.AsDict().Set("arguments", argumentsValue(tc.Arguments))
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

// FunctionTool returns the OpenAI function-tool JSON for a tool given by its
// parts: {"type": "function", "function": {"name", "description",
// "parameters"}}, leaving out an empty description and empty parameters.
// parameters is the JSON schema text; its key order is kept.
func FunctionTool(name, description, parameters string) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":"function","function":{"name":`)
	n, _ := json.Marshal(name)
	b.Write(n)
	if description != "" {
		d, _ := json.Marshal(description)
		b.WriteString(`,"description":`)
		b.Write(d)
	}
	if p := bytes.TrimSpace([]byte(parameters)); len(p) > 0 {
		if !json.Valid(p) {
			return nil, fmt.Errorf("tool %q: parameters are not valid JSON", name)
		}
		b.WriteString(`,"parameters":`)
		b.Write(p)
	}
	b.WriteString(`}}`)
	return b.Bytes(), nil
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
