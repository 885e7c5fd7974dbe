package chattemplate

import (
	"errors"
	"strings"
	"testing"
)

// TestForTargetLoopRefused: a for tag that names loop among its targets
// ({% for loop in xs %}, {% for (a, loop) in xs %}) is refused at
// load, as jinja2's compiler refuses it ("Can't assign to special loop
// variable in for-loop target"); the engine took it, so a template that
// jinja2 (and so transformers) cannot load rendered here. Elsewhere loop
// is a name like another: a macro's parameter, a set's target, a part of
// a longer name, text in a raw block. The outcomes are jinja2 3.1.6's, set
// up as testdata/templates/py/check_jinja2.py sets it up (transformers'
// settings).
func TestForTargetLoopRefused(t *testing.T) {
	for _, src := range []string{
		"{% for loop in [1, 2] %}{{ loop }}{% endfor %}",
		"{%- for loop in [1] -%}{%- endfor -%}",
		"{% for (a, loop) in [[1, 2]] %}{{ a }}{% endfor %}",
		"{% for x in [1] %}{% for loop in [2] %}{% endfor %}{% endfor %}",
	} {
		_, err := New(src, nil)
		if !errors.Is(err, ErrBadTemplate) || !strings.Contains(err.Error(), "Can't assign to special loop variable in for-loop target") {
			t.Errorf("%s: %v; want it refused at load as jinja2 refuses it", src, err)
		}
	}
	renderEach(t, []struct{ src, want string }{
		{"{% macro m(loop) %}{{ loop }}{% endmacro %}{{ m(3) }}", "3"},
		{"{% set loop = 1 %}{{ loop }}", "1"},
		{"{% for loops in [1] %}{{ loops }}{% endfor %}", "1"},
		{"{% for x in [1] if loop %}{{ x }}{% endfor %}|{% for a in [5] %}{{ loop.index }}{% endfor %}", "|1"},
		{"{% raw %}{% for loop in xs %}{% endraw %}", "{% for loop in xs %}"},
	})
}
