package chattemplate

import (
	"encoding/json"
	"testing"
)

// TestPrintsAsPythonStr: {{ }} and the string filter give Python's str()
// of a value, as jinja2 does: floats as their repr inside lists and dicts
// too, None as "None", strings inside containers quoted as Python's repr
// quotes them. The engine printed [1.0] as [1], None as "" and "it's" in
// a list as 'it's', so Qwen3.5's and Qwen3-Coder's tool-call arguments
// (the fifth case is their args_value line: a float argument 1.0 came out
// as 1), LFM2's, MiniCPM3's tool defaults and Hammer 2.1's tools|string
// differed from the prompt the model was trained on. The wants are Python
// jinja2 3.1.6's, set up as transformers sets it up.
func TestPrintsAsPythonStr(t *testing.T) {
	args := json.RawMessage("{\"city\": \"Oslo\", \"scale\": 1.0, \"big\": 1e20, \"tiny\": 1e-05, \"exact\": true, \"none\": null, \"q\": \"it's\", \"both\": \"a'b\\\"c\", \"ws\": \"t\\tn\\nr\\r\\\\\", \"u\": \"é\\u0001\\u200b\\u00a0😀\", \"nested\": {\"w\": [1.0, 2, -0.25]}}")
	cases := []struct{ src, want string }{
		{"{{ [1.0, 2, 'a', none, true] }}", "[1.0, 2, 'a', None, True]"},
		{"{{ none }}|{{ none|string }}|{{ 2.0|string }}|{{ 3|string }}|{{ undefined_name|string }}|{{ true|string }}", "None|None|2.0|3||True"},
		{"{{ args }}", "{'city': 'Oslo', 'scale': 1.0, 'big': 1e+20, 'tiny': 1e-05, 'exact': True, 'none': None, 'q': \"it's\", 'both': 'a\\'b\"c', 'ws': 't\\tn\\nr\\r\\\\', 'u': 'é\\x01\\u200b\\xa0😀', 'nested': {'w': [1.0, 2, -0.25]}}"},
		{"{{ args|string }}", "{'city': 'Oslo', 'scale': 1.0, 'big': 1e+20, 'tiny': 1e-05, 'exact': True, 'none': None, 'q': \"it's\", 'both': 'a\\'b\"c', 'ws': 't\\tn\\nr\\r\\\\', 'u': 'é\\x01\\u200b\\xa0😀', 'nested': {'w': [1.0, 2, -0.25]}}"},
		{"{% for k, v in args|items %}{% set s = v|tojson if v is mapping or (v is sequence and v is not string) else v|string %}<{{ k }}={{ s }}>{% endfor %}", "<city=Oslo><scale=1.0><big=1e+20><tiny=1e-05><exact=True><none=None><q=it's><both=a'b\"c><ws=t\tn\nr\r\\><u=é\u0001\u200b\u00a0😀><nested={\"w\": [1.0, 2, -0.25]}>"},
		{"{{ [[], {}, [none]] }}", "[[], {}, [None]]"},
	}
	for _, c := range cases {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{"args": args}})
		if err != nil || got != c.want {
			t.Errorf("%s:\n got %q (%v)\nwant %q", c.src, got, err, c.want)
		}
	}
}
