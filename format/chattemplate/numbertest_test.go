package chattemplate

import "testing"

// TestNumberTestOfBools: `is number` is true of true and false, as in
// jinja2 (Python's bool is a Number), by `is` and by a select or reject
// that names it; the engine's test said false of them. Ints and floats
// stay numbers, strings, none and undefined values not. The outcomes are
// jinja2 3.1.6's, set up as testdata/templates/py/check_jinja2.py sets it
// up (transformers' settings).
func TestNumberTestOfBools(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ true is number }}{{ false is not number }}{{ 1 is number }}{{ 1.5 is number }}{{ 'a' is number }}{{ none is number }}{{ nothing is number }}",
			"TrueFalseTrueTrueFalseFalseFalse"},
		{"{{ [true, 1, 'a', 2.5, none]|select('number')|list }}{{ [true, 1, 'a']|reject('number')|list }}", "[True, 1, 2.5]['a']"},
	})
}
