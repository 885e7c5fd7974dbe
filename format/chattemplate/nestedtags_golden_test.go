package chattemplate

import "testing"

// TestNestedTagsMatchJinja2 renders the templates of
// testdata/nestedtags/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: a tag ends at the first
// closer outside brackets and string literals ({{ {'a': {'b': 1}} }}
// prints the nested dict), a comment at its first "#}", and a bracket
// closed by the wrong one is refused as jinja2's lexer refuses it.
func TestNestedTagsMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "nestedtags", jinja2Messages)
}
