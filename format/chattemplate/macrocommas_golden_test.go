package chattemplate

import "testing"

// TestMacroDefaultCommasMatchJinja2 renders the templates of
// testdata/macrocommas/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: a macro's or a
// {% call %}'s default value with a comma in it (sep=", ", a=[1, 2]),
// which Hone refused at load, renders as jinja2 renders it, evaluated
// only where the argument is left out, after the parameters before it.
func TestMacroDefaultCommasMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "macrocommas", jinja2Messages)
}
