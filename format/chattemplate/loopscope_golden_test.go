package chattemplate

import "testing"

// TestLoopScopeCorners renders the templates of testdata/loopscope/golden.json,
// written by make_golden.py beside it with jinja2 set up as transformers
// sets it up: corners of a for body's scope (loops in macros, namespace
// attributes, nested and recursive loops, for-else, call and with blocks).
func TestLoopScopeCorners(t *testing.T) {
	checkJinja2Golden(t, "loopscope", jinja2Messages)
}
