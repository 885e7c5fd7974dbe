package chattemplate

import "testing"

// TestKeepMarkerRefusalsMatchJinja2 loads the templates of
// testdata/keepmarkerrefusals/golden.json, written by make_golden.py
// beside it: a "+" marker next to a "-" or another sign left a tag with
// no name, which the engine ends the template at ("{%+- if t %}A"
// rendered ""), or a "-" before the closer, which it read as a marker
// ("{% if t -+%}" loaded); and a "{%+" in the text the engine checks
// before rewriting hid the tags after it from that check, so the ones it
// refuses were refused as a bug of ours.
func TestKeepMarkerRefusalsMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "keepmarkerrefusals", jinja2Outcomes)
}
