package chattemplate

import (
	"testing"

	"github.com/hone-rl/hone/format/chatmsg"
)

// TestDictCallKeepsKeyOrder: dict(k=v, ...) keeps its keys in the order
// written, as Python's dict does; the engine's came out in Go's random map
// order, another on each rendering, so the tool calls a Mistral v0.3
// tool-calling template prints (the first case is its line) changed from
// one rendering of the same conversation to the next. Each is rendered 20
// times. The wants are Python jinja2 3.1.6's, set up as transformers sets
// it up.
func TestDictCallKeepsKeyOrder(t *testing.T) {
	msgs := []chatmsg.Message{{Role: "assistant", ToolCalls: []chatmsg.ToolCall{{ID: "call_1", Name: "f", Arguments: `{"b": 1, "a": [1, 2]}`}}}}
	cases := []struct{ src, want string }{
		{"{% set call = messages[0].tool_calls[0] %}{{ dict(id=call['id'], name=call['function']['name'], arguments=call['function']['arguments'])|tojson }}",
			`{"id": "call_1", "name": "f", "arguments": {"b": 1, "a": [1, 2]}}`},
		{"{{ dict(z=1, y=dict(b=2, a=(1, 2)), x='dict(q=1)')|tojson }}", `{"z": 1, "y": {"b": 2, "a": [1, 2]}, "x": "dict(q=1)"}`},
		{"{% set d = dict(call_id=messages[0].tool_calls[0].id, content='x,y') %}{{ d|tojson }}{{ dict()|tojson }}{{ dict(b=1,)|tojson }}",
			`{"call_id": "call_1", "content": "x,y"}{}{"b": 1}`},
		{"{{ dict(c=messages[0].role == 'assistant', b=none, a=2)|tojson }}", `{"c": true, "b": null, "a": 2}`},
		// A literal whose last value is a dict ends in "}}".
		{"{{ dict(d=1, c=2, e=3, a=dict(q=1, p=2))|tojson }}{% set x = dict(b=1, a={'k': {'j': 1}}) %}{{ x|tojson }}",
			`{"d": 1, "c": 2, "e": 3, "a": {"q": 1, "p": 2}}{"b": 1, "a": {"k": {"j": 1}}}`},
	}
	for _, c := range cases {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		for range 20 {
			got, err := tmpl.Render(t.Context(), Input{Messages: msgs})
			if err != nil || got != c.want {
				t.Errorf("%s: got %s (%v), want %s", c.src, got, err, c.want)
				break
			}
		}
	}
}
