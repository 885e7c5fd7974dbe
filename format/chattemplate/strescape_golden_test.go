package chattemplate

import "testing"

// TestStringEscapesMatchJinja2 renders the templates of
// testdata/strescape/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: a string literal's
// escapes are Python's (\r, \u00e9, \x41, octal, \N{name}, ...), which the
// engine left as they were written, and a malformed one is refused at
// load with jinja2's message.
func TestStringEscapesMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "strescape", jinja2Messages)
}
