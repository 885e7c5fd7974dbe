package chattemplate

import (
	"testing"

	"github.com/hone-rl/hone/format/chatmsg"
)

// TestSelectFiltersWithoutATest: select, reject, selectattr and rejectattr
// without a test keep (or drop) the items that are true, as in jinja2; the
// engine panicked on that form (a slice past its arguments), so a template
// that picked, say, the messages with tool calls failed every rendering.
// The wants are Python jinja2 3.1.2's, set up as transformers sets it up.
func TestSelectFiltersWithoutATest(t *testing.T) {
	msgs := []chatmsg.Message{
		{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []chatmsg.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "c1", Content: "42"},
	}
	cases := []struct{ src, want string }{
		{`{{ messages|selectattr('tool_calls')|list|length }}`, "1"},
		{`{{ messages|rejectattr('content')|map(attribute='role')|join(',') }}`, "assistant"},
		{`{{ messages|map(attribute='content')|select|join(',') }}`, "hi,42"},
		{`{{ messages|map(attribute='content')|reject|list|length }}`, "1"},
		{`{{ messages|selectattr( 'role' , 'equalto', 'tool')|list|length }}`, "1"},
		{`{{ [0, 1, 2]|select()|list }}`, "[1, 2]"},
		{`{% for m in messages|selectattr("tool_calls") %}{{ m.role }}{% endfor %}`, "assistant"},
		{`{{ "|select" }}{{ '|selectattr(x)' }}`, "|select|selectattr(x)"},
	}
	for _, c := range cases {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{Messages: msgs})
		if err != nil || got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.src, got, err, c.want)
		}
	}
}
