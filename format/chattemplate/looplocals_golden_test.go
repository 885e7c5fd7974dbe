package chattemplate

import "testing"

// TestLoopAssignmentsLastOneIteration renders the templates of
// testdata/looplocals/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: a name a {% for %} body
// assigns has its value from outside the loop again at the start of each
// iteration, as jinja2 clears it, where the engine kept the previous
// iteration's (vLLM's Gemma 3 pythonic tool template wrote a comma
// between a call's arguments that jinja2 does not write), and the
// white space around the loops is unchanged.
func TestLoopAssignmentsLastOneIteration(t *testing.T) {
	checkJinja2Golden(t, "looplocals", jinja2Messages)
}
