package chattemplate

import "testing"

// TestLoopAttributeOutsideLoop: an attribute or item of loop where no for
// loop's body binds it (at the top level, in a for's else, in a macro
// called from a loop's body) fails with jinja2's UndefinedError, "'loop'
// is undefined"; the engine gave "" and went on. Inside a loop's body, and
// in a macro defined there, loop reads as before. The wants are jinja2
// 3.1.6's, set up as testdata/templates/py/check_jinja2.py sets it up
// (transformers' settings).
func TestLoopAttributeOutsideLoop(t *testing.T) {
	const undefined = "error:UndefinedError: 'loop' is undefined"
	renderEach(t, []struct{ src, want string }{
		{"{{ loop.index }}", undefined},
		{"{{ loop['index'] }}", undefined},
		{"{% if loop.first %}a{% endif %}b", undefined},
		{"{% macro m() %}{{ loop.index }}{% endmacro %}{% for i in [1] %}{{ m() }}{% endfor %}", undefined},
		{"{% for i in [] %}{% else %}{{ loop.index }}{% endfor %}", undefined},
		{"{% for i in [1, 2] %}{{ loop.index }}{{ loop.previtem is defined }}{% endfor %}", "1False2True"},
		{"{% for i in [1] %}{% macro m() %}{{ loop.index }}{% endmacro %}{{ m() }}{% endfor %}", "1"},
		{"{{ loop }}|{{ loop is defined }}", "|False"},
		{"{% for i in [1, 2] %}{{ loop.cycle('a', 'b') }}{% endfor %}", "ab"},
	})
}
