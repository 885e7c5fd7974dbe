package chattemplate

import "testing"

// TestTrimStopsAtTheNextTag renders the templates of
// testdata/trimadjacent/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: trim_blocks, lstrip_blocks
// and the "-" markers strip only the text that touches their tag. The
// engine looked from each tag to the nearest text past any tags between,
// so "{% if t %}{{ x }}\nX" lost its newline and "P {{ x }}{%- if t %}"
// its space.
func TestTrimStopsAtTheNextTag(t *testing.T) {
	checkJinja2Golden(t, "trimadjacent", jinja2Outcomes)
}
