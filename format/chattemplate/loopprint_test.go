package chattemplate

import "testing"

// TestLoopPrintsAsJinja2: the loop object prints as jinja2's LoopContext
// does, <LoopContext index/length>, in {{ }}, inside a list and through
// the string filter; the engine printed it as the dict it keeps,
// {'length': N}. A dict of the template's with the same key prints as a
// dict. The wants are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up (transformers'
// settings).
func TestLoopPrintsAsJinja2(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% for i in [1, 2] %}{{ loop }};{% endfor %}", "<LoopContext 1/2>;<LoopContext 2/2>;"},
		{"{% for i in [1, 2] %}{{ [loop] }};{{ loop|string }};{% endfor %}", "[<LoopContext 1/2>];<LoopContext 1/2>;[<LoopContext 2/2>];<LoopContext 2/2>;"},
		{"{% for loop2 in [{'length': 1}] %}{{ loop2 }}{% endfor %}", "{'length': 1}"},
		{"{% for i in 'ab' %}{% for j in [1, 2, 3] %}{% if loop.last %}{{ loop }}{% endif %}{% endfor %}{% endfor %}", "<LoopContext 3/3><LoopContext 3/3>"},
	})
}
