package chattemplate

import "testing"

// TestRareNamesMatchJinja2 renders the templates of
// testdata/rarenames/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: the center filter and
// the escaped, filter and test tests, which the load check let through as
// jinja2's and the engine had not, render as jinja2 renders them.
func TestRareNamesMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "rarenames", jinja2Messages)
}
