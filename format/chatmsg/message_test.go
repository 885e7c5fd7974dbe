package chatmsg

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func ptr(s string) *string { return &s }

// TestMessageJSON: what each kind of message is written as, key order
// included, and that reading it back gives the message again.
func TestMessageJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Message
		want string
	}{
		{"text", Message{Role: "user", Content: "a <b> & c"}, `{"role":"user","content":"a <b> & c"}`},
		{"empty text", Message{Role: "assistant"}, `{"role":"assistant","content":""}`},
		{"null", Message{Role: "assistant", ContentJSON: json.RawMessage("null")}, `{"role":"assistant","content":null}`},
		{"parts", Message{Role: "user", Content: "hi", ContentJSON: json.RawMessage(`[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"u","detail":"low"}}]`)},
			`{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"u","detail":"low"}}]}`},
		{"tool calls", Message{Role: "assistant", ContentJSON: json.RawMessage("null"), ReasoningContent: ptr("think"),
			ToolCalls: []ToolCall{{ID: "c1", Type: "function", Name: "f", Arguments: `{"b":1,"a":2}`}, {Name: "g"}}},
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"b\":1,\"a\":2}"}},{"id":"","type":"function","function":{"name":"g","arguments":""}}],"reasoning_content":"think"}`},
		{"tool result", Message{Role: "tool", Name: "f", ToolCallID: "c1", Content: "ok"}, `{"role":"tool","name":"f","content":"ok","tool_call_id":"c1"}`},
		{"empty reasoning is kept", Message{Role: "assistant", Content: "x", ReasoningContent: ptr("")}, `{"role":"assistant","content":"x","reasoning_content":""}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.m.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("wrote\n%s\nwant\n%s", b, tc.want)
			}
			var back Message
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			want := tc.m
			for i := range want.ToolCalls { // read back with its type
				if want.ToolCalls[i].Type == "" {
					want.ToolCalls = append([]ToolCall(nil), want.ToolCalls...)
					want.ToolCalls[i].Type = "function"
				}
			}
			if tc.m.ContentJSON != nil && string(tc.m.ContentJSON) != "null" {
				want.Content = "" // Unmarshal leaves the text of parts to ContentText
			}
			if !reflect.DeepEqual(back, want) {
				t.Fatalf("read back %+v\nwant %+v", back, want)
			}
		})
	}
}

func TestUnmarshalForms(t *testing.T) {
	var m Message
	in := `{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"z": [1, 2], "a": null}}},{"function":{"name":"g","arguments":null}},{"type":"function","function":{"name":"h"}}]}`
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if string(m.ContentJSON) != "null" || m.Content != "" {
		t.Errorf("no content key: %q / %q, want null", m.ContentJSON, m.Content)
	}
	want := []ToolCall{{Type: "function", Name: "f", Arguments: `{"z": [1, 2], "a": null}`}, {Type: "function", Name: "g"}, {Type: "function", Name: "h"}}
	if !reflect.DeepEqual(m.ToolCalls, want) {
		t.Errorf("tool calls %+v\nwant %+v", m.ToolCalls, want)
	}
	// Wrong types are refused, with the JSON path of the field.
	err := json.Unmarshal([]byte(`{"role":"assistant","tool_calls":[{"function":{"name":3}}]}`), &m)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field != "tool_calls.function.name" {
		t.Errorf("error %v (field %v), want a type error at tool_calls.function.name", err, te)
	}
	// Content of a wrong kind is kept for ContentText to name.
	if err := json.Unmarshal([]byte(`{"role":"user","content":5}`), &m); err != nil || string(m.ContentJSON) != "5" {
		t.Errorf("numeric content: %v, %q", err, m.ContentJSON)
	}
}

