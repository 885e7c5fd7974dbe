package chattemplate

import (
	"encoding/json"
	"testing"
)

// TestDictsortAsJinja2: dictsort sorts as jinja2's does. The engine's
// sorted keys as case-sensitive strings and ignored case_sensitive and by,
// and a dict literal's integer keys became strings, so Seed-OSS's
// template, which looks up its thinking budget's reflection interval in
// {0: 0, 512: 128, 1024: 256, ...}|dictsort, took "1024" before "512" and
// told a model with thinking_budget=300 to reflect every 256 tokens where
// transformers says 128. The wants are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py does:
//
//	env.from_string(src).render()
func TestDictsortAsJinja2(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% for k, v in {0: 0, 512: 128, 1024: 256, 2048: 512, 16384: 1024}|dictsort %}{{ k }}={{ v }};{% endfor %}", "0=0;512=128;1024=256;2048=512;16384=1024;"},
		{"{% set d = {0: 0, 512: 128, 1024: 256} %}{% set ns = namespace(i=none) %}{% for k, v in d|dictsort %}{% if ns.i is none and 300 <= k %}{% set ns.i = v %}{% endif %}{% endfor %}{{ ns.i }}", "128"},
		{"{% set d = {2: 'x', 10: 'y'} %}{{ d[10] }}{% for k, v in d|dictsort %}{{ k + 1 }};{% endfor %}", "y3;11;"},
		{"{% for k, v in {-1: 'a', 3: 'b', -20: 'c'}|dictsort %}{{ k }}{{ v }};{% endfor %}", "-20c;-1a;3b;"},
		// String keys stay strings, however they read.
		{"{% for k, v in {'10': 1, '9': 2}|dictsort %}{{ k }}{{ v }};{% endfor %}", "101;92;"},
		{"{% for k, v in {'B': 1, 'a': 2}|dictsort %}{{ k }};{% endfor %}", "a;B;"},
		{"{% for k, v in {'B': 1, 'a': 2}|dictsort(true) %}{{ k }};{% endfor %}", "B;a;"},
		{"{% for k, v in {'B': 1, 'a': 2}|dictsort(case_sensitive=true, reverse=true) %}{{ k }};{% endfor %}", "a;B;"},
		{"{% for k, v in {'b': 1, 'A': 2, 'c': 0}|dictsort(reverse=true) %}{{ k }}{{ v }};{% endfor %}", "c0;b1;A2;"},
		{"{% for k, v in {'b': 1, 'A': 2, 'c': 0}|dictsort(by='value') %}{{ k }}{{ v }};{% endfor %}", "c0;b1;A2;"},
		{"{% for k, v in {'x': 'B', 'y': 'a'}|dictsort(false, 'value') %}{{ k }};{% endfor %}", "y;x;"},
		{"{% for k, v in {'x': 2, 'y': 1.5, 'z': true}|dictsort(by='value') %}{{ k }};{% endfor %}", "z;y;x;"},
		{"{% for k, v in {'x': 'a', 'y': 1}|dictsort(by='value') %}{{ k }};{% endfor %}", "error:'<' not supported"},
		{"{{ {'b': 1}|dictsort(by='nope') }}", `error:You can only sort by either "key" or "value"`},
	})
}

// TestDictsortIntKeysOnlyWhereWritten: a dict from the conversation
// (JSON, so string keys) is sorted as strings even when the keys read as
// integers and the template writes an integer key somewhere else. The
// int-key reading was switched on for the whole template by any text
// matching "{…, 12:" — a date in literal text, a string literal, or an
// unrelated {512: …} — and then sorted {"10": …, "9": …} as 9, 10 where
// jinja2 gives 10, 9. The wants are jinja2 3.1.6's, rendered as
// testdata/templates/py/check_jinja2.py sets it up, with
// ids={"10": "a", "9": "b"}.
func TestDictsortIntKeysOnlyWhereWritten(t *testing.T) {
	const loop = "{% for k, v in ids|dictsort %}{{ k }}{{ v }};{% endfor %}"
	for _, c := range []struct{ src, want string }{
		{"Today, 12:00." + loop, "Today, 12:00.10a;9b;"},
		{`{{ "{1, 12: x}" }}` + loop, "{1, 12: x}10a;9b;"},
		{"{% set lens = {512: 1, 10: 2} %}" + loop + "|{% for k, v in lens|dictsort %}{{ k }}{{ v }};{% endfor %}", "10a;9b;|102;5121;"},
	} {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{"ids": json.RawMessage(`{"10": "a", "9": "b"}`)}})
		if err != nil || got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.src, got, err, c.want)
		}
	}
}
