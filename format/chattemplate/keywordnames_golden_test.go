package chattemplate

import "testing"

// TestKeywordNamesMatchJinja2 renders the templates of
// testdata/keywordnames/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: a keyword where an
// operand belongs is a variable name to jinja2, and a sign after it is
// the binary operator ({% if if+A %} adds A to the variable if).
func TestKeywordNamesMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "keywordnames", jinja2Messages)
}

// TestKeywordNameBeforeSignLoads loads templates that jinja2 loads (and
// refuses only when it renders them: the variable if is undefined) and
// that were refused with "please report this as a bug": the sign after
// the keyword-name was rewritten as the sign of a new operand.
func TestKeywordNameBeforeSignLoads(t *testing.T) {
	for _, src := range []string{"{%if if+A%}y{%endif%}", "{{ if-A }}", "{% for x in in-A %}{% endfor %}", "{% if 0 %}{% elif if+A %}{% endif %}"} {
		if _, err := New(src, nil); err != nil {
			t.Errorf("%s: %v; jinja2 loads it", src, err)
		}
	}
}
