package chattemplate

import "testing"

// TestAttributeOfUndefinedName: an attribute or item of a name that is
// not defined (x.y, x['y'], x.y.z, in any expression) fails the rendering
// with jinja2's UndefinedError, "'x' is undefined"; the engine gave ""
// and went on, so a misspelt variable (mesage.content) became silently
// wrong training text. A name that is defined, a test of the name itself
// and an attribute behind a guard that short-circuits render as before.
// The outcomes are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up (transformers'
// settings).
func TestAttributeOfUndefinedName(t *testing.T) {
	const undefined = "error:'x' is undefined"
	renderEach(t, []struct{ src, want string }{
		{"{{ x.y }}", undefined},
		{"{{ x['y'] }}", undefined},
		{"{{ x.y.z }}", undefined},
		{"{% if x.y %}a{% endif %}", undefined},
		{"{{ x.y is defined }}", undefined},
		{"{{ x.y | default('d') }}", undefined},
		{"{{ 'a' ~ x.y }}", undefined},
		{"{% for m in x.items %}{% endfor %}", undefined},
		{"{{ [1] | join(x.y) }}", undefined},
		{"{% if false %}{% set x = {} %}{% endif %}{{ x.y }}", undefined},
		{"{% macro m(a) %}{{ a.b }}{% endmacro %}{{ m() }}", "error:'a' is undefined"},
		{"{{ x is defined }}", "False"},
		{"{% set x = none %}{{ x.y }}|{{ messages[0] }}", "|"},
		{"{% set y = {} %}{{ y.z }}", ""},
		{"{% if x is defined and x.y %}a{% endif %}b", "b"},
		{"{{ x.y if x is defined else 'n' }}", "n"},
		{"{% for m in [{'a': 1}] %}{{ m.b }}{% endfor %}", ""},
		{"{% set ns = namespace(a=1) %}{% set ns.a = 2 %}{{ ns.a }}", "2"},
		{"{{ 'ab'.upper() }}", "AB"},
		{"{% for a in [1] %}{{ loop.index }}{% endfor %}", "1"},
	})
}
