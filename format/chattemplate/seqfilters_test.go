package chattemplate

import "testing"

// TestFirstLastAsJinja2: first and last take a string's characters and a
// dict's keys, as jinja2's do (Python's iter and reversed), and fail on
// None or a number; the engine gave Undefined for anything but a list, so
// 'ab'|first printed "" and none|first passed unnoticed. The outcomes are
// jinja2 3.1.6's, set up as testdata/templates/py/check_jinja2.py sets it
// up.
func TestFirstLastAsJinja2(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ 'ab'|first }}|{{ 'ab'|last }}|{{ {'x': 1, 'y': 2}|first }}|{{ {'x': 1, 'y': 2}|last }}|{{ []|first }}|{{ ''|last }}|{{ [3, 4]|first }}{{ [3, 4]|last }}|{{ nothing|first }}{{ nothing|last }}|{{ ([]|first) is defined }}",
			"a|b|x|y|||34||False"},
		{"{{ none|first }}", "error:not iterable"},
		{"{{ none|last }}", "error:not iterable"},
		{"{{ 5|first }}", "error:not iterable"},
	})
}

// TestUniqueAsJinja2: unique is jinja2's: strings are compared without
// case unless case_sensitive, attribute= reads a dotted path, items equal
// in Python (1, 1.0 and True; 0 and False) count once, a string or dict
// is iterated, and an unhashable key fails; the engine compared the
// printed text with case and ignored attribute=. The outcomes are jinja2
// 3.1.6's, set up as testdata/templates/py/check_jinja2.py sets it up.
func TestUniqueAsJinja2(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ ['a', 'A', 'b', 'B', 'a']|unique|list }}|{{ ['a', 'A', 'b']|unique(case_sensitive=true)|list }}|{{ [1, 1.0, true, 2, '1']|unique|list }}|{{ [{'t': 'x', 'n': 1}, {'t': 'X', 'n': 2}, {'t': 'y', 'n': 3}]|unique(attribute='t')|map(attribute='n')|join }}|{{ 'abAB'|unique|join }}|{{ {'a': 1}|unique|list }}|{{ nothing|unique|list }}|{{ [{'f': {'n': 'a'}}, {'f': {'n': 'a'}}]|unique(attribute='f.n')|list|length }}",
			"['a', 'b']|['a', 'A', 'b']|[1, 2, '1']|13|ab|['a']|[]|1"},
		{"{{ [none, none, 0, false, 0.5, 1.5]|unique|list }}|{{ [{'a': 1}, {'b': 1}, {'c': 2}]|unique(attribute='a')|list }}", "[None, 0, 0.5, 1.5]|[{'a': 1}, {'b': 1}]"},
		{"{{ [[1], [1]]|unique|list }}", "error:TypeError: unhashable type: 'list'"},
		{"{{ none|unique|list }}", "error:not iterable"},
	})
}

// TestMinMaxAsJinja2: min and max are jinja2's: strings compare without
// case unless case_sensitive, attribute= reads a dotted path, the first of
// equal items wins, a string or dict is iterated, and what Python cannot
// compare fails; the engine ignored attribute= and case_sensitive, gave
// Undefined for a string or dict, and ordered [1, 'a']. The outcomes are
// jinja2 3.1.6's, set up as testdata/templates/py/check_jinja2.py sets it
// up.
func TestMinMaxAsJinja2(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ ['b', 'A', 'c']|max }}|{{ ['b', 'A', 'C']|max(case_sensitive=true) }}|{{ ['b', 'A', 'c']|min }}|{{ ['b', 'a', 'B']|min(case_sensitive=true) }}|{{ ['B', 'b']|max }}|{{ ['b', 'B']|max }}|{{ [{'n': 'get'}, {'n': 'Add'}]|min(attribute='n') }}|{{ [{'n': 'get'}, {'n': 'Add'}]|max(attribute='n') }}|{{ 'bca'|max }}|{{ {'a': 1, 'b': 2}|max }}|{{ [1, 2.5, true]|max }}|{{ [1, true]|max }}|{{ []|max }}|{{ nothing|min }}|{{ [[1, 2], [1, 3]]|max }}",
			"c|b|A|B|B|b|{'n': 'Add'}|{'n': 'get'}|c|b|2.5|1|||[1, 3]"},
		{"{{ [{'f': {'n': 2}}, {'f': {'n': 3}}]|max(attribute='f.n') }}|{{ [{'a': 1}]|max(attribute='b') }}", "{'f': {'n': 3}}|{'a': 1}"},
		{"{{ [1, 'a']|max }}", "error:TypeError: '>' not supported between instances of 'str' and 'int'"},
		{"{{ [1, 'a']|min }}", "error:TypeError: '<' not supported between instances of 'str' and 'int'"},
		{"{{ none|max }}", "error:not iterable"},
		{"{{ [{'a': 1}, {'b': 2}]|max(attribute='a') }}", "error:UndefinedError: 'dict object' has no attribute 'a'"},
		{"{{ [{'t': 1}]|min(attribute='f.n') }}", "error:UndefinedError: 'dict object' has no attribute 'f'"},
	})
}

// TestSumAsJinja2: sum is jinja2's, Python's sum(items, start): attribute=
// reads a dotted path, start= is where it begins, items add as Python's +
// adds them (a bool is an int, lists join), and what Python does not add
// fails; the engine ignored attribute= and start= (summing 0s) and skipped
// what was no number. The outcomes are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up.
func TestSumAsJinja2(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ [1, 2, 3]|sum }}|{{ [1, 2.5]|sum }}|{{ [{'a': 1}, {'a': 2}]|sum(attribute='a') }}|{{ [1, 2]|sum(start=10) }}|{{ [[1], [2]]|sum(start=[]) }}|{{ [true, 2]|sum }}|{{ []|sum }}|{{ nothing|sum }}|{{ [0.1, 0.2]|sum }}|{{ [{'f': {'n': 2}}, {'f': {'n': 3}}]|sum(attribute='f.n', start=1) }}|{{ {'1': 1}|list|length|string|list|map('int')|sum }}|{{ [{'a': 2}]|sum('a', 1) }}",
			"6|3.5|3|13|[1, 2]|3|0|0|0.30000000000000004|6|1|3"},
		{"{{ ['a', 'b']|sum }}", "error:TypeError: unsupported operand type(s) for +: 'int' and 'str'"},
		{"{{ ['a', 'b']|sum(start='') }}", "error:TypeError: sum() can't sum strings [use ''.join(seq) instead]"},
		{"{{ [1, none]|sum }}", "error:TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'"},
		{"{{ none|sum }}", "error:not iterable"},
		{"{{ [{'a': 1}, {'b': 2}]|sum(attribute='a') }}", "error:UndefinedError: 'dict object' has no attribute 'a'"},
	})
}

// TestFilterNamesReserved: a kwarg named as one of our filters
// (selectattr, join, first, last, unique, min, max, sum) is refused as the
// others are, rather than passed to a template that would never see it.
func TestFilterNamesReserved(t *testing.T) {
	tmpl, err := New("{{ [1]|join }}", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{selectattrName, rejectattrName, joinName, firstName, lastName, uniqueName, minName, maxName, sumName} {
		if _, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{name: 1}}); err == nil {
			t.Errorf("kwarg %s: want an error", name)
		}
		if _, err := KwargsFromJSON([]byte(`{"` + name + `": 1}`)); err == nil {
			t.Errorf("KwargsFromJSON %s: want an error", name)
		}
	}
}
