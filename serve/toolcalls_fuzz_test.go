package serve

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// renderCall writes one call as the model would: {"name", argKey} with
// the arguments' JSON as given, without HTML escaping (models write "<"
// as it is).
func renderCall(name, argKey, args string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"name": name, argKey: json.RawMessage(args)}); err != nil {
		panic(err) // args was checked to be valid JSON
	}
	return strings.TrimSpace(buf.String())
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b string) bool {
	var va, vb any
	return json.Unmarshal([]byte(a), &va) == nil && json.Unmarshal([]byte(b), &vb) == nil && reflect.DeepEqual(va, vb)
}

// FuzzParseToolCalls: a call written in the Hermes markup between any
// text, or as Llama 3 JSON (two calls joined by ";"), is parsed back with
// its name and arguments, the text around a Hermes call kept as the
// content; and any output at all parses without a panic into calls that
// have a name among those offered. testdata/fuzz/FuzzParseToolCalls
// holds the inputs it has failed on.
func FuzzParseToolCalls(f *testing.F) {
	for _, s := range []struct {
		pre, name, args, post string
		llama                 bool
	}{
		{"Let me check.\n", "search", `{"q": "weather"}`, "", false},
		{"", "write_file", `{"path": "a.md", "text": "<tool_call>{\"name\": \"f\"}</tool_call>"}`, "\nDone.", false},
		{"", "get_time", `{}`, "", true},
		{"<tool_call>{oops}", "a", `{"x": [1, {"y": null}]}`, "tail", false},
	} {
		f.Add(s.pre, s.name, s.args, s.post, s.llama)
	}
	f.Fuzz(func(t *testing.T, pre, name, args, post string, llama bool) {
		names := map[string]bool{name: true}
		for _, text := range []string{pre, post, args} {
			for _, offered := range []map[string]bool{nil, names} {
				_, calls := parseToolCalls(text, offered)
				for _, c := range calls {
					if c.Name == "" || offered != nil && !offered[c.Name] {
						t.Fatalf("parseToolCalls(%q, %v): call %+v", text, offered, c)
					}
				}
			}
		}
		args = strings.TrimSpace(args)
		if name == "" || !utf8.ValidString(name) || !json.Valid([]byte(args)) || !strings.HasPrefix(args, "{") {
			return
		}
		if llama {
			one := renderCall(name, "parameters", args)
			text := one + "; " + one
			content, calls := parseToolCalls(text, names)
			if content != "" || len(calls) != 2 || calls[0] != calls[1] || calls[0].Name != name || !sameJSON(calls[0].Arguments, args) {
				t.Fatalf("parseToolCalls(%q) = %q, %+v; want two calls of %s(%s)", text, content, calls, name, args)
			}
			return
		}
		if strings.Contains(pre, "<tool_call>") || strings.Contains(post, "<tool_call>") {
			return // then the text holds other calls, or other text, in the markup
		}
		text := pre + "<tool_call>\n" + renderCall(name, "arguments", args) + "\n</tool_call>" + post
		content, calls := parseToolCalls(text, names)
		if len(calls) != 1 || calls[0].Name != name || !sameJSON(calls[0].Arguments, args) || content != strings.TrimSpace(pre+post) {
			t.Fatalf("parseToolCalls(%q) = %q, %+v; want %q and a call of %s(%s)", text, content, calls, strings.TrimSpace(pre+post), name, args)
		}
	})
}
