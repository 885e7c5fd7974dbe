package chatmsg

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzMessageJSON: a message that reads is written as JSON that reads back
// as the same message (its raw content compared compacted: the writer
// compacts it), with the same text, and streamed as deltas (the arguments
// cut in two) is built back as the same message with its content as text;
// a tool reads and writes back the same way.
func FuzzMessageJSON(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"a <b> & c"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","function":{"name":"f","arguments":{"b": 1, "a": [2]}}},{"type":"function","function":{"name":"g","arguments":null}}],"reasoning_content":"think"}`,
		`{"role":"user","content":[ {"type":"text","text":"hi"}, {"type":"image_url","image_url":{"url":"u"}} ]}`,
		`{"role":"tool","name":"f","tool_call_id":"c1","content":"\u2028\ud800 \"x\""}`,
		`{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object", "properties":{}}}}`,
		`{"ROLE":"user","Content":"case"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Message
		if json.Unmarshal(data, &m) == nil {
			b, err := m.MarshalJSON() // json.Marshal would HTML-escape it again
			if err != nil {
				t.Fatalf("%s read as %+v, which does not write: %v", data, m, err)
			}
			var back Message
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("%s written as %s, which does not read: %v", data, b, err)
			}
			if !reflect.DeepEqual(compacted(m), compacted(back)) {
				t.Fatalf("%s read as %+v, written as %s, read back as %+v", data, m, b, back)
			}
			streamed(t, m)
			text, err := ContentText(m.ContentJSON)
			backText, backErr := ContentText(back.ContentJSON)
			if m.ContentJSON != nil && (text != backText || (err == nil) != (backErr == nil)) {
				t.Fatalf("%s: content text %q (%v), after writing %q (%v)", data, text, err, backText, backErr)
			}
		}
		var tool Tool
		if json.Unmarshal(data, &tool) == nil {
			b, err := tool.MarshalJSON()
			if err != nil {
				t.Fatalf("tool %s read as %+v, which does not write: %v", data, tool, err)
			}
			var back Tool
			if err := json.Unmarshal(b, &back); err != nil || back != tool {
				t.Fatalf("tool %s read as %+v, written as %s, read back as %+v (%v)", data, tool, b, back, err)
			}
		}
	})
}

// compacted is m with its raw content compacted, and no tool calls as nil
// (an empty "tool_calls" is not written).
func compacted(m Message) Message {
	if len(m.ToolCalls) == 0 {
		m.ToolCalls = nil
	}
	if m.ContentJSON != nil {
		var b bytes.Buffer
		if json.Compact(&b, m.ContentJSON) == nil {
			m.ContentJSON = b.Bytes()
		}
	}
	return m
}

// streamed sends m as a role delta and its Delta, each call's arguments
// cut in two chunks, and checks that a Builder gives m back: the content
// as its text, null content (and empty content beside tool calls) null.
func streamed(t *testing.T, m Message) {
	var b Builder
	d := m.Delta()
	var rest []ToolCallDelta
	for i := range d.ToolCalls {
		a := d.ToolCalls[i].Function.Arguments
		d.ToolCalls[i].Function.Arguments = a[:len(a)/2]
		rest = append(rest, ToolCallDelta{Index: d.ToolCalls[i].Index, Function: FunctionDelta{Arguments: a[len(a)/2:]}})
	}
	for _, delta := range []Delta{{Role: m.Role}, d, {ToolCalls: rest}} {
		if err := b.Add(delta); err != nil {
			t.Fatalf("%+v: delta %+v: %v", m, delta, err)
		}
	}
	want := m // a delta has no tool_call_id or name: the assistant's message has none
	want.ToolCallID, want.Name = "", ""
	if len(want.ToolCalls) == 0 {
		want.ToolCalls = nil
	}
	if m.ContentJSON != nil && string(m.ContentJSON) != "null" {
		want.Content, _ = ContentText(m.ContentJSON)
		want.ContentJSON = nil
	}
	if want.ContentJSON == nil && want.Content == "" && len(want.ToolCalls) > 0 {
		want.ContentJSON = json.RawMessage("null")
	}
	if got := b.Message(); !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v streamed is built as %+v, want %+v", m, got, want)
	}
}
