package chattemplate

import "testing"

// TestStrMethodSplatMatchJinja2 renders the templates of
// testdata/strsplat/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: a str method called
// with *args or **kwargs ('{a}'.format(**d)) is ours, as the same call
// without them is, where the engine's format ignored the keyword
// arguments and rendered '{a}' as written.
func TestStrMethodSplatMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "strsplat", jinja2Messages)
}
