package chattemplate

import (
	"errors"
	"strings"
	"testing"
)

// The wants in this file are jinja2 3.1.6's, rendered as
// testdata/templates/py/check_jinja2.py sets it up (transformers'
// settings):
//
//	env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
//	                                    extensions=[jinja2.ext.loopcontrols])
//	env.from_string(src).render()  # an error: type(e).__name__, str(e)

// TestChainedComparisons: a < b < c is (a < b and b < c), as Python reads
// it; the engine compared the bool a < b with c (0 < 7 < 5 was True,
// 1 == 1 == 1 False). Operators inside strings, comments and raw blocks
// stay as written.
func TestChainedComparisons(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ 0 < 3 < 5 }}|{{ 0 < 7 < 5 }}|{{ 1 == 1 == 1 }}|{{ 2 == 2 == 1 }}|{{ 1 < 2 > 0 }}|{{ 3 >= 3 != 4 }}", "True|False|True|False|True|True"},
		{"{% set x = 4 %}{% if 0 <= x < 5 %}in{% else %}out{% endif %}|{% if not 0 <= x < 3 %}not{% endif %}", "in|not"},
		{"{% for i in range(6) if 1 < i <= 3 %}{{ i }}{% endfor %}", "23"},
		{"{% set y = 1 < 2 < 3 %}{{ y }}|{{ [1 < 2 < 0, (0 < 1 < 2)] }}|{{ 'a' if 1 < 2 < 3 else 'b' }}", "True|[False, True]|a"},
		{"{{ 1 < 2 and 2 < 3 }}|{{ 2 in [1, 2] }}|{{ 1 < 2 }}|{{ 'a<b<c' }}|{{ 'x' ~ (1 < 2 < 3) }}", "True|True|True|a<b<c|xTrue"},
		{"{{ -1 < [1, 2]|length < 3 }}|{{ 1 < 2 < 3 < 4 < 5 }}|{{ 1 < 2 < 3 < 0 }}", "True|True|False"},
		{"{% macro f(a, b=1) %}{{ a < b < 2 }}{% endmacro %}{{ f(0) }}|{{ f(1, b=2) }}", "True|False"},
		{"{# 0 < 7 < 5 #}{% raw %}{{ 0 < 7 < 5 }}{% endraw %}{{ '0 < 7 < 5' }}", "{{ 0 < 7 < 5 }}0 < 7 < 5"},
	})
}

// TestArithmeticAsPython: **, //, % and / are Python's: an int power of
// ints is an int (the engine's was a float, 8.0), // and % floor (the
// engine truncated toward zero and cut floats to ints), and a division by
// zero is an error (the engine gave 0.0), as is a number operator on a
// value that is not a number.
func TestArithmeticAsPython(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ 2 ** 3 }}|{{ 2 ** -1 }}|{{ 2.0 ** 3 }}|{{ (-2) ** 3 }}|{{ 2 ** 0.5 }}|{{ 10 ** 18 }}", "8|0.5|8.0|-8|1.4142135623730951|1000000000000000000"},
		{"{{ -7 // 2 }}|{{ 7 // -2 }}|{{ 7 // 2 }}|{{ -7.5 // 2 }}|{{ 7.5 // 2 }}|{{ 1 // 0.1 }}|{{ 6 // 2.0 }}", "-4|-4|3|-4.0|3.0|9.0|3.0"},
		{"{{ -7 % 2 }}|{{ 7 % -2 }}|{{ 7 % 2 }}|{{ -7.5 % 2 }}|{{ 7.5 % 2 }}|{{ 6 % 3 }}|{{ -6 % 3.0 }}", "1|-1|1|0.5|1.5|0|0.0"},
		{"{% for i in range(4) %}{{ loop.index0 % 2 == 0 }},{% endfor %}|{% set n = 9 %}{{ n // 2 * 2 }}|{{ n % 4 % 3 }}|{{ 1 + 7 % 4 * 2 }}", "True,False,True,False,|8|1|7"},
		{"{{ 5 / 2 }}|{{ 4 / 2 }}|{{ -3 / 2 }}|{{ 1 + 2 / 4 }}|{{ (1 + 2) / 4 }}", "2.5|2.0|-1.5|1.5|0.75"},
		{"{{ [1, 2][1] ** 2 }}|{{ {'a': 3}['a'] % 2 }}|{{ [1,2,3]|length // 2 }}|{{ 'x' ~ 2 ** 2 }}", "4|1|1|x4"},
		{"{# 2 ** 3 #}{% raw %}{{ -7 % 2 }}{% endraw %}{{ 'a/b%c**d//e' }}{% set modulo = 3 %}{{ modulo }}", "{{ -7 % 2 }}a/b%c**d//e3"},
		{"{% macro g(x) %}[{{ caller(x) }}]{% endmacro %}{% call(v) g(-7 % 2) %}{{ v ** 2 }}{% endcall %}", "[1]"},
		{"{% set ns = namespace(n=2 ** 3) %}{% set ns.n = ns.n // 3 %}{{ ns.n }}", "2"},
		{"{% for a, b in [(1, 2), (3, 4)] if a % 3 == 1 %}{{ a ** b }};{% endfor %}", "1;"},
		{"{% for x in range(10 // 3) recursive %}{{ x }}{% endfor %}|{{ [1,2,3][1:3 // 1] }}|{{ 'abcdef'[::2 ** 1] }}", "012|[2, 3]|ace"},
		{"{% set t %}{{ 9 % 4 }}{% endset %}{{ t }}|{% if true %}{{ 3 // 2 }}{% elif 1 < 2 < 3 %}x{% endif %}", "1|1"},
		{"{{ 1 / 0 }}", "error:division by zero"},
		{"{{ 1 // 0 }}", "error:integer division or modulo by zero"},
		{"{{ 1 % 0 }}", "error:integer modulo by zero"},
		{"{{ 1.5 % 0 }}", "error:float modulo"},
		{"{{ 0 ** -1 }}", "error:0.0 cannot be raised to a negative power"},
		{"{{ 'a' / 2 }}", "error:unsupported operand"},
		{"{{ nothing // 2 }}", "error:unsupported operand"},
	})
}