func TestContentText(t *testing.T) {
	for _, tc := range []struct{ in, text, err string }{
		{``, "", ""},
		{`null`, "", ""},
		{`"plain"`, "plain", ""},
		{`[]`, "", ""},
		{`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"input_text","text":"not text"},{"type":"text","text":"b"}]`, "ab", ""},
		{`5`, "", "content: expected a string or an array of content parts, got a number"},
		{`{"type":"text"}`, "", "content: expected a string or an array of content parts, got an object"},
		{`["a"]`, "", "content[0]: expected a content part (an object with a type), got a string"},
		{`[null]`, "", "content[0]: expected a content part (an object with a type), got null"},
		{`[{"text":"x"}]`, "", `content[0].type: expected a string such as "text", got nothing`},
		{`[{"type":"text","text":"a"},{"type":"text","text":[]}]`, "", "content[1].text: expected a string, got an array"},
		{`[{"type":"text"}]`, "", "content[0].text: expected a string, got nothing"},
	} {
		text, err := ContentText(json.RawMessage(tc.in))
		if tc.err == "" && (err != nil || text != tc.text) || tc.err != "" && (err == nil || err.Error() != tc.err) {
			t.Errorf("ContentText(%s) = %q, %v; want %q, %q", tc.in, text, err, tc.text, tc.err)
		}
	}
}

func TestMarshalWith(t *testing.T) {
	extra := struct {
		Trainable bool    `json:"trainable,omitempty"`
		TokenIDs  []int32 `json:"token_ids,omitempty"`
	}{true, []int32{1, 2}}
	b, err := MarshalWith(Message{Role: "assistant", Content: "<ok>"}, extra)
	if err != nil || string(b) != `{"role":"assistant","content":"<ok>","trainable":true,"token_ids":[1,2]}` {
		t.Errorf("%s, %v", b, err)
	}
	b, err = MarshalWith(Message{Role: "user"}, struct {
		X int `json:"x,omitempty"`
	}{})
	if err != nil || string(b) != `{"role":"user","content":""}` {
		t.Errorf("no extra members: %s, %v", b, err)
	}
	if _, err := MarshalWith(Message{Role: "user"}, []int{1}); err == nil {
		t.Error("extra fields that are not an object accepted")
	}
}

func TestToolJSON(t *testing.T) {
	tool := Tool{Name: "f", Description: "d <x>", Parameters: `{"type":"object", "properties":{"z":{},"a":{}}}`}
	b, err := tool.MarshalJSON()
	want := `{"type":"function","function":{"name":"f","description":"d <x>","parameters":{"type":"object","properties":{"z":{},"a":{}}}}}`
	if err != nil || string(b) != want {
		t.Fatalf("%s, %v\nwant %s", b, err, want)
	}
	var back Tool
	if err := json.Unmarshal(b, &back); err != nil || back != (Tool{Type: "function", Name: "f", Description: "d <x>", Parameters: `{"type":"object","properties":{"z":{},"a":{}}}`}) {
		t.Errorf("read back %+v, %v", back, err)
	}
	if b, err := json.Marshal(Tool{Name: "g"}); err != nil || string(b) != `{"type":"function","function":{"name":"g"}}` {
		t.Errorf("bare tool: %s, %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"function":{"name":"g","parameters":null}}`), &back); err != nil || back != (Tool{Type: "function", Name: "g"}) {
		t.Errorf("null parameters: %+v, %v", back, err)
	}
	if _, err := (Tool{Name: "h", Parameters: "{"}).MarshalJSON(); err == nil || !strings.Contains(err.Error(), `tool "h": parameters are not valid JSON`) {
		t.Errorf("invalid parameters: %v", err)
	}
}

func TestForAPI(t *testing.T) {
	r := ptr("why")
	for _, tc := range []struct{ in, want Message }{
		{Message{Role: "assistant", Content: "x", ReasoningContent: r}, Message{Role: "assistant", Content: "x"}},
		{Message{Role: "tool", Name: "f", ToolCallID: "c", Content: "ok"}, Message{Role: "tool", ToolCallID: "c", Content: "ok"}},
		{Message{Role: "user", Name: "bob", Content: "hi"}, Message{Role: "user", Name: "bob", Content: "hi"}},
		{Message{Role: "assistant", ToolCalls: []ToolCall{{Name: "f"}}}, Message{Role: "assistant", ContentJSON: json.RawMessage("null"), ToolCalls: []ToolCall{{Name: "f"}}}},
	} {
		if got := tc.in.ForAPI(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ForAPI(%+v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
