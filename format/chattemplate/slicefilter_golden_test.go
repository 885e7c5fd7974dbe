package chattemplate

import "testing"

// TestSliceAttrFiltersMatchJinja2 renders the templates of
// testdata/slicefilter/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: the slice and attr
// filters, which the engine has not, render what jinja2's render and fail
// where jinja2's raise, saying what it says.
func TestSliceAttrFiltersMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "slicefilter", jinja2Messages)
}
