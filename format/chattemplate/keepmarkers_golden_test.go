package chattemplate

import "testing"

// TestKeepMarkersMatchJinja2 renders the templates of
// testdata/keepmarkers/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: a "+" before a block
// tag's or comment's closer keeps the newline after it, which
// trim_blocks stripped (a "+%}" on an if, for or set was refused), and
// one after "{%" or "{#" keeps the indentation before it, which
// lstrip_blocks stripped ("{%+" was refused, "{#+" ignored); "{{+" is
// read as jinja2 reads it, as a marker and not a unary plus.
func TestKeepMarkersMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "keepmarkers", jinja2Outcomes)
}
