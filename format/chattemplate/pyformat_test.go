package chattemplate

import "testing"

// TestFormatAsPython: the format filter and a string's % operator are
// Python's printf-style formatting, as in jinja2 (the engine had no
// format filter, "unknown filter", and took 'Hello %s!' % name for a
// number, 0). Wants produced as in pyops_test.go.
func TestFormatAsPython(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ '%s-%d'|format('a', 3) }}|{{ '%(a)s=%(b)d'|format(a='k', b=2) }}|{{ '%-5s|%5s|%+d|% d'|format('ab', 'cd', 3, 4) }}", "a-3|k=2|ab   |   cd|+3| 4"},
		{"{{ '%05.2f|%x|%X|%o|%e|%g|%r|%%|%i'|format(3.14159, 255, 255, 8, 12345.678, 0.0001, 'q', 7) }}", "03.14|ff|FF|10|1.234568e+04|0.0001|'q'|%|7"},
		{"{{ '%s'|format(none) }}|{{ '%s'|format([1.0, 'x']) }}|{{ '%d'|format(3.9) }}|{{ '%.3s|%c|%c'|format('abcdef', 65, 'z') }}", "None|[1.0, 'x']|3|abc|A|z"},
		{"{{ '%s'|format(true) }}|{{ '%d'|format(true) }}|{{ '%5.1f%%'|format(99.44) }}|{{ '%#x|%#o|%08.3f|%-8d|'|format(255, 8, -3.14159, 42) }}", "True|1| 99.4%|0xff|0o10|-003.142|42      |"},
		{"{{ '%*d'|format(5, 42) }}|{{ 'no args'|format() }}|{{ '%s'|format({'a': 1}) }}|{{ '%f'|format(1) }}|{{ '%r'|format(\"it's\") }}", "   42|no args|{'a': 1}|1.000000|\"it's\""},
		{"{{ '%g|%g|%g|%G'|format(0.00001, 123456789.0, 100000, 100000000000000000000.0) }}", "1e-05|1.23457e+08|100000|1E+20"},
		{"{{ 'Hello %s!' % 'you' }}|{{ '%s and %s' % ('a', 'b') }}|{{ '%s' % [1, 2] }}|{{ '%(a)s' % {'a': 1} }}|{{ '%s' % {'a': 1} }}|{{ '%d%%' % 50 }}", "Hello you!|a and b|[1, 2]|1|{'a': 1}|50%"},
		{"{{ '|format(1)' }}{# x|format(1) #}{% raw %}{{ '%s'|format() }}{% endraw %}", "|format(1){{ '%s'|format() }}"},
		{"{{ '%s %s'|format('a') }}", "error:not enough arguments for format string"},
		{"{{ '%s'|format('a', 'b') }}", "error:not all arguments converted during string formatting"},
		{"{{ '%d'|format('a') }}", "error:a real number is required, not str"},
		{"{{ 'abc' % 5 }}", "error:not all arguments converted during string formatting"},
		{"{{ '%(a)s'|format('x') }}", "error:format requires a mapping"},
		// Not jinja2's: what the widths of one formatting may allocate is
		// bounded, as a string repeated by a literal count is.
		{"{{ ('%999999s' * 2)|format(1, 2) }}", "error:widths and precisions"},
		{"{{ '%.9999999f' % 1 }}", "error:too big"},
	})
}
