package chattemplate

import "testing"

// TestMacroDefaultsMatchJinja2 renders the templates of
// testdata/macrodefault/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: macro default values and
// {% call %} bodies, which count as levels of macro nesting
// (guardMacroDefaults), render as jinja2 renders them, falsy defaults
// included, and more calls in a row than the nesting limit allows at once
// end each level they start.
func TestMacroDefaultsMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "macrodefault", jinja2Messages)
}
