package chattemplate

import "testing"

// TestMultiplyMatchesJinja2 renders the templates of
// testdata/multiply/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up, and compares each with what
// jinja2 rendered: * is rewritten to __hone_mul through pyOps' parser,
// and these put it where a rewrite could go wrong (string literals and
// comments, filters, loop.index0, {% set %}, {% if %}, tests, inline
// if-else, slices, not, comparisons, macro defaults and *args calls).
// Where jinja2 raised, the rendering must fail too; its message is ours.
func TestMultiplyMatchesJinja2(t *testing.T) {
	checkJinja2Golden(t, "multiply", jinja2Outcomes)
}
