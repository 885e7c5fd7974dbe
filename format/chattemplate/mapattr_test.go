package chattemplate

import "testing"

// TestMapAttributePath: map(attribute='a.b') reads the dotted path, one
// item or attribute per part and a part of digits an index, as jinja2's
// attribute getter does; the engine looked the whole text up as one key,
// so tools|map(attribute='function.name')|join(', '), a template's list
// of tool names, printed ", " and a check that a call names a tool the
// template offers failed for every call. The wants are jinja2 3.1.6's,
// rendered as testdata/templates/py/check_jinja2.py sets it up.
func TestMapAttributePath(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% set tools = [{'function': {'name': 'f'}}, {'function': {'name': 'g'}}] %}{{ tools|map(attribute='function.name')|join(', ') }}|{{ 'g' in tools|map(attribute='function.name')|list }}|{{ 'h' not in tools|map(attribute='function.name')|list }}",
			"f, g|True|True"},
		{"{% set xs = [{'n': 'b', 'k': {'z': 2}, 'l': [5]}, {'n': 'a', 'k': {'z': 1}, 'l': [3]}] %}{{ xs|map(attribute='l.0')|list }}|{{ xs|map(attribute='k.z')|sum }}|{{ xs|map(attribute='k.q', default=0)|list }}|{{ xs|map(attribute='n')|join }}|{{ xs|map(attribute='k.z.q')|select('defined')|list }}",
			"[5, 3]|3|[0, 0]|ba|[]"},
		{"{% set xs = [{'a': none}, {'a': {'b': 'x'}}, 'str', 3] %}{{ xs|map(attribute='a.b', default='D')|list }}|{{ xs|map(attribute='a')|map('string')|list }}",
			`['D', 'x', 'D', 'D']|['None', "{'b': 'x'}", '', '']`},
		{"{% set xs = [{'a': ['p', 'q']}] %}{{ xs|map(attribute='a.1')|first }}{{ xs|map(attribute = \"a.0\")|first }}", "qp"},
		{"{{ [{'a': {'b': 1}}]|map(attribute='a.b')|map('string')|join }}{{ {'a': 1}|map(attribute='x')|list }}", "1[Undefined]"},
	})
}