// TestConcatAsPython: ~ joins str() of its operands, as jinja2 does, so a
// float keeps its .0 and None prints as None. Functionary v3.2's template
// writes a tool parameter's default and bounds with ~ (the last case is
// its text).
func TestConcatAsPython(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{`{{ 1.0 ~ "" }}|{{ none ~ "x" }}|{{ true ~ false }}|{{ [1.0, none, "a"] ~ "" }}|{{ {"k": 1.5} ~ "" }}`, "1.0|Nonex|TrueFalse|[1.0, None, 'a']|{'k': 1.5}"},
		{`{{ nothing ~ "u" }}|{{ "a~b" ~ 1 }}|{{ 1 ~ (2 + 3) }}|{{ "x" ~ 2 ** 2 }}|{{ (1.5 ~ "")|length }}|{{ "t" ~ 2.0|string }}`, "u|a~b1|15|x4|3|t2.0"},
		{`{% set s = "v" ~ 2.0 %}{{ s }}|{% if "a" ~ 1.0 == "a1.0" %}eq{% endif %}|{% for x in [0.5] %}{{ x ~ "" }}{% endfor %}`, "v2.0|eq|0.5"},
		{`{% set param = {"type": "string", "default": none, "maximum": 2.0} %}` +
			`{%- set default_value = '"' ~ param["default"] ~ '"' -%}{{ " Default=" ~ default_value ~ "." }}` +
			`{%- for field, field_name in [("maximum", "Maximum"), ("minimum", "Minimum")] -%}{%- if field in param -%}{{ " " + field_name ~ "=" ~ param[field] }}{%- endif -%}{%- endfor -%}`,
			` Default="None". Maximum=2.0`},
	})
}

// TestConcatBindsTighterThanAdd: ~ binds tighter than + and -, as jinja2
// parses them (parse_math1 reads its operands with parse_concat), so
// 'Step ' ~ loop.index + ': ' joins the string and the number first and
// then adds a string to it. Read with the engine's precedence, + got the
// number and the string and raised jinja2's TypeError where jinja2
// rendered, and 1 ~ 2 + 3 rendered where jinja2 raises.
func TestConcatBindsTighterThanAdd(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% for i in [1] %}{{ 'Step ' ~ loop.index + ': ' }}{% endfor %}|{% set n = 2 %}{{ 'a' ~ n + 'b' }}|{{ 'a' ~ 'b' + 'c' ~ 'd' }}|{{ 1 ~ 2 + '3' ~ 4 - 0 if false else 'e' }}", "Step 1: |a2b|abcd|e"},
		{"{% set n = 2 %}{% set t = '<' ~ n + '>' %}{{ t }}|{% if 'a' ~ n + 'b' == 'a2b' %}eq{% endif %}|{{ ' ' + 'Max' ~ '=' ~ 2.0 }}", "<2>|eq| Max=2.0"},
		{"{{ 1 ~ 2 + 3 }}", "error:can only concatenate str (not \"int\") to str"},
		{"{{ 'x' ~ 1 - 1 }}", "error:unsupported operand type(s) for -: 'str' and 'int'"},
		{"{{ 1 + 2 ~ 'x' }}", "error:unsupported operand type(s) for +: 'int' and 'str'"},
	})
}

