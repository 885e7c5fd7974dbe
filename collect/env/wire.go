package env

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/hone-rl/hone/format/trajectory"
)

// WireMessage is a chat message in the OpenAI request shape.
type WireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // a string, parts, or null
	ToolCalls  []WireToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Name       string          `json:"name,omitempty"`
}

// WireToolCall is one tool call in the OpenAI shape.
type WireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function WireFunction `json:"function"`
}

// WireFunction is a tool call's function part.
type WireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// WireTool is one offered tool in the OpenAI shape.
type WireTool struct {
	Type     string       `json:"type"`
	Function WireToolFunc `json:"function"`
}

// WireToolFunc is an offered tool's function part.
type WireToolFunc struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToWire converts messages to the OpenAI request shape. Content parts kept
// in ContentParts are restored as they were.
func ToWire(msgs []trajectory.Message) []WireMessage {
	out := make([]WireMessage, len(msgs))
	for i, m := range msgs {
		w := WireMessage{Role: m.Role, ToolCallID: m.ToolCallID, Name: m.Name}
		switch {
		case m.ContentParts != "":
			w.Content = json.RawMessage(m.ContentParts)
		case m.Content == "" && len(m.ToolCalls) > 0:
			w.Content = json.RawMessage("null")
		default:
			b, _ := json.Marshal(m.Content) // a string always marshals
			w.Content = b
		}
		for _, c := range m.ToolCalls {
			typ := c.Type
			if typ == "" {
				typ = "function"
			}
			w.ToolCalls = append(w.ToolCalls, WireToolCall{ID: c.ID, Type: typ, Function: WireFunction{Name: c.Name, Arguments: c.Arguments}})
		}
		out[i] = w
	}
	return out
}

// FromWire converts an OpenAI-shaped message. Non-string content keeps its
// JSON in ContentParts and its text parts joined in Content.
func FromWire(w WireMessage) (trajectory.Message, error) {
	m := trajectory.Message{Role: w.Role, ToolCallID: w.ToolCallID, Name: w.Name}
	if m.Role == "" {
		return m, fmt.Errorf("message without a role")
	}
	raw := bytes.TrimSpace(w.Content)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &m.Content); err != nil {
			return m, fmt.Errorf("content: %w", err)
		}
	case raw[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return m, fmt.Errorf("content parts: %w", err)
		}
		for _, p := range parts {
			m.Content += p.Text
		}
		m.ContentParts = string(raw)
	default:
		return m, fmt.Errorf("content is neither a string, a list of parts nor null")
	}
	for _, c := range w.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, trajectory.ToolCall{ID: c.ID, Type: c.Type, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return m, nil
}

// ToolsToWire converts offered tools to the OpenAI shape.
func ToolsToWire(tools []trajectory.Tool) []WireTool {
	out := make([]WireTool, len(tools))
	for i, t := range tools {
		typ := t.Type
		if typ == "" {
			typ = "function"
		}
		out[i] = WireTool{Type: typ, Function: WireToolFunc{Name: t.Name, Description: t.Description}}
		if t.Parameters != "" {
			out[i].Function.Parameters = json.RawMessage(t.Parameters)
		}
	}
	return out
}

// ToolsFromWire converts OpenAI-shaped tools.
func ToolsFromWire(ws []WireTool) []trajectory.Tool {
	out := make([]trajectory.Tool, len(ws))
	for i, w := range ws {
		typ := w.Type
		if typ == "" {
			typ = "function"
		}
		out[i] = trajectory.Tool{Type: typ, Name: w.Function.Name, Description: w.Function.Description}
		if len(w.Function.Parameters) > 0 && string(w.Function.Parameters) != "null" {
			out[i].Parameters = compact(w.Function.Parameters)
		}
	}
	return out
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// CheckCall decides whether a tool call is well formed against the offered
// tools: a known name, arguments that are a JSON object, required
// properties present, and top-level property types that match the
// schema's "type". It returns the decoded arguments, or an error whose text
// is fed back to the model as the tool result.
func CheckCall(c trajectory.ToolCall, tools []trajectory.Tool) (map[string]any, error) {
	var tool *trajectory.Tool
	for i := range tools {
		if tools[i].Name == c.Name {
			tool = &tools[i]
			break
		}
	}
	if tool == nil {
		names := make([]string, len(tools))
		for i, t := range tools {
			names[i] = t.Name
		}
		return nil, fmt.Errorf("unknown tool %q (tools: %v)", c.Name, names)
	}
	args := map[string]any{}
	raw := bytes.TrimSpace([]byte(c.Arguments))
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fmt.Errorf("arguments of %s are not a JSON object: %v", c.Name, err)
		}
		if args == nil {
			args = map[string]any{}
		}
	}
	if tool.Parameters == "" {
		return args, nil
	}
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
	}
	if err := json.Unmarshal([]byte(tool.Parameters), &schema); err != nil {
		return args, nil // a schema we cannot read constrains nothing
	}
	for _, r := range schema.Required {
		if _, ok := args[r]; !ok {
			return nil, fmt.Errorf("%s: missing required argument %q", c.Name, r)
		}
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, ok := schema.Properties[k]
		if !ok {
			if schema.AdditionalProperties != nil && !*schema.AdditionalProperties {
				return nil, fmt.Errorf("%s: unexpected argument %q", c.Name, k)
			}
			continue
		}
		if !typeFits(p.Type, args[k]) {
			return nil, fmt.Errorf("%s: argument %q should be %v", c.Name, k, p.Type)
		}
	}
	return args, nil
}

// typeFits checks a JSON value against a schema "type" (a name or a list).
func typeFits(typ any, v any) bool {
	switch t := typ.(type) {
	case nil:
		return true
	case []any:
		for _, x := range t {
			if typeFits(x, v) {
				return true
			}
		}
		return false
	case string:
		switch t {
		case "string":
			_, ok := v.(string)
			return ok
		case "number":
			_, ok := v.(float64)
			return ok
		case "integer":
			f, ok := v.(float64)
			return ok && f == float64(int64(f))
		case "boolean":
			_, ok := v.(bool)
			return ok
		case "object":
			_, ok := v.(map[string]any)
			return ok
		case "array":
			_, ok := v.([]any)
			return ok
		case "null":
			return v == nil
		}
	}
	return true
}
