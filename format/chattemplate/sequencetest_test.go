package chattemplate

import "testing"

// TestSequenceAndIterableTests: `is sequence` is true of a string, a dict,
// a list and an undefined value, and `is iterable` of an undefined value,
// as in jinja2 (Python's len() and [] work on them; jinja2's Undefined is
// empty); the engine said false, so a template that loops over a content
// given as a string when it `is sequence` skipped it. Numbers, None, bools,
// macros and the loop object stay false. The outcomes are jinja2 3.1.6's,
// set up as testdata/templates/py/check_jinja2.py sets it up.
func TestSequenceAndIterableTests(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ 'abc' is sequence }}{{ {} is sequence }}{{ [] is sequence }}{{ 1 is sequence }}{{ none is sequence }}{{ nothing is sequence }}{{ 1.5 is sequence }}{{ true is sequence }}",
			"TrueTrueTrueFalseFalseTrueFalseFalse"},
		{"{{ 'abc' is not sequence }}{{ {'a': 1} is not sequence }}{% if 'x' is sequence and 'x' is not string %}A{% else %}B{% endif %}", "FalseFalseB"},
		{"{{ nothing is iterable }}{{ none is iterable }}{{ 'a' is iterable }}{{ {} is iterable }}", "TrueFalseTrueTrue"},
		{"{% set x = {'a': 'b'} %}{{ x.a is sequence }}{{ x.zz is sequence }}", "TrueTrue"},
		{"{% macro m() %}{% endmacro %}{{ m is sequence }}{% for i in [1] %}{{ loop is sequence }}{% endfor %}", "FalseFalse"},
	})
}
