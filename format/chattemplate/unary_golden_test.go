package chattemplate

import "testing"

// TestUnaryMatchesJinja2 renders the templates of
// testdata/unary/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up, and compares each with what
// jinja2 rendered: a unary - or + on what is no number (a string, None, a
// list, an undefined name) fails, as Python's does, where the engine gave
// 0 and rendered on; on numbers it is Python's.
func TestUnaryMatchesJinja2(t *testing.T) {
	checkJinja2Golden(t, "unary", jinja2Outcomes)
}
