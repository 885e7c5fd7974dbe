package chattemplate

import "testing"

// TestMacroDefaultPythonOps: a macro's default value is evaluated with
// Python's operators and jinja2's undefined checks, as every other
// expression is (pyOps); the engine evaluated it as written, so 2 ** 3
// gave 8.0, 1 + 'x' gave "1x" and x.y with x undefined gave "" where
// jinja2 gives 8 or raises. A default is evaluated only for a parameter
// left out, and may read the parameters before it. The wants are jinja2
// 3.1.6's, set up as testdata/templates/py/check_jinja2.py sets it up
// (transformers' settings).
func TestMacroDefaultPythonOps(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% macro m(a=2 ** 3) %}{{ a }}{% endmacro %}{{ m() }}", "8"},
		{"{% macro m(a=x.y) %}[{{ a }}]{% endmacro %}{{ m() }}", "error:UndefinedError: 'x' is undefined"},
		{"{% macro m(a=x.y) %}[{{ a }}]{% endmacro %}{{ m(1) }}", "[1]"},
		{"{% macro m(a=1 + 'x') %}{{ a }}{% endmacro %}{{ m() }}", "error:TypeError: unsupported operand type(s) for +: 'int' and 'str'"},
		{"{% macro m(a=1 + 'x') %}{{ a }}{% endmacro %}{{ m(1) }}", "1"},
		{"{% macro m(a=-x) %}{{ a }}{% endmacro %}{{ m() }}", "error:undefined"}, // jinja2: 'x' is undefined
		{"{% set d = {} %}{% macro m(a=d.x.y) %}{{ a }}{% endmacro %}{{ m() }}", "error:'dict object' has no attribute 'x'"},
		{"{% macro m(a, b=a * 2) %}{{ a }}{{ b }}{% endmacro %}{{ m(2) }}|{{ m(2, 3) }}", "24|23"},
		{"{% macro m(a, b=a.k) %}{{ b }}{% endmacro %}{{ m({'k': 'K'}) }}", "K"},
		{"{% macro m(a=none) %}{{ a }}{% endmacro %}{{ m() }}{{ m(none) }}", "NoneNone"},
		{"{% macro m(a=3 // 2) -%}\n\n  {{ a }}\n{%- endmacro %}\n\n[{{ m() }}]", "\n[1]"},
		{"{% macro m(a=3 // 2) %}\n\n  {{ a }}\n{% endmacro %}\n\n[{{ m() }}]", "\n[\n  1\n]"},
		{"{% macro m(a=2 ** 2) %}{{ a }}{{ varargs|length }}{% endmacro %}{{ m() }}|{{ m(1, 2) }}", "40|11"},
		{"{% macro m() %}{{ caller() }}{% endmacro %}{% call(a=2 ** 2) m() %}{{ a }}{% endcall %}", "4"},
		{"{% macro m(s=\"-\" * -1) %}[{{ s }}]{% endmacro %}{{ m() }}", "[]"},
		// Hone's limit, where jinja2 would build the string: the engine
		// built it at once, and was refused at load for it.
		{`{% macro m(s="x" * 1000000000000) %}{{ s }}{% endmacro %}{{ m(1) }}|{{ m() }}`, "error:value bytes limit"},
		{"{% macro m(s=\"x\" *\x1f1000000000000) %}{{ s }}{% endmacro %}{{ m() }}", "error:value bytes limit"},
		{"{% macro m(s=\"x\" *\u00a01000000000000) %}{{ s }}{% endmacro %}{{ m() }}", "error:value bytes limit"},
	})
}
