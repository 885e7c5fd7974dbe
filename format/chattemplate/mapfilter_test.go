package chattemplate

import "testing"

// TestMapFilterByName: xs|map('name', args...) applies the filter named to
// each item, as jinja2 does; the engine's map ignored the name and gave
// the items back unchanged ([1, 2]|map('string')|list was [1, 2], where
// jinja2 gives ['1', '2']). The wants are jinja2 3.1.6's, rendered as
// testdata/templates/py/check_jinja2.py sets it up.
func TestMapFilterByName(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ [1, 2.0, none]|map('string')|list }}|{{ ['a ', ' b']|map('trim')|join(',') }}|{{ ['a', 'b']|map('upper')|list }}|{{ [1.25, 2.5]|map('round', 1)|list }}",
			"['1', '2.0', 'None']|a,b|['A', 'B']|[1.2, 2.5]"},
		{"{{ [{'a': 1}]|map('tojson')|join }}|{{ {'x': 1, 'y': 2}|map('upper')|list }}|{{ [{'n': 'q'}]|map(attribute='n')|list }}|{{ 'ab'|map('upper')|list }}",
			`{"a": 1}|['X', 'Y']|['q']|['A', 'B']`},
		{"{{ ['1', '2']|map('int')|sum }}|{% for s in [1, 2]|map('string') %}{{ s ~ '!' }}{% endfor %}|{{ ['a|b']|map('replace', '|', '/')|first }}|{{ ['map(\\'x\\')'] | map( \"length\" ) | list }}",
			"3|1!2!|a/b|[8]"},
		{"{{ [1]|map('nosuch')|list }}", "error:No filter named 'nosuch'"},
	})
}
