package chattemplate

import "testing"

// TestMacroVarargsKwargs: a macro whose body reads varargs or kwargs takes
// the positional arguments past its parameters into varargs and the
// keyword arguments it has no parameter for into kwargs, as jinja2's
// does; the engine dropped them and left both names undefined
// (kwargs.items() failed, varargs|length was 0). A macro that reads only
// one of them still refuses what the other would take, with jinja2's
// TypeError. The wants are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up (transformers'
// settings); varargs is a list where jinja2's is a tuple, as every tuple
// of the engine is.
func TestMacroVarargsKwargs(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% macro m() %}{{ varargs|length }}|{{ kwargs|length }}{% endmacro %}{{ m(1, 2, a=3) }}", "2|1"},
		{"{% macro m(a) %}{{ a }}{% for v in varargs %},{{ v }}{% endfor %}{% endmacro %}{{ m(1, 2, 3) }}", "1,2,3"},
		{"{% macro m(a) %}{{ a }}{% for k, v in kwargs.items() %}{{ k }}={{ v }};{% endfor %}{% endmacro %}{{ m(1, x=2) }}", "1x=2;"},
		{"{% macro m(a) %}{{ a }}{{ kwargs }}{% endmacro %}{{ m(1, 2) }}", "error:macro 'm' takes not more than 1 argument(s)"},
		{"{% macro m(a) %}{{ a }}{{ varargs }}{% endmacro %}{{ m(1, b=2) }}", "error:macro 'm' takes no keyword argument 'b'"},
		{"{% macro m() %}{{ varargs|length }}{% endmacro %}{{ m() }}", "0"},
		{"{% macro m(a, b=5) %}{{ a }}{{ b }}{{ varargs|list }}{% endmacro %}{{ m(1) }}|{{ m(1, 2, 3) }}|{{ m(1, b=7) }}", "15[]|12[3]|17[]"},
		{"{% macro m(a) %}{{ kwargs.x | default('none') }}{% endmacro %}{{ m(1) }}{{ m(1, x='X') }}", "noneX"},
		{"{% macro m() %}{{ caller() }}{{ varargs|length }}{% endmacro %}{% call m(1, 2) %}b{% endcall %}", "b2"},
		{"{% macro m() %}{{ varargs|length }}{% endmacro %}{% set f = m %}{{ f(1, 2) }}", "2"},
		{"{% for i in [1] %}{% macro m() %}{{ varargs|join(',') }}{% endmacro %}{{ m(i, 2) }}{% endfor %}", "1,2"},
		{"{% macro m(a) %}{% macro n() %}{{ varargs|length }}{% endmacro %}{{ a }}{{ n(1, 2, 3) }}{% endmacro %}{{ m(0) }}", "03"},
		{"{% macro m(a) %}{{ a }}{{ varargs|length }}{% endmacro %}\n{{ m(1, 2) }}\n", "11"},
		{"{% macro m() -%}\n  {{ kwargs.a }}\n{%- endmacro %}\n[{{ m(a=1) }}]", "[1]"},
		{"{% macro m() %}{{ varargs|length }}{% endmacro %}\n\nX{{ m(1) }}", "\nX1"},
		{"{% macro m() %}{{ varargs|length }}{% endmacro %}  \n\n{% if true %}\n\n{{ m(1) }}{% endif %}", "  \n\n\n1"},
		{"{% macro m() %}{{ varargs|length }}{%- endmacro -%}\n\n  X{{ m(1) }}", "X1"},
		{"{% macro m() %}{{ varargs[0] }}{% endmacro %}{% call m(7) %}{% endcall %}",
			"error:macro 'm' was invoked with two values for the special caller argument. This is most likely a bug."},
	})
}
