package trajectory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hone-rl/hone/format/chatmsg"
)

// Chat returns the message in the OpenAI chat shape: content that was a
// list of parts or null comes back as that JSON, and an empty
// ReasoningContent is left out. The Hone fields (Trainable, TokenIDs, ...)
// are not part of it. The tool calls are shared with m, not copied.
func (m *Message) Chat() chatmsg.Message {
	c := chatmsg.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name}
	if m.ContentParts != "" {
		c.ContentJSON = json.RawMessage(m.ContentParts)
	}
	if m.ReasoningContent != "" {
		r := m.ReasoningContent
		c.ReasoningContent = &r
	}
	return c
}

// ChatMessages converts msgs with Chat.
func ChatMessages(msgs []Message) []chatmsg.Message {
	out := make([]chatmsg.Message, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Chat()
	}
	return out
}

// FromChat returns the trajectory message for c, refusing what a
// trajectory cannot hold: no role, content that chatmsg.ContentText
// refuses, a tool call without a function name. Content that was not a
// string is kept compacted in ContentParts, its text in Content.
func FromChat(c chatmsg.Message) (Message, error) {
	m := Message{Role: c.Role, Content: c.Content, ToolCalls: c.ToolCalls, ToolCallID: c.ToolCallID, Name: c.Name}
	if c.ReasoningContent != nil {
		m.ReasoningContent = *c.ReasoningContent
	}
	if m.Role == "" {
		return m, errors.New("no role: a message without a role cannot be rendered or sent")
	}
	if raw := bytes.TrimSpace(c.ContentJSON); len(raw) > 0 {
		text, err := chatmsg.ContentText(raw)
		if err != nil {
			return m, err
		}
		m.Content = text
		if raw[0] != '"' {
			m.ContentParts = compact(raw)
		}
	}
	for j, tc := range m.ToolCalls {
		if tc.Name == "" {
			return m, fmt.Errorf("tool_calls[%d]: no function name", j)
		}
	}
	return m, nil
}
