package chattemplate

import (
	"errors"
	"strings"
	"testing"
)

// TestSplatCall: a call with *args spreads the list into positional
// arguments, as in jinja2; the engine did not parse it, so AI21 Jamba's
// template ({{- macros_to_call[i](*params_for_macros[i]) -}}) did not
// compile. The wants are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py does.
func TestSplatCall(t *testing.T) {
	const m = "{% macro m(a, b='B') %}{{ a }}-{{ b }}{% endmacro %}"
	renderEach(t, []struct{ src, want string }{
		{m + "{% set ms = [m] %}{% set ps = [[1, 2]] %}{{ ms[0](*ps[0]) }}", "1-2"},
		{m + "{{ m(*[1]) }}|{{ m(*['x', 'y']) }}|{{ m(0, *['z']) }}", "1-B|x-y|0-z"},
		{m + "{{ 'p' + m(*['q']) + 's' }}", "pq-Bs"},
		{m + "{% for p in [[1], [2, 3]] %}[{{ m(*p) }}]{% endfor %}", "[1-B][2-3]"},
		{m + "{% set s = m(*[m(*[1, 2]), 'c']) %}{{ s }}", "1-2-c"},
		// Multiplication and a "(*" in a string are left alone.
		{"{{ 2 * 3 }}|{{ (2) * 3 }}|{{ '(*' }}", "6|6|(*"},
	})
}

// TestSplatFilterCallRefused: a filter's or a test's arguments with *args
// (x|join(*seps), x is eq(*ns)) are refused when the template is
// loaded, as other calls the rewrite does not take are: rewritten like a
// call, x|join|__hone_splat(seps) called join's result, and the template
// loaded and then failed at every render with "str object is not
// callable" (jinja2 renders it). A call after "not" is still a call.
func TestSplatFilterCallRefused(t *testing.T) {
	for _, src := range []string{
		"{{ ['a', 'b']|join(*[',']) }}",
		"{{ ['a', 'b'] | join (*[',']) }}",
		"{{ 6 is eq(*[6]) }}",
		"{{ 6 is not ne(*[3]) }}",
		"{% if 6 is   eq(*[3]) %}x{% endif %}",
	} {
		if _, err := New(src, nil); !errors.Is(err, ErrBadTemplate) {
			t.Errorf("%s: New = %v, want ErrBadTemplate", src, err)
		}
	}
	const m = "{% macro m(a) %}{{ a }}{% endmacro %}"
	renderEach(t, []struct{ src, want string }{
		{m + "{{ not m(*['']) }}|{{ (not m(*['x'])) }}|{{ 'a' is string and m(*['y']) }}", "True|False|y"},
		{m + "{{ this_m(*['q']) if false else m(*['r']) }}", "r"},
	})
}

// TestSplatCallSpacedAndWithKeywords: f (*xs) with blanks before the
// parenthesis, *xs beside keyword arguments (before or after it) and a
// trailing comma are calls jinja2 renders; they were refused when the
// template was loaded ("unexpected token"). A positional argument after
// *xs, or two of them, is jinja2's syntax error and still refused. The
// wants are jinja2 3.1.6's, set up as testdata/templates/py/check_jinja2.py
// does.
func TestSplatCallSpacedAndWithKeywords(t *testing.T) {
	const m = "{% macro m(a, b='B', c='C') %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}"
	renderEach(t, []struct{ src, want string }{
		{m + "{{ m (*[1]) }}|{{ [m] [0] (*[1]) }}|{{ m(*[1],) }}", "1-B-C|1-B-C|1-B-C"},
		{m + "{{ m(*[1], c=3) }}|{{ m(c=3, *[1]) }}|{{ m(0, *[1], c=3) }}", "1-B-3|1-B-3|0-1-3"},
		{m + "{{ m (*[1, 2] , c = 3) }}|{{ m(*[1], c = 1 == 1) }}", "1-2-3|1-B-True"},
		{m + "{{ m\n(*[1], b=m(*[2], c=4)) }}", "1-2-B-4-C"},
		{m + `{% set s = m (*["x"], c="y") %}{{ s }}{% if m (*[1]) %}t{% endif %}`, "x-B-yt"},
	})
	for _, src := range []string{m + "{{ m(*[1], 2) }}", m + "{{ m(*[1], *[2]) }}", m + "{{ m(c=1, 2, *[3]) }}"} {
		if _, err := New(src, nil); !errors.Is(err, ErrBadTemplate) {
			t.Errorf("%s: New = %v, want ErrBadTemplate", src, err)
		}
	}
}

