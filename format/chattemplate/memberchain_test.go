package chattemplate

import "testing"

// TestAttributeOfMissingMember: an attribute or item read of a member
// that is missing (y.z.w with y = {}, y[5].x with y = [1]) fails the
// rendering with jinja2's UndefinedError naming the missing member; the
// engine gave "" and went on, so a message without the key a template
// reads through (tool_call.function.name) became silently wrong training
// text. A missing member read once (y.z), a member that holds none, a
// guard that short-circuits and a method read render as before. The
// outcomes are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up (transformers'
// settings).
func TestAttributeOfMissingMember(t *testing.T) {
	const dictZ = "error:UndefinedError: 'dict object' has no attribute 'z'"
	renderEach(t, []struct{ src, want string }{
		{"{% set y = {} %}{{ y.z.w }}", dictZ},
		{"{% set y = {} %}{{ y['z']['w'] }}", dictZ},
		{"{% set y = {} %}{{ y['z'].w }}", dictZ},
		{"{% set y = {} %}{{ y.z[0] }}", dictZ},
		{"{% set y = {} %}{% if y.z.w %}a{% endif %}", dictZ},
		{"{% set y = {} %}{{ y.z.w is defined }}", dictZ},
		{"{% set y = {} %}{{ y.z.w | default('d') }}", dictZ},
		{"{% set y = {} %}{% for a in y.z.w %}{% endfor %}", dictZ},
		{"{% set y = {'a': {}} %}{{ y.a.b.c }}", "error:UndefinedError: 'dict object' has no attribute 'b'"},
		{"{% set y = {} %}{{ y[0].x }}", "error:UndefinedError: dict object has no element 0"},
		{"{% set y = [1] %}{{ y[5].x }}", "error:UndefinedError: list object has no element 5"},
		{"{% set y = {'a': [1]} %}{{ y.a[3].x }}", "error:UndefinedError: list object has no element 3"},
		{"{% set y = [1] %}{{ y.z.x }}", "error:UndefinedError: 'list object' has no attribute 'z'"},
		{"{% set y = 'ab' %}{{ y[5].x }}", "error:UndefinedError: str object has no element 5"},
		{"{% set y = 'ab' %}{{ y.z.x }}", "error:UndefinedError: 'str object' has no attribute 'z'"},
		{"{% set y = none %}{{ y.z.x }}", "error:UndefinedError: 'None' has no attribute 'z'"},
		{"{% set y = 1 %}{{ y.z.x }}", "error:UndefinedError: 'int object' has no attribute 'z'"},
		{"{% set y = 1.5 %}{{ y.z.x }}", "error:UndefinedError: 'float object' has no attribute 'z'"},
		{"{% set y = true %}{{ y.z.x }}", "error:UndefinedError: 'bool object' has no attribute 'z'"},
		{"{% set y = {} %}{{ y.z }}", ""},
		{"{% set y = {'a': 1} %}{{ y.a.x }}", ""},
		{"{% set y = {'z': none} %}{{ y.z.w }}", ""},
		{"{% set y = {} %}{{ y.z is defined and y.z.w }}", "False"},
		{"{% set y = {} %}{{ y.items.x }}", ""},
		{"{% set y = {'a': {'b': [{'c': 'C'}]}} %}{{ y.a.b[0].c }}{{ y['a']['b'][-1]['c'] }}", "CC"},
		{"{% set y = {'a': ' t '} %}{{ y.a.strip().upper() }}|{{ 'a,b'.split(',')[1].upper() }}", "T|B"},
		{"{% set y = {'t': {'p': {'x': 1}}} %}{% for k, v in y.t.p.items() %}{{ k }}={{ v }}{% endfor %}", "x=1"},
		{"{% for i in [1, 2] %}{{ loop.index }}{% endfor %}", "12"},
		{"{% set ns = namespace(a={'b': 2}) %}{{ ns.a.b }}", "2"},
	})
}
