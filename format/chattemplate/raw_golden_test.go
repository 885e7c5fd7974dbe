package chattemplate

import "testing"

// TestRawBlocksMatchJinja2 renders the templates of
// testdata/raw/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: the engine trimmed the text
// around the tags inside a {% raw %} block as if they were tags
// ("{% raw %}{{ y }}\n{% endraw %}" lost its newline), dropped their "-"
// markers, and trimmed the newline after {% raw %}, none of which jinja2
// does.
func TestRawBlocksMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "raw", jinja2Messages)
}
