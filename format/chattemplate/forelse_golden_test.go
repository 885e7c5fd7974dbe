package chattemplate

import "testing"

// TestForElseAssignmentsStayInside renders the templates of
// testdata/forelse/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: a name a for's {% else %}
// assigns has its value from before the loop again after {% endfor %}, as
// jinja2 runs the else in a frame of its own, where the engine kept the
// else's value, and the white space around the loops is unchanged.
func TestForElseAssignmentsStayInside(t *testing.T) {
	checkJinja2Golden(t, "forelse", jinja2Messages)
}
