package chattemplate

import "testing"

// TestForOverNoneRaises: a for loop over None, a number or a bool fails
// the rendering with jinja2's TypeError ("'NoneType' object is not
// iterable"); the engine ran the loop zero times, so a tool-use template
// whose {% for tool in tools %} has no guard (Hermes', Command-R's) gave a
// prompt with an empty tool list where transformers refuses to render it.
// Loops over a list, dict, string or an undefined name run as before. The
// outcomes are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up.
func TestForOverNoneRaises(t *testing.T) {
	const none = "error:TypeError: 'NoneType' object is not iterable"
	renderEach(t, []struct{ src, want string }{
		{"{% for m in none %}x{% endfor %}ok", none},
		{"{% set tools = none %}{% for t in tools %}{{ t }}{% else %}E{% endfor %}", none},
		{"{% for k, v in none %}x{% endfor %}", none},
		{"{% for m in 5 %}x{% endfor %}", "error:TypeError: 'int' object is not iterable"},
		{"{% for m in 2.5 %}x{% endfor %}", "error:TypeError: 'float' object is not iterable"},
		{"{% for m in true %}x{% endfor %}", "error:TypeError: 'bool' object is not iterable"},
		{"{% for m in none if m %}x{% endfor %}", none},
		{"{% set d = {'t': none} %}{% for x in d.t %}x{% endfor %}", none},
		{"{% for x in [[1, none]] %}{% for y in x[1] %}{% endfor %}{% endfor %}", none},
		{"{% for m in nothing %}x{% else %}E{% endfor %}|{% for m in {'a': 1} %}{{ m }}{% endfor %}|{% for c in 'ab' %}{{ c }}{% endfor %}|{% for k, v in {'a': 1}.items() if k != 'b' %}{{ k }}{{ v }}{% endfor %}|{% for i in [1, 2, 3] if i is odd %}{{ i }}{% endfor %}",
			"E|a|ab|a1|13"},
		{"{% for x in [1] %}{{ 'in none' }}{% endfor %}", "in none"},
	})
}
