package chattemplate

import "testing"

// TestCallBlockCallerBeforeSplat: a call block with parameters passes its
// body to the call as caller, a keyword argument, which must come before
// a *args or **kwargs argument of the call as jinja2's grammar orders
// them; written after them, {% call(x) m(**d) %} was refused at load as
// an internal error ("please report this as a bug"). The wants are
// jinja2 3.1.6's, set up as testdata/templates/py/check_jinja2.py sets it
// up (transformers' settings).
func TestCallBlockCallerBeforeSplat(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% macro m(a) %}[{{ caller(a) }}]{% endmacro %}{% call(x) m(**{'a': 1}) %}{{ x }}{% endcall %}|{% call(x, y='d') m(*[2]) %}{{ x }}{{ y }}{% endcall %}", "[1]|[2d]"},
		{"{% macro m(a, b) %}[{{ caller(a) }}{{ b }}]{% endmacro %}{% call(x) m(1, **{'b': 2}) %}{{ x }}{% endcall %}|{% call(x) m(*[1], **{'b': 2}) %}{{ x }}{% endcall %}|{% call(x) m(a=3, **{'b': 4}) %}{{ x }}{% endcall %}|{% call(x) m(*[5], b=6) %}{{ x }}{% endcall %}", "[12]|[12]|[34]|[56]"},
	})
}
