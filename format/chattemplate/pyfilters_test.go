package chattemplate

import (
	"strings"
	"testing"
)

// renderEach renders each case's template with no messages and compares
// with its want; a want starting with "error:" wants an error holding the
// rest.
func renderEach(t *testing.T, cases []struct{ src, want string }) {
	t.Helper()
	for _, c := range cases {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{})
		if msg, ok := strings.CutPrefix(c.want, "error:"); ok {
			if err == nil || !strings.Contains(err.Error(), msg) {
				t.Errorf("%s: got %q (%v), want an error with %q", c.src, got, err, msg)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.src, got, err, c.want)
		}
	}
}

// TestListOfDictIsKeys: d|list is the dict's keys in order, as Python's
// list(d); the engine gave [d]. The wants are jinja2 3.1.6's, rendered in
// an ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
// as testdata/templates/py/check_jinja2.py sets it up:
//
//	env.from_string(src).render()
func TestListOfDictIsKeys(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ {'b': 1, 'a': 2}|list }}", "['b', 'a']"},
		{"{% for k in {'b': 1, 'a': 2} | list %}{{ k }};{% endfor %}", "b;a;"},
		{"{{ ({'b': 1, 'a': 2}|list)[1] }}", "a"},
		{"{{ {}|list|length }}", "0"},
		{"{{ 'ab'|list }}", "['a', 'b']"},
		{"{{ [1, 2]|list }}", "[1, 2]"},
		{"{{ nothing|list }}", "[]"},
		{"{{ 'a|list' }}{# x|list #}{% raw %}{{ d|list }}{% endraw %}", "a|list{{ d|list }}"},
		{"{% set l = [1]|list %}{{ l }}", "[1]"},
		{"{{ 3|list }}", "error:not iterable"},
	})
}

// TestRoundAsPython: round is jinja2's: 'common' is Python's round()
// (halves to even on the float's exact value, an int stays an int), and
// 'floor' and 'ceil' are taken; the engine rounded halves away from zero,
// made ints floats and ignored the method. Wants produced as for
// TestListOfDictIsKeys.
func TestRoundAsPython(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ 2.5|round }}", "2.0"},
		{"{{ 3.5|round }}", "4.0"},
		{"{{ 0.5|round }}", "0.0"},
		{"{{ 2.675|round(2) }}", "2.67"},
		{"{{ 1.25|round(1) }}", "1.2"},
		{"{{ 2.5|round(0, 'floor') }}", "2.0"},
		{"{{ 2.1|round(0, 'ceil') }}", "3.0"},
		{"{{ 2.13|round(1, 'ceil') }}", "2.2"},
		{"{{ 2.19|round(method='floor', precision=1) }}", "2.1"},
		{"{{ 7|round }}", "7"},
		{"{{ 7|round(2) }}", "7"},
		{"{{ 7|round(method='floor') }}", "7.0"},
		{"{{ 1234.5|round(-2) }}", "1200.0"},
		{"{% set x = 2.5|round %}{{ x }}", "2.0"},
		{"{{ 2.5|round(0, 'up') }}", "error:method must be common, ceil or floor"},
		{"{{ 'x'|round }}", "error:not a number"},
	})
}

// TestIntFilterAsPython: int is jinja2's, Python's int(s, base) with
// int(float(s)) and then the default to fall back on; the engine took no
// base and read a number off the front of any string. Wants produced as
// for TestListOfDictIsKeys.
func TestIntFilterAsPython(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ '1A'|int(base=16) }}|{{ '0x1A'|int(0, 16) }}|{{ '0x1A'|int(base=0) }}|{{ '0b101'|int(0, 2) }}|{{ '0o17'|int(0, 8) }}|{{ 'z'|int(7, 36) }}", "26|26|26|5|15|35"},
		{"{{ '42'|int }}|{{ ' 42 '|int }}|{{ '-42'|int }}|{{ '+7'|int }}|{{ '1_000'|int }}|{{ '42.73'|int }}|{{ '-4.7'|int }}|{{ '1e3'|int }}", "42|42|-42|7|1000|42|-4|1000"},
		{"{{ '12abc'|int }}|{{ 'abc'|int }}|{{ 'abc'|int(5) }}|{{ ''|int }}|{{ '017'|int }}|{{ '017'|int(base=0) }}|{{ '1__0'|int }}|{{ '_10'|int }}", "0|0|5|0|17|17|0|0"},
		{"{{ 4.9|int }}|{{ -4.9|int }}|{{ true|int }}|{{ none|int }}|{{ [1]|int }}|{{ 7|int }}|{{ 'nan'|int }}|{{ '0x1A'|int }}", "4|-4|1|0|0|7|0|0"},
		{"{{ '1A'|int(default=3) }}|{{ '9'|int(base=8) }}|{{ 'ff'|int(0, base=16) }}|{{ 'inf'|int }}|{{ 'print'|length }}", "3|9|255|0|5"},
		{"{{ nothing|int }}", "error:undefined"},
	})
}
