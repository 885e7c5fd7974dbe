package chattemplate

import "testing"

// TestSortAsJinja2: sort is jinja2's: strings compare without case unless
// case_sensitive, attribute= sorts by an item's attribute, a dotted path
// or several comma-separated ones, and values Python cannot order fail;
// the engine ignored attribute (a list of dicts came back as it was) and
// compared strings with case. The outcomes are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up.
func TestSortAsJinja2(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ ['b', 'A', 'a', 'B']|sort }}|{{ ['b', 'A', 'a']|sort(case_sensitive=true) }}|{{ [3, 1, 2.5, true]|sort(reverse=true) }}|{{ 'cab'|sort|join }}|{{ {'b': 1, 'a': 2}|sort }}",
			"['A', 'a', 'b', 'B']|['A', 'a', 'b']|[3, 2.5, 1, True]|abc|['a', 'b']"},
		{"{% set xs = [{'n': 'b', 'k': {'z': 2}}, {'n': 'A', 'k': {'z': 1}}, {'n': 'a', 'k': {'z': 3}}] %}{{ xs|sort(attribute='n')|map(attribute='n')|join }}|{{ xs|sort(attribute='k.z')|map(attribute='n')|join }}|{{ xs|sort(attribute='n', reverse=true)|map(attribute='n')|join }}|{{ xs|sort(attribute='n', case_sensitive=true)|map(attribute='n')|join }}",
			"Aab|Aba|bAa|Aab"},
		{"{% set xs = [{'a': 1, 'b': 'y'}, {'a': 0, 'b': 'z'}, {'a': 1, 'b': 'x'}] %}{{ xs|sort(attribute='a,b')|map(attribute='b')|join }}", "zxy"},
		{"{{ [[2, 'a'], [1, 'b'], [1, 'a']]|sort }}{{ [1, 0]|sort(false, false) }}", "[[1, 'a'], [1, 'b'], [2, 'a']][0, 1]"},
		{"{{ nothing|sort }}{% for m in [{'role': 'b'}, {'role': 'a'}]|sort(attribute='role') %}{{ m.role }}{% endfor %}", "[]ab"},
		{"{{ [1, 'a']|sort }}", "error:TypeError: '<' not supported between instances of"},
		{"{{ [none, 1]|sort }}", "error:TypeError: '<' not supported between instances of"},
		{"{{ [{'a': 1}, {'b': 2}]|sort(attribute='a') }}", "error:UndefinedError: 'dict object' has no attribute 'a'"},
		{"{{ none|sort }}", "error:not iterable"},
	})
}
