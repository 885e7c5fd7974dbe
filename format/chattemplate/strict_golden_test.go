package chattemplate

import "testing"

// TestStrictMatchesJinja2 renders the templates of
// testdata/strict/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: where jinja2 refuses a
// template, when it loads or renders it, the engine refuses it too,
// where it rendered on and a wrong template gave wrong training text.
func TestStrictMatchesJinja2(t *testing.T) {
	checkJinja2Golden(t, "strict", jinja2Outcomes)
}
