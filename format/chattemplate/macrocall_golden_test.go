package chattemplate

import (
	"strings"
	"testing"
)

// TestMacroCallsMatchJinja2 renders the templates of
// testdata/macrocall/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: a call of a template's macro
// with a keyword argument the macro has no parameter for, or with more
// positional arguments than it has, fails when it runs with jinja2's
// TypeError message (the engine dropped the extra arguments and rendered
// the macro); the calls a macro takes render as jinja2 renders them.
func TestMacroCallsMatchJinja2(t *testing.T) {
	// jinja2 raised each Error, a TypeError, rendering a template it had
	// loaded: every template must load and fail saying jinja2's message.
	checkJinja2Golden(t, "macrocall", jinja2Rules{message: func(e string) string {
		return strings.TrimPrefix(e, "TypeError: ")
	}})
}
