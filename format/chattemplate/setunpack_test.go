package chattemplate

import (
	"errors"
	"strings"
	"testing"
)

// TestSetUnpacksTuple: {% set a, b = value %} assigns each name its item
// of the value, as jinja2 does, with the same whitespace control as one
// set; the engine refused `set a, b = 1, 2` at load and set nothing from
// `set a, b = [3, 4]` (both names stayed undefined). The wants are
// jinja2 3.1.6's, rendered as testdata/templates/py/check_jinja2.py sets
// it up.
func TestSetUnpacksTuple(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"A\n  {% set a, b = 1, 2 %}\nB{{ a }}{{ b }}\n{%- set (c, d) = [3, 4] -%}\n  C{{ c }}{{ d }}{% set e, f = 'xy' %}{{ e }}{{ f }}|" +
			"{% for i in [1] %}{% set h, k = i, i + 1 %}{{ h }}{{ k }}{% endfor %}|{% set m, n = {'p': 1, 'q': 2} %}{{ m }}{{ n }}|{% set u, v = (1, 2) %}{{ u + v }}",
			"A\nB12C34xy|12|pq|3"},
		{"{% set a, b = 1, 2, %}{{ a }}|{% set ns = namespace(x=1) %}{% set ns.x, y = 1, 2 * 3 %}{{ ns.x }}{{ y }}", "1|16"},
		{"{% set a, b = [1, 2, 3] %}", "error:too many values to unpack (expected 2)"},
		{"{% set a, b = [1] %}", "error:not enough values to unpack (expected 2, got 1)"},
		{"{% set a, b = 1 %}", "error:cannot unpack non-iterable int object"},
	})
}

// TestSetUnpackWithoutValue: {% set a, b = %} is jinja2's syntax error
// ("Expected an expression"), refused at load naming its line; it was
// refused as a bug of the rewriting ("please report this as a bug"),
// which is not ErrBadTemplate.
func TestSetUnpackWithoutValue(t *testing.T) {
	for _, src := range []string{"a\n{% set a, b = %}", "a\n{%- set (a, b) =  -%}"} {
		_, err := New(src, nil)
		if !errors.Is(err, ErrBadTemplate) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: New = %v, want ErrBadTemplate naming line 2", src, err)
		}
	}
}
