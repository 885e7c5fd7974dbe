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
