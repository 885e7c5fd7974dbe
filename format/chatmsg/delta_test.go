package chatmsg

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestDeltaJSON: a delta is written the way OpenAI's and vLLM's streams
// write it: content always present (null when none), tool calls by index.
func TestDeltaJSON(t *testing.T) {
	m := Message{Role: "assistant", ContentJSON: json.RawMessage("null"),
		ToolCalls: []ToolCall{{ID: "c1", Type: "function", Name: "f", Arguments: `{"a":1}`}, {ID: "c2", Name: "g", Arguments: "{}"}}}
	b, err := json.Marshal(m.Delta())
	want := `{"content":null,"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"index":1,"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]}`
	if err != nil || string(b) != want {
		t.Errorf("%s, %v\nwant %s", b, err, want)
	}
	empty := ""
	if b, _ := json.Marshal(Delta{Role: "assistant", Content: &empty}); string(b) != `{"role":"assistant","content":""}` {
		t.Errorf("first delta %s", b)
	}
	if b, _ := json.Marshal(Delta{}); string(b) != `{"content":null}` {
		t.Errorf("empty delta %s", b)
	}
	if d := (Message{Role: "assistant", Content: "hi"}).Delta(); d.Content == nil || *d.Content != "hi" || d.Role != "" {
		t.Errorf("text delta %+v", d)
	}
}

// TestBuilder assembles the pieces of a streamed turn: content and
// reasoning in pieces, tool calls told apart by index with their name
// first and their arguments in pieces.
func TestBuilder(t *testing.T) {
	chunks := []string{
		`{"role":"assistant","content":""}`,
		`{"reasoning_content":"Let me "}`,
		`{"reasoning_content":"check."}`,
		`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"weather","arguments":""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`,
		`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"time","arguments":"{}"}}]}`,
		`{"content":null,"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}`,
	}
	var b Builder
	for _, c := range chunks {
		var d Delta
		if err := json.Unmarshal([]byte(c), &d); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	want := Message{Role: "assistant", ContentJSON: json.RawMessage("null"), ReasoningContent: ptr("Let me check."), ToolCalls: []ToolCall{
		{ID: "call_a", Type: "function", Name: "weather", Arguments: `{"city":"Oslo"}`},
		{ID: "call_b", Type: "function", Name: "time", Arguments: "{}"},
	}}
	if got := b.Message(); !reflect.DeepEqual(got, want) {
		t.Errorf("assembled %+v\nwant %+v", got, want)
	}

	var text Builder
	for _, s := range []string{"", "Hel", "lo"} {
		text.Add(Delta{Content: &s})
	}
	if got := text.Message(); got.Content != "Hello" || got.ContentJSON != nil || got.ReasoningContent != nil {
		t.Errorf("text turn %+v", got)
	}
	var none Builder
	if got := none.Message(); string(got.ContentJSON) != "null" {
		t.Errorf("a stream without content: %+v", got)
	}

	var bad Builder
	err := bad.Add(Delta{ToolCalls: []ToolCallDelta{{Index: MaxToolCalls}, {Index: -1}, {Index: 0, Function: FunctionDelta{Name: "f"}}}})
	if err == nil || !strings.Contains(err.Error(), "tool call index 1024") {
		t.Errorf("index past MaxToolCalls: %v", err)
	}
	if got := bad.Message(); len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "f" {
		t.Errorf("the good piece was dropped: %+v", got)
	}
}
