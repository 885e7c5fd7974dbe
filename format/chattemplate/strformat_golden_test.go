package chattemplate

import "testing"

// TestStrFormatMatchJinja2 renders the templates of
// testdata/strformat/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: str.format with
// positions, names, .attr and [key], !s and !r, {{ and }}, and format
// specs renders what jinja2's sandbox renders and fails where it raises,
// saying what it says.
func TestStrFormatMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "strformat", jinja2Messages)
}
