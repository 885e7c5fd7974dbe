package chattemplate

import "testing"

// TestSelectattrPath: selectattr and rejectattr read a dotted attribute
// path part by part, digits indexing, as jinja2 does; the engine looked
// the whole text up as one key, so tools|selectattr('function.name',
// 'equalto', 'f') kept nothing and rejectattr kept everything. A missing
// part before the last fails as in jinja2. The outcomes are jinja2
// 3.1.6's, set up as testdata/templates/py/check_jinja2.py sets it up.
func TestSelectattrPath(t *testing.T) {
	const ts = "{% set ts = [{'function': {'name': 'get_weather'}}, {'function': {'name': 'Add'}}, {'function': {'x': 1}}] %}"
	renderEach(t, []struct{ src, want string }{
		{ts + "{{ ts|selectattr('function.name')|list|length }}|{{ ts|selectattr('function.name', 'equalto', 'Add')|list }}|{{ ts|rejectattr('function.name', 'equalto', 'Add')|list|length }}|{{ ts|rejectattr('function.name')|list }}|{{ ts|selectattr('function.name', 'defined')|list|length }}|{{ ts|selectattr('function.name', 'undefined')|list }}",
			"2|[{'function': {'name': 'Add'}}]|2|[{'function': {'x': 1}}]|2|[{'function': {'x': 1}}]"},
		{"{% set ms = [{'role': 'system', 'c': [1, 2]}, {'role': 'user', 'c': [0]}] %}{{ ms|selectattr('role', 'equalto', 'system')|map(attribute='role')|join }}|{{ ms|selectattr('c.1')|map(attribute='role')|join }}|{{ ms|rejectattr('c.0')|map(attribute='role')|join }}|{% for m in ms|selectattr('role', '==', 'user') %}{{ m.role }}{% endfor %}",
			"system|system|user|user"},
		{"{% set ms = [{'role': 'a'}] %}{{ ms|selectattr( 'role' , 'ne', 'b')|list|length }}{{ ms|rejectattr(\"role\", \"in\", [\"a\", \"c\"])|list|length }}{{ nothing|selectattr('a')|list }}{{ {'a': 1}|selectattr('a')|list }}{{ none|rejectattr('a')|list }}", "10[][][]"},
		{"{{ 5|selectattr('a')|list }}", "error:not iterable"},
		{"{{ [{'f': {'n': 1}}, {'t': 2}]|selectattr('f.n')|list }}", "error:UndefinedError: 'dict object' has no attribute 'f'"},
	})
}

// TestJoinAsJinja2: join is jinja2's: attribute= reads a dotted path, an
// item is printed as Python's str() prints it (None, 2.0), and a string,
// dict or undefined value is iterated as Python iterates it; the engine
// looked attribute= up as one key (tools|join(', ',
// attribute='function.name') printed the whole tools), printed None as ""
// and gave a string back whole. The outcomes are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up.
func TestJoinAsJinja2(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% set ts = [{'function': {'name': 'get_weather'}}, {'function': {'name': 'Add'}}, {'function': {}}] %}{{ ts|join(', ', attribute='function.name') }}|{{ ts|join(attribute='function.name') }}|{{ [[1, 2], [3]]|join('-', attribute='0') }}|{{ [{'a': 1.0}, {'a': none}, {'a': true}]|join(d='/', attribute='a') }}",
			"get_weather, Add, |get_weatherAdd|1-3|1.0/None/True"},
		{"{{ 'abc'|join(',') }}|{{ {'x': 1, 'y': 2}|join }}|{{ nothing|join(',') }}|{{ [1, none, 2.0, [1.5, 'a'], {'k': none}]|join(', ') }}|{{ []|join(',') }}",
			"a,b,c|xy||1, None, 2.0, [1.5, 'a'], {'k': None}|"},
		{"{{ [{'t': 1}]|join(',', attribute='f.n') }}", "error:UndefinedError: 'dict object' has no attribute 'f'"},
		{"{{ none|join(',') }}", "error:not iterable"},
		{"{{ 5|join(',') }}", "error:not iterable"},
	})
}

// TestMapAttributeMissingPart: map(attribute='f.n') fails with jinja2's
// UndefinedError where a part before the last finds nothing and there is
// no default, as jinja2's attribute getter reads on from an Undefined;
// ours gave Undefined for the item, so a tool without a function printed
// nothing where transformers refuses to render. The outcomes are jinja2
// 3.1.6's, set up as testdata/templates/py/check_jinja2.py sets it up.
func TestMapAttributeMissingPart(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ [{'f': {'n': 1}}, {'t': 1}]|map(attribute='f.n')|list }}", "error:UndefinedError: 'dict object' has no attribute 'f'"},
		{"{{ [{'f': {'n': 1}}, {'t': 1}, {'f': {}}]|map(attribute='f.n', default='x')|list }}|{{ [{'f': {'n': 1}}, {'f': {}}]|map(attribute='f.n')|list }}|{{ [{'f': 'ab'}]|map(attribute='f.n')|list }}",
			"[1, 'x', 'x']|[1, Undefined]|[Undefined]"},
	})
}