// TestKwargsSplatCall: a call with **kwargs passes the dict's entries as
// keyword arguments, after *args and name=value ones, as jinja2 does; the
// engine refused the template ("unexpected token"). A dict with a key the
// call also names, or a value after ** that is no dict, is jinja2's
// TypeError; ** before another argument is its syntax error, still
// refused when the template is loaded. The wants are jinja2 3.1.6's, set
// up as testdata/templates/py/check_jinja2.py does.
func TestKwargsSplatCall(t *testing.T) {
	const m = "{% macro m(a, b='B', c='C') %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}"
	renderEach(t, []struct{ src, want string }{
		{m + "{{ m(*[1], **{'c': 4}) }}|{{ m(1, **{'c': 4, 'b': 2}) }}|{{ m(**{'a': 0}) }}|{{ m(1, b=2, **{'c': 3}) }}|{{ m(*[1], b=5, **{'c': 3},) }}", "1-B-4|1-2-4|0-B-C|1-2-3|1-5-3"},
		{m + "{% set kw = {'c': 9} %}{{ m(1, **kw) }}|{{ m (2, ** kw) }}|{{ m(**{'a': 'x' * 2}) }}|{{ [m][0](**{'a': 7}) }}", "1-B-9|2-B-9|xx-B-C|7-B-C"},
		{m + "{% set s = m(**{'a': 1}) %}{{ s }}{% if m(**{'a': 2}) == '2-B-C' %}t{% endif %}", "1-B-Ct"},
		{m + "{{ m(c=1, **{'c': 2}) }}", "error:got multiple values for keyword argument 'c'"},
		{m + "{{ m(**[1]) }}", "error:argument after ** must be a mapping, not list"},
		{m + "{{ m(**none) }}", "error:argument after ** must be a mapping, not NoneType"},
	})
	for _, src := range []string{m + "{{ m(**{'z': 1}, a=1) }}", m + "{{ m(**{'a': 1}, 2) }}", m + "{{ m(**{'a': 1}, *[2]) }}", m + "{{ m(**{'a': 1}, **{'b': 1}) }}"} {
		if _, err := New(src, nil); !errors.Is(err, ErrBadTemplate) {
			t.Errorf("%s: New = %v, want ErrBadTemplate", src, err)
		}
	}
}

// TestMacroSplatParameterRefused: a macro defined with *args or **kwargs
// parameters is jinja2's syntax error ("expected token 'name'"). Its
// parameter list was rewritten like a call's arguments, to
// m|__hone_splat(args), so the template loaded and every call of the
// macro failed with "m is not callable"; it is now refused when loaded,
// with an error that quotes the template's own tag. A call with *args in
// a default value is still a call.
func TestMacroSplatParameterRefused(t *testing.T) {
	for _, src := range []string{
		"{% macro m(*args) %}{{ args }}{% endmacro %}{{ m(1) }}",
		"{% macro m(a, **kw) %}{{ a }}{% endmacro %}",
		"x\n{%- macro m(a,\n *rest) -%}{%- endmacro %}",
	} {
		_, err := New(src, nil)
		if !errors.Is(err, ErrBadTemplate) || strings.Contains(err.Error(), "__hone") || !strings.Contains(err.Error(), "macro m(") || !strings.Contains(err.Error(), "*") {
			t.Errorf("%q: New = %v, want ErrBadTemplate quoting the macro's tag", src, err)
		}
	}
	renderEach(t, []struct{ src, want string }{
		{"{% macro f(x) %}<{{ x }}>{% endmacro %}{% macro m(a=f(*['d'])) %}{{ a }}{% endmacro %}{{ m() }}|{{ m(1) }}", "<d>|1"},
	})
}
