package chattemplate

import "testing"

// TestMutatorsMatchJinja2 renders the templates of
// testdata/mutate/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: list.append, list.insert
// (a negative index counts from the end) and dict.update, ours since
// they refuse to put a value inside itself (mutate.go), render as
// jinja2's, and so do attributes of those names.
func TestMutatorsMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "mutate", jinja2Messages)
}
