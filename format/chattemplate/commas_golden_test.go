package chattemplate

import "testing"

// TestCommasMatchJinja2 loads and renders the templates of
// testdata/commas/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: two operands side by side in
// a call's arguments or a list, dict, tuple or subscript refuse the
// template when it is loaded, as jinja2's parser does (the engine read
// f(1 2) as f(1, 2)), and so does a {% set %} or {% for %} target list
// that ends with a comma outside parentheses; a test's argument without parentheses, which
// jinja2 reads, still loads, and string literals side by side are one
// string, as in jinja2 (the engine refused them, or in brackets read two
// items).
func TestCommasMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "commas", jinja2Outcomes)
}