// TestMultiplyAsPython: * is Python's. Numbers multiply whatever their
// size (3 * 2000000 was refused when the template was loaded, as if it
// repeated a string); a string or list repeats by an int on either side
// (3 * 'ab' gave 0, [1] * 2 gave 0, 'x' * -2 crashed the engine), with
// the operators around it read as jinja2 reads them; and any other pair
// is jinja2's TypeError.
func TestMultiplyAsPython(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ 3 * 2000000 }}|{{ 1024 * 1024 * 1024 }}|{{ 2000000 * 3 }}|{{ 3.5 * 2000000 }}", "6000000|1073741824|6000000|7000000.0"},
		{"{{ 'ab' * 3 }}|{{ 3 * 'ab' }}|{{ [1] * 2 }}|{{ 2 * [1, 'a'] }}|{{ 'x' * true }}|{{ true * 3 }}|{{ 'x' * 0 }}|{{ 'x' * -2 }}|{{ 2 * 1.5 }}", "ababab|ababab|[1, 1]|[1, 'a', 1, 'a']|x|3|||3.0"},
		{"{{ 2 * 3 + 1 }}|{{ -2 * 3 }}|{{ 2 * 3 * 4 }}|{{ 2 * 3 ** 2 }}|{{ 'x' * (1 + 2) }}|{{ 1 + 2 * 3 }}|{{ 'a' ~ 'b' * 2 }}|{{ 7 // 2 * 'z' }}|{{ ('q' * 2) | length }}|{{ 'ab' * 2 * 2 }}|{{ 2 ** 2 * 'c' }}",
			"7|-6|24|18|xxx|7|abb|zzz|2|abababab|cccc"},
		{"{% set n = 3 %}{{ ('x' * n)|length }}{{ 'ab' * n + '!' }}{% set s = '-' * (n + 1) %}{{ s }}{{ -n * 2 }}", "3ababab!-----6"},
		{"{{ 2 * -3 }}|{{ 1.5 * 2 }}|{{ true * true }}|{{ false * 2.5 }}|{{ [] * 5 }}|{{ '' * 5 }}", "-6|3.0|1|0.0|[]|"},
		{"{% for i in range(2 * 2) %}{{ i }}{% endfor %}{% if 2 * 2 == 4 %}y{% endif %}{% macro m(a) %}{{ a }}{% endmacro %}{{ m(*['v' * 2]) }}", "0123yvv"},
		{"{{ 'x' * 2.0 }}", "error:can't multiply sequence by non-int of type 'float'"},
		{"{{ 'x' * 'y' }}", "error:can't multiply sequence by non-int of type 'str'"},
		{"{{ [1] * [2] }}", "error:can't multiply sequence by non-int of type 'list'"},
		{"{{ none * 2 }}", "error:unsupported operand type(s) for *: 'NoneType' and 'int'"},
		{"{{ {} * 2 }}", "error:unsupported operand type(s) for *: 'dict' and 'int'"},
		{"{{ nothing * 2 }}", "error:unsupported operand"},
		{"{{ 9223372036854775807 * 2 }}", "error:too large for a 64-bit int"},
	})
}

