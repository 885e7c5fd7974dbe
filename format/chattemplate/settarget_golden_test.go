package chattemplate

import "testing"

// TestSetTargetsMatchJinja2 loads and renders the {% set %} statements of
// testdata/settarget/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: an "=" inside a string literal
// is no assignment, so {%set"="0%} (a string where the target should be)
// is refused at load as jinja2 refuses it, as are a target that is no
// name (a subscript, two dots, nothing) and a set with no value; an "="
// in a string of the value or of a block set's body is text, and a block
// set's filters ({% set x | replace('=', '-') %}…{% endset %}) apply to
// what it captured, which the engine dropped (x was undefined). The "=" in
// a string made the rewriting cut the statement there, and the template
// was refused as a bug of ours ("please report this as a bug"), not as
// ErrBadTemplate, or (a subscript, no value) loaded.
func TestSetTargetsMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "settarget", jinja2Outcomes)
}
