package chattemplate

import "testing"

// TestStrSearchMatchJinja2 renders the templates of
// testdata/strsearch/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: find, rfind, index,
// rindex and count count characters and take start and end, index and
// count work on lists too, title and capitalize are Python's str methods
// and the title filter is jinja2's ("tool_call".title() is Tool_Call,
// "tool_call"|title is Tool_call).
func TestStrSearchMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "strsearch", jinja2Messages)
}
