package chattemplate

import "testing"

// TestCallerArgumentsChecked: caller() called with more positional
// arguments than its call block has parameters, or with a keyword
// argument none of them names, fails with jinja2's TypeError ("macro None
// takes ..."); the engine dropped the arguments and rendered the body.
// So does a call block's call of a template's macro that jinja2 refuses:
// one whose body does not read caller, or arguments it has no parameter
// for (macroCalls, which the call a call block became skipped).
// A call block whose body reads varargs or kwargs takes them there, and
// the calls jinja2 takes render as before. The wants are jinja2 3.1.6's,
// set up as testdata/templates/py/check_jinja2.py sets it up
// (transformers' settings); varargs is a list where jinja2's is a tuple.
func TestCallerArgumentsChecked(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% macro m() %}{{ caller(1) }}{% endmacro %}{% call m() %}x{% endcall %}",
			"error:TypeError: macro None takes not more than 0 argument(s)"},
		{"{% macro m() %}{{ caller(a=1) }}{% endmacro %}{% call m() %}x{% endcall %}",
			"error:TypeError: macro None takes no keyword argument 'a'"},
		{"{% macro m() %}{{ caller(1, 2) }}{% endmacro %}{% call(a) m() %}{{ a }}{% endcall %}",
			"error:TypeError: macro None takes not more than 1 argument(s)"},
		{"{% macro m() %}{{ caller(b=2) }}{% endmacro %}{% call(a) m() %}{{ a }}{% endcall %}",
			"error:TypeError: macro None takes no keyword argument 'b'"},
		{"{% macro m() %}{{ caller(caller=1) }}{% endmacro %}{% call m() %}x{% endcall %}",
			"error:TypeError: macro None was invoked with two values for the special caller argument. This is most likely a bug."},
		{"{% macro m() %}hi{% endmacro %}{% call m() %}x{% endcall %}",
			"error:TypeError: macro 'm' was invoked with two values for the special caller argument. This is most likely a bug."},
		{"{% macro m(a) %}{{ a }}{% endmacro %}{% call(x) m(1, 2) %}x{% endcall %}",
			"error:TypeError: macro 'm' was invoked with two values for the special caller argument. This is most likely a bug."},
		{"{% macro m(a) %}{{ a }}{{ caller() }}{% endmacro %}{% call m(b=1) %}x{% endcall %}",
			"error:TypeError: macro 'm' takes no keyword argument 'b'"},
		{"{% macro m(a) %}{{ a }}{{ caller() }}{% endmacro %}{% call m(1, 2) %}x{% endcall %}",
			"error:TypeError: macro 'm' takes not more than 1 argument(s)"},
		{"{% macro m() %}{{ caller(1, 2, k=3) }}{% endmacro %}{% call(a) m() %}{{ a }}{{ varargs }}{{ kwargs }}{% endcall %}", "1[2]{'k': 3}"},
		{"{% macro m() %}[{{ caller() }}]{% endmacro %}{% call m() %}x{% endcall %}", "[x]"},
		{"{% macro m() %}[{{ caller(2) }}]{% endmacro %}{% call(a, b=5) m() %}{{ a }}{{ b }}{% endcall %}", "[25]"},
		{"{% macro m() %}[{{ caller(b=3, a=1) }}]{% endmacro %}{% call(a, b=5) m() %}{{ a }}{{ b }}{% endcall %}", "[13]"},
		{"{% macro m(t) %}{{ t }}{{ caller() }}{% endmacro %}\n{% call m('T') %}\n  body\n{% endcall %}\nend", "T  body\nend"},
		{"{% macro m() %}{{ caller() }}{% endmacro %}{% for i in [1, 2] %}{% call m() %}{{ i }}{{ loop.index }}{% endcall %}{% endfor %}", "1122"},
	})
}
