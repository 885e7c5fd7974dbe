package chatmsg

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Message is one chat message in OpenAI's chat completions shape.
type Message struct {
	Role string // system, developer, user, assistant, tool, function, ...
	// Content is the message text. ContentJSON, when set, is the content's
	// JSON when it was not a string (null, or a list of content parts), and
	// is what gets written and what a chat template receives; ContentText
	// gives its text.
	Content     string
	ContentJSON json.RawMessage
	// ReasoningContent is the assistant's reasoning given apart from the
	// content (vLLM's reasoning parsers, Qwen3's reasoning_content); nil
	// leaves the key out, so templates see it as undefined.
	ReasoningContent *string
	ToolCalls        []ToolCall
	ToolCallID       string // role "tool": the call it answers
	Name             string // optional participant or tool name
}

// Roles are the message roles OpenAI's chat API accepts, in the order
// errors list them: hone-serve refuses any other, and an import takes a
// role one or two edits from one of them (Llama 3's ipython added) for a
// misspelling.
func Roles() []string {
	return []string{"system", "developer", "user", "assistant", "tool", "function"}
}

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	ID   string
	Type string // "function"; written as "function" when empty
	Name string // the function's name
	// Arguments is the JSON text of the arguments exactly as the model
	// wrote it (it need not be valid JSON: it is what was sampled).
	Arguments string
}

// wire is a message as JSON, its fields in the order they are written.
type wire struct {
	Role             string          `json:"role"`
	Name             string          `json:"name,omitempty"`
	Content          json.RawMessage `json:"content"`
	ToolCalls        []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
}

// MarshalJSON writes the message (see the package comment for the rules).
func (m Message) MarshalJSON() ([]byte, error) {
	w := wire{Role: m.Role, Name: m.Name, Content: m.ContentJSON, ToolCalls: m.ToolCalls,
		ToolCallID: m.ToolCallID, ReasoningContent: m.ReasoningContent}
	switch {
	case m.ContentJSON == nil:
		w.Content = appendString(nil, m.Content)
	case !json.Valid(m.ContentJSON):
		return nil, fmt.Errorf("chatmsg: %s message: content is not valid JSON", m.Role)
	}
	return encode(w)
}

// UnmarshalJSON reads a message. Content that is not a string is kept in
// ContentJSON unchecked (no "content" key reads as null); ContentText
// checks it. It fails only on JSON of the wrong types, such as a number
// for the role.
func (m *Message) UnmarshalJSON(data []byte) error {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*m = Message{Role: w.Role, ReasoningContent: w.ReasoningContent, ToolCalls: w.ToolCalls, ToolCallID: w.ToolCallID, Name: w.Name}
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
	return nil
}

// MarshalWith writes m followed by the members of extra, a value that
// encodes as a JSON object: the fields a caller keeps beside the message
// (a trajectory's token ids and logprobs, say). Members of extra that
// repeat a message key are the caller's mistake.
func MarshalWith(m Message, extra any) ([]byte, error) {
	b, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	e, err := encode(extra)
	if err != nil {
		return nil, err
	}
	e = bytes.TrimSpace(e)
	if len(e) < 2 || e[0] != '{' {
		return nil, fmt.Errorf("chatmsg: the extra fields of a message must encode as a JSON object, got %.20s", e)
	}
	if inner := bytes.TrimSpace(e[1 : len(e)-1]); len(inner) > 0 {
		b = append(append(append(b[:len(b)-1], ','), inner...), '}')
	}
	return b, nil
}

// toolCallWire is a tool call as JSON.
type toolCallWire struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// MarshalJSON writes {"id", "type", "function": {"name", "arguments"}},
// every key present, as OpenAI requires of a request's tool calls.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	var w toolCallWire
	w.ID, w.Type, w.Function.Name = c.ID, c.Type, c.Name
	if w.Type == "" {
		w.Type = "function"
	}
	w.Function.Arguments = appendString(nil, c.Arguments)
	return encode(w)
}

// UnmarshalJSON reads a tool call. Arguments may be a JSON string (the
// OpenAI wire form) or any other JSON value, such as an object (as Hugging
// Face's examples write them), whose text is kept; null or none is "".
func (c *ToolCall) UnmarshalJSON(data []byte) error {
	var w toolCallWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*c = ToolCall{ID: w.ID, Type: w.Type, Name: w.Function.Name}
	if c.Type == "" {
		c.Type = "function"
	}
	switch a := bytes.TrimSpace(w.Function.Arguments); {
	case len(a) > 0 && a[0] == '"':
		if err := json.Unmarshal(a, &c.Arguments); err != nil {
			return fmt.Errorf("function.arguments: %w", err)
		}
	case string(a) != "null":
		c.Arguments = string(a)
	}
	return nil
}

// encode is json.Marshal without HTML escaping, so that "<" and "&" in a
// message reach a file, a judge or a template as they were written.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// appendString appends s as a JSON string, without HTML escaping.
func appendString(b []byte, s string) []byte {
	e, _ := encode(s) // a string always encodes
	return append(b, e...)
}

// ForAPI returns m as a request to an OpenAI-compatible server sends it:
// only the fields OpenAI's chat API defines for the role, since OpenAI
// refuses a message with a key it does not know. reasoning_content is
// left out, and so is the name of a tool message; an assistant turn that
// only calls tools has null content, as OpenAI's own answers write it.
func (m Message) ForAPI() Message {
	m.ReasoningContent = nil
	if m.Role == "tool" {
		m.Name = ""
	}
	if m.ContentJSON == nil && m.Content == "" && len(m.ToolCalls) > 0 {
		m.ContentJSON = json.RawMessage("null")
	}
	return m
}