// TestTestsBindTighterThanOperators: `is` applies a test to the operand
// just before it, as a filter does (jinja2 parses tests with filters,
// tighter than any operator): 2 * 3 is odd is 2 * (3 is odd), 2. The
// engine parsed `is` with the comparisons, so it tested 2 * 3 (False),
// and refused a test's single argument without parentheses (x is
// divisibleby 3, 2 is sameas 2) when the template was loaded.
func TestTestsBindTighterThanOperators(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ 2 * 3 is odd }}|{{ 1 + 2 is odd }}|{{ 'a' ~ 'b' is string }}|{{ not 2 is odd }}|{{ 2 is sameas 2 }}|{{ 3 is not sameas 4 }}|{{ 1 is odd|string }}|{{ [1] is sequence and 2 is odd }}",
			"2|1|aTrue|True|True|True|True|False"},
		{"{% set x = none %}{{ 'a' if x is none else 'b' }}|{% for i in [1, 2, 3] if i is odd %}{{ i }}{% endfor %}|{% if [] is not none and 1 is number %}y{% endif %}|{{ 1 == 1 is true }}|{{ 2 is eq 2 * 2 }}",
			"a|13|y|False|2"},
		{"{{ 2 is eq(2) * 3 }}|{{ 0 < 1 is odd < 2 }}|{% set y = 4 * 1 is odd %}{{ y }}|{{ 'x is odd' }}", "3|True|4|x is odd"},
	})
}

// TestSignBeforeFilter: a sign applies before the filters and tests after
// its operand, as jinja2 reads it: -x|abs is (-x)|abs, 3 where x is 3; the
// engine read -(x|abs), -3, and -3 is odd as -(3 is odd).
func TestSignBeforeFilter(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% set x = 3 %}{{ -x|abs }}|{{ -x|abs * 2 }}|{{ -2|string ~ '!' }}|{{ +x|string }}|{{ - -x|abs }}|{{ -[1, 2][1]|abs }}|{{ -x is odd }}|{{ 1 - x|abs }}|{{ -(x)|string }}|{{ [-x|abs] }}",
			"3|6|-2!|3|3|2|True|-2|-3|[3]"},
		{"{{ -3 is odd }}|{{ -2 is odd }}|{{ -2 ** 2 }}|{% if -1|abs == 1 %}y{% endif %}", "True|False|4|y"},
	})
}

// TestNumberLiteralsAsJinja2: a float with an exponent and no fraction
// (1e3) and digits grouped with underscores (1_000) are numbers, as in
// jinja2; the engine cut them into a number and a name and refused the
// template at load.
func TestNumberLiteralsAsJinja2(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ 1e3 }}|{{ 2E-2 }}|{{ 1e+2 * 2 }}|{{ 1.5e1 }}|{{ 1_000 }}|{{ 1_0.5 }}|{{ [1e2, 3] }}|{{ 5e-1 < 1 }}|{{ 'x1e3' }}|{% if 1e0 == 1 %}y{% endif %}|{{ 2.5E2|int }}",
			"1000.0|0.02|200.0|15.0|1000|10.5|[100.0, 3]|True|x1e3|y|250"},
		{"{% set x = 1e3 %}{{ x }}|{% for i in range(1_0) if i > 8 %}{{ i }}{% endfor %}", "1000.0|9"},
		{"{{ 0_0 }}|{{ 0_7.5 }}|{{ 0_1e1 }}", "0|7.5|10.0"},
	})
	// An integer that begins with 0 is zeros to jinja2 (0_7 is 0 and the
	// name _7, a syntax error); it was read as 7.
	for _, src := range []string{"a\n{{ 0_7 }}", "a\n{{ 0_7 * 2 }}", "a\n{% set x = 00_7 %}"} {
		if _, err := New(src, nil); !errors.Is(err, ErrBadTemplate) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: New = %v, want ErrBadTemplate naming line 2", src, err)
		}
	}
}

// TestChainedPower: jinja2 reads a chain of ** from the left, unlike
// Python: 2 ** 3 ** 2 is (2 ** 3) ** 2, 64. The engine refused a second
// ** at load.
func TestChainedPower(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ 2 ** 3 ** 2 }}|{{ 2 ** 2 ** 2 ** 2 }}|{{ -2 ** 2 }}|{{ 2 ** -1 ** 2 }}|{{ 3 * 2 ** 2 ** 2 }}|{% set n = 2 ** 1 ** 3 %}{{ n }}", "64|256|4|0.25|48|8"},
	})
}

