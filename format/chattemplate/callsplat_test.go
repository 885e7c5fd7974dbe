package chattemplate

import (
	"strings"
	"testing"
)

// TestCallBlockWithoutParametersSplat: a call block without parameters
// whose call passes *args or **kwargs gives its body to the macro as
// caller, as one with parameters does; the engine lost caller on the
// splat and failed with "caller is not callable". The wants are jinja2
// 3.1.6's, set up as testdata/templates/py/check_jinja2.py sets it up
// (transformers' settings).
func TestCallBlockWithoutParametersSplat(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% macro m(a, b) %}{{ a }}{{ b }}{{ caller() }}{% endmacro %}{% set d = {'a': 1, 'b': 2} %}{% call m(**d) %}x{% endcall %}", "12x"},
		{"{% macro m(a, b) %}{{ a }}{{ b }}{{ caller() }}{% endmacro %}{% call m(*[1, 2]) %}x{% endcall %}", "12x"},
		{"{% macro m(a, b=3) %}{{ a }}{{ b }}{{ caller() }}{% endmacro %}{% call m(1, **{}) %}x{% endcall %}|{% call m(1) %}y{% endcall %}", "13x|13y"},
	})
}

// TestMacroParameterListEmptyPlaceRefused: a macro's or a call block's
// parameter list with a trailing or doubled comma is refused at load, as
// jinja2 refuses it ("expected token 'name', got ')'"); the engine took
// it, so a template that jinja2 (and so transformers) cannot load
// rendered here.
func TestMacroParameterListEmptyPlaceRefused(t *testing.T) {
	for _, src := range []string{
		"{% macro m(x,) %}{{ x }}{% endmacro %}{{ m(1) }}",
		"{% macro m(x,, y) %}{{ x }}{% endmacro %}{{ m(1) }}",
		"{% macro m() %}{{ caller(1) }}{% endmacro %}{% call(x,) m() %}{{ x }}{% endcall %}",
		"{% macro m() %}{{ caller(1) }}{% endmacro %}{% call(,) m() %}{% endcall %}",
	} {
		_, err := New(src, nil)
		if err == nil || !strings.Contains(err.Error(), "expected token 'name'") {
			t.Errorf("%s: %v; want it refused as jinja2 refuses it", src, err)
		}
	}
	// An empty list stays a list of no parameters.
	renderEach(t, []struct{ src, want string }{
		{"{% macro m() %}a{{ caller() }}{% endmacro %}{{ m(caller=m) if false }}{% call() m() %}b{% endcall %}", "ab"},
	})
}

// TestSplatCallOfMacroChecked: a call with *args or **kwargs of a macro
// that reads neither varargs nor kwargs fails with jinja2's TypeError
// where the spread arguments are more than its parameters or name one it
// has not (f(**{'a': 1, 'b': 2}) of f(a): "takes no keyword argument
// 'b'"); the engine dropped them and rendered. Calls jinja2 takes render
// as before, and a macro that reads kwargs or varargs takes the rest. The
// outcomes are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up (transformers'
// settings).
func TestSplatCallOfMacroChecked(t *testing.T) {
	const f = "{% macro f(a) %}{{ a }}{% endmacro %}"
	renderEach(t, []struct{ src, want string }{
		{f + "{{ f(**{'a': 1, 'b': 2}) }}", "error:TypeError: macro 'f' takes no keyword argument 'b'"},
		{f + "{{ f(*['x', 'y']) }}", "error:TypeError: macro 'f' takes not more than 1 argument(s)"},
		{f + "{{ f(1, **{'a': 2}) }}", "error:TypeError: macro 'f' takes no keyword argument 'a'"},
		{f + "{% set d = {'a': 1, 'z': 0} %}{% for x in [1] %}{{ f(**d) }}{% endfor %}", "error:takes no keyword argument 'z'"},
		{"{% macro f(a, b=2) %}{{ a }}{{ b }}{% endmacro %}{{ f(**{'a': 1, 'b': 3}) }}|{{ f(*[1, 4]) }}|{{ f(*[5], **{'b': 6}) }}|{{ f(7, **{}) }}", "13|14|56|72"},
		{"{% macro f(a) %}{{ a }}{{ kwargs }}{% endmacro %}{{ f(**{'a': 1, 'b': 2}) }}", "1{'b': 2}"},
		{f + "{{ [f(*[1])] }}{{ f  (*[2]) }}{{ f(*[f(*[3])]) }}", "['1']23"},
		{f + "{{ f(*[f(*[3, 4])]) }}", "error:macro 'f' takes not more than 1 argument(s)"},
		{"{% macro f(a) %}{{ a }}{{ caller() }}{% endmacro %}{% call f(**{'a': 1}) %}x{% endcall %}", "1x"},
		{"{% macro f() %}{{ varargs|length }}{% endmacro %}{{ f(*[1, 2]) }}", "2"},
	})
}
