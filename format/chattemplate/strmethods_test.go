package chattemplate

import (
	"encoding/json"
	"testing"
)

// TestStringMethodsArePython: the str methods chat templates call behave as
// Python's, which transformers' jinja2 calls. The engine's split ignored
// maxsplit (and had no rsplit), its lstrip()/rstrip() stripped only
// " \t\n\r" and strip() missed U+001C..U+001F, and startswith/endswith took
// neither a tuple of prefixes nor start/end. The wants are Python 3's:
//
//	'a,b,c'.split(',', 1)          -> ['a', 'b,c']
//	'a,b,c'.rsplit(',', 1)         -> ['a,b', 'c']
//	'  a b  c  '.split(None, 1)    -> ['a', 'b  c  ']
//	'  a b  c  '.rsplit(None, 1)   -> ['  a b', 'c']
//	'a b c'.split(maxsplit=1)      -> ['a', 'b c']
//	'\x0c\x0bx\u3000\x1c'.lstrip() -> 'x\u3000\x1c'
//	'x\x0c\x0b\u3000\x1f'.rstrip() -> 'x'
//	'\x1cx\x1d'.strip()            -> 'x'
//	'hello'.startswith(('x','he')), 'hello'.endswith(('lo','x')),
//	'hello'.startswith('l', 2), 'hello'.endswith('ell', 0, 4) -> True
func TestStringMethodsArePython(t *testing.T) {
	cases := []struct{ src, want string }{
		{`{{ 'a,b,c'.split(',', 1) }}`, `['a', 'b,c']`},
		{`{{ 'a,b,c'.rsplit(',', 1) }}`, `['a,b', 'c']`},
		{`{{ '  a b  c  '.split(none, 1) }}`, `['a', 'b  c  ']`},
		{`{{ '  a b  c  '.rsplit(none, 1) }}`, `['  a b', 'c']`},
		{`{{ 'a b c'.split(maxsplit=1) }}`, `['a', 'b c']`},
		{`{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}`, `['a', 'b', '', 'c']|['a', 'b']`},
		{`{{ x.lstrip() }}|{{ y.rstrip() }}|{{ z.strip() }}`, "x\u3000\x1c|x|x"},
		{`{{ 'xxaxx'.strip('x') }}{{ 'xxa'.lstrip('x') }}{{ 'axx'.rstrip('x') }}`, "aaa"},
		{`{{ 'hello'.startswith(('x', 'he')) }} {{ 'hello'.endswith(('lo', 'x')) }}`, "True True"},
		{`{{ 'hello'.startswith('l', 2) }} {{ 'hello'.endswith('ell', 0, 4) }} {{ 'hello'.startswith('he', 1) }}`, "True True False"},
		{`{{ m.content.split('</think>')[-1].lstrip('\n') }}`, "ok"},
		{`{% set parts = m.content.split('</think>', 1) %}{{ parts|length }}`, "2"},
		{`{% if not m.content.startswith('<think>') %}no{% else %}yes{% endif %}`, "yes"},
		{`{% for w in 'a b  c'.split(' ', 1) %}[{{ w }}]{% endfor %}`, "[a][b  c]"},
		{`{{ "it's.split(',', 1)" }}`, "it's.split(',', 1)"},
	}
	for _, c := range cases {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{
			"x": "\x0c\x0bx\u3000\x1c", "y": "x\x0c\x0b\u3000\x1f", "z": "\x1cx\x1d",
			"m": json.RawMessage(`{"content": "<think>\nabc\n</think>\n\nok"}`),
		}})
		if err != nil || got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.src, got, err, c.want)
		}
	}
}