// TestDivisiblebyTest: jinja2's divisibleby test, value % num == 0, which
// the engine does not have (an unknown test when the template ran; with
// *args, refused at load). It is a call of ours, so *args spread into it
// as into any call.
func TestDivisiblebyTest(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ 6 is divisibleby 3 }}|{{ 7 is divisibleby(3) }}|{{ 7 is not divisibleby 3 }}|{{ 7.5 is divisibleby 2.5 }}|{{ -6 is divisibleby 4 }}|{% for i in range(1, 7) if i is divisibleby 3 %}{{ i }}{% endfor %}|{{ 2 * 9 is divisibleby 3 }}|{{ true is divisibleby 1 }}",
			"True|False|True|True|False|36|2|True"},
		{"{{ 6 is divisibleby(*[3]) }}|{{ 6 is not divisibleby(*[4]) }}|{% if 6 is   divisibleby(*[3]) %}x{% endif %}", "True|True|x"},
		{"{{ 1 is divisibleby 0 }}", "error:integer modulo by zero"},
		{"{{ 'a' is divisibleby 2 }}", "error:not all arguments converted during string formatting"},
	})
}

// TestSyntaxErrorInRewrittenCodeRefused: a tag whose code breaks off
// after an operand pyOps rewrites ({{ 1e3 - }}, {{ -1|abs - }}) is
// refused at load, as jinja2 refuses it; loading it panicked (a slice
// out of range while joining the rewritten parts of code it had stopped
// following), taking down the process that loaded the template.
func TestSyntaxErrorInRewrittenCodeRefused(t *testing.T) {
	for _, src := range []string{
		"a\n{{ 1e3 - }}", "a\n{{ 1 * 2 - }}", "a\n{{ -1|abs - }}", "a\n{{ 2 is odd 3 - }}",
		"a\n{% if 1e3 and %}{% endif %}", "a\n{% set y = 2 1_0 - %}",
	} {
		_, err := New(src, nil)
		if !errors.Is(err, ErrBadTemplate) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: New = %v, want ErrBadTemplate naming line 2", src, err)
		}
	}
}

// TestAdjacentExpressionsRefused: two expressions with nothing between
// them are jinja2's syntax error ({% if 0 x is none %}: "expected token
// 'end of statement block'"); with the test written in parentheses the
// engine read the second as the first's call arguments, 0 (x is none),
// and the template loaded. A call block's parameters and callee are
// adjacent on purpose and still read.
func TestAdjacentExpressionsRefused(t *testing.T) {
	for _, src := range []string{
		"a\n{% if 0 x is none %}t{% endif %}", "a\n{{ list 1.5 is not _1 }}", "a\n{% set y = x y is odd %}",
	} {
		_, err := New(src, nil)
		if !errors.Is(err, ErrBadTemplate) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: New = %v, want ErrBadTemplate naming line 2", src, err)
		}
	}
	renderEach(t, []struct{ src, want string }{
		{"{% macro m() %}[{{ caller(3 is odd) }}]{% endmacro %}{% call(v) m() %}{{ v * 2 }}{% endcall %}", "[2]"},
	})
}

// TestSyntaxErrorRefusedAtLoad: a template jinja2 refuses as written is
// refused at load, naming the line, when the engine refuses it too and
// only the instrumented text compiles: the engine reads a call's
// arguments without commas, so {{ 1 2 }} wrapped as __hone_out(1 2)
// compiled and printed 1. jinja2 3.1.6 raises TemplateSyntaxError for
// each (0x10 it reads as 16; the engine cannot, and printed 0).
func TestSyntaxErrorRefusedAtLoad(t *testing.T) {
	for _, src := range []string{
		"a\nb\n{{ 1 2 }}",
		"a\nb\n{{ x y }}",
		"a\nb\n{% set x = 1 2 %}",
		"a\nb\n{{ 2 is divisibleby 2 3 }}",
		"a\nb\n{{ 2 is odd 3 4 }}",
		"a\nb\n{% set 1, b = 1, 2 %}",
		"a\nb\n{% set a b, c = 1, 2 %}",
		"a\nb\n{% set a, b = 1 2, 3 %}",
		"a\nb\n{% set a, b = 1,, 2 %}",
		"a\nb\n{% set a, b = 1, 2,, %}",
		"a\nb\n{% set a, b = , 1 %}",
		"a\nb\n{% set a, b = ) - ( %}",
		"a\nb\n{{ 0x10 }}",
	} {
		_, err := New(src, nil)
		if !errors.Is(err, ErrBadTemplate) || !strings.Contains(err.Error(), "line 3") {
			t.Errorf("%q: New = %v, want ErrBadTemplate naming line 3", src, err)
		}
	}
}
