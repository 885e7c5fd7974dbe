package chatmsg

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Delta is the "delta" of one streamed chat completion chunk: a piece of
// the assistant message. Content is written even when nil (as null), the
// way OpenAI's and vLLM's streams write it.
type Delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is a piece of one tool call; Index says which call.
// Arguments arrive in pieces; id, type and name come once.
type ToolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function FunctionDelta `json:"function"`
}

// FunctionDelta is the function part of a ToolCallDelta.
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Delta returns the content, reasoning and tool calls of m as one delta,
// without the role (a stream sends the role in its first chunk). Content
// that is null stays null; content parts are not streamed (their text is).
func (m Message) Delta() Delta {
	var d Delta
	if string(m.ContentJSON) != "null" {
		text := m.Content
		if m.ContentJSON != nil {
			text, _ = ContentText(m.ContentJSON)
		}
		d.Content = &text
	}
	d.ReasoningContent = m.ReasoningContent
	for i, c := range m.ToolCalls {
		typ := c.Type
		if typ == "" {
			typ = "function"
		}
		d.ToolCalls = append(d.ToolCalls, ToolCallDelta{Index: i, ID: c.ID, Type: typ, Function: FunctionDelta{Name: c.Name, Arguments: c.Arguments}})
	}
	return d
}

// MaxToolCalls bounds a streamed tool call's index, so that a bad index
// cannot make a Builder allocate without limit.
const MaxToolCalls = 1024

// Builder assembles a streamed message from its deltas, the way the OpenAI
// SDKs do: content and reasoning concatenated, tool calls gathered by
// index with their arguments concatenated and their id, type and name
// taken from the pieces that carry them. The zero Builder is ready.
type Builder struct {
	role                  string
	content, reasoning    strings.Builder
	hasContent, hasReason bool
	calls                 []ToolCall
}

// Add takes one delta. A tool call index below 0 or from MaxToolCalls on
// is an error, and that piece is dropped.
func (b *Builder) Add(d Delta) error {
	if d.Role != "" {
		b.role = d.Role
	}
	if d.Content != nil {
		b.hasContent = true
		b.content.WriteString(*d.Content)
	}
	if d.ReasoningContent != nil {
		b.hasReason = true
		b.reasoning.WriteString(*d.ReasoningContent)
	}
	var err error
	for _, tc := range d.ToolCalls {
		if tc.Index < 0 || tc.Index >= MaxToolCalls {
			if err == nil {
				err = fmt.Errorf("tool call index %d (want 0 to %d)", tc.Index, MaxToolCalls-1)
			}
			continue
		}
		for len(b.calls) <= tc.Index {
			b.calls = append(b.calls, ToolCall{})
		}
		call := &b.calls[tc.Index]
		if tc.ID != "" {
			call.ID = tc.ID
		}
		if tc.Type != "" {
			call.Type = tc.Type
		}
		if tc.Function.Name != "" {
			call.Name = tc.Function.Name
		}
		call.Arguments += tc.Function.Arguments
	}
	return err
}

// Message returns the message assembled so far. Its content is null when
// no delta carried any, and when it is empty and the message calls tools:
// servers open every stream with an empty content delta, while the same
// turn not streamed has null content, and the two should read the same.
func (b *Builder) Message() Message {
	m := Message{Role: b.role, Content: b.content.String()}
	if !b.hasContent || (m.Content == "" && len(b.calls) > 0) {
		m.ContentJSON = json.RawMessage("null")
	}
	if b.hasReason {
		r := b.reasoning.String()
		m.ReasoningContent = &r
	}
	for _, c := range b.calls {
		if c.Type == "" {
			c.Type = "function"
		}
		m.ToolCalls = append(m.ToolCalls, c)
	}
	return m
}
