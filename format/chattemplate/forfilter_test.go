package chattemplate

import (
	"encoding/json"
	"testing"
)

// TestPairLoopFilter: a loop that unpacks two names filters its items with
// both bound, as in jinja2. The engine bound only the second (to the whole
// pair), so Mistral's tool loop (the first case, from the chat templates
// of Mistral-7B-Instruct-v0.3 and Mistral-Small-3.1) kept the tool's
// "return" schema and printed it into the prompt. The wants are Python
// jinja2 3.1.6's, set up as transformers sets it up.
func TestPairLoopFilter(t *testing.T) {
	tool := json.RawMessage(`{"name": "f", "description": "d", "parameters": {"type": "object"}, "return": {"type": "number"}}`)
	cases := []struct{ src, want string }{
		{`{%- for key, val in tool.items() if key != "return" %}{{ key }}{% if not loop.last %},{% endif %}{% endfor %}`, "name,description,parameters"},
		{`{% for k, v in tool|items if v is string and k|length > 1 %}{{ loop.index }}{{ k }}={{ v }};{% endfor %}`, "1name=f;2description=d;"},
		{`{% for k, v in tool|items if k not in ["name", "return"] and tool.name == "f" %}{{ k }}{{ loop.length }}{% else %}none{% endfor %}`, "description2parameters2"},
		{`{% for a, b in [[1, 2], [3, 4]] if b > 2 and a is odd %}{{ a }}{{ b }}{% endfor %}`, "34"},
		{`{% set k = "x" %}{% for k, v in tool|items if k == "name" %}{{ k }}{% endfor %}{{ k }}`, "namex"},
	}
	for _, c := range cases {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{"tool": tool}})
		if err != nil || got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.src, got, err, c.want)
		}
	}
}

// TestReplaceNames: only the loop's variables are replaced, not attributes,
// filter or test names, keyword arguments or text in strings.
func TestReplaceNames(t *testing.T) {
	names := map[string]string{"k": "(v[0])", "v": "(v[1])"}
	got := replaceNames(` k.k != 'k' and v|k(k=k) and k is k and v is not v and kv == k2 and "v\"v" ~ v`, names)
	want := ` (v[0]).k != 'k' and (v[1])|k(k=(v[0])) and (v[0]) is k and (v[1]) is not v and kv == k2 and "v\"v" ~ (v[1])`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
