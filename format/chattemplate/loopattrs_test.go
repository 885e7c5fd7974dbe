package chattemplate

import "testing"

// TestLoopDepthAndChanged: a loop's loop.depth and loop.depth0 (1 and 0
// in a loop that is not recursive, as the engine runs no recursive loop)
// and loop.changed(*values) (true on its first call in the loop and when
// its arguments differ from its last call's, in that loop's run) are
// jinja2's; the engine had none of them, so loop.depth printed nothing
// and loop.changed failed "not callable". The wants are jinja2 3.1.6's,
// set up as testdata/templates/py/check_jinja2.py sets it up
// (transformers' settings).
func TestLoopDepthAndChanged(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{% for a in [1,2] %}{{ loop.depth }}{{ loop.depth0 }}{% for b in [3] %}{{ loop.depth }}{% endfor %}{% endfor %}", "101101"},
		{"{% for a in [1,1,2,2,1] %}{{ loop.changed(a) }},{% endfor %}", "True,False,True,False,True,"},
		{"{% for a in [1,1,2] %}{% if loop.changed(a) %}[{{ a }}]{% endif %}{% for b in [0,0] %}{{ loop.changed(b) }}{% endfor %};{% endfor %}", "[1]TrueFalse;TrueFalse;[2]TrueFalse;"},
		{"{% for a, b in [(1,2),(1,2),(1,3)] %}{{ loop.changed(a, b) }}{{ loop.changed() }}|{% endfor %}", "TrueTrue|TrueTrue|TrueTrue|"},
		{"{% for a in [1,2] %}{{ loop.changed(a) }}{{ loop.changed(a) }}{% endfor %}", "TrueFalseTrueFalse"},
		{"{% for m in [{'r': 'u'}, {'r': 'u'}, {'r': 'a'}] %}{% if loop.changed(m.r) %}<{{ m.r }}>{% endif %}{% endfor %}", "<u><a>"},
		{"{% for a in [1] %}{{ loop.changed(x=1) }}{% endfor %}", "error:unexpected keyword argument 'x'"},
	})
}

// TestLoopPrevNextItemAtTheEnds: loop.previtem at a loop's first item and
// loop.nextitem at its last are jinja2's Undefined, which prints "" and
// tests undefined but raises UndefinedError on an attribute or item of it
// ("there is no previous item"); the engine read an attribute of it as ""
// and went on, so a template reading loop.previtem.role unguarded
// rendered where jinja2 fails. Guarded reads render as before. The wants
// are jinja2 3.1.6's, set up as testdata/templates/py/check_jinja2.py
// sets it up (transformers' settings).
func TestLoopPrevNextItemAtTheEnds(t *testing.T) {
	const ms = "{% for m in [{'role': 'u'}, {'role': 'a'}] %}"
	renderEach(t, []struct{ src, want string }{
		{ms + "{{ loop.previtem.role }}{% endfor %}", "error:UndefinedError: there is no previous item"},
		{ms + "{{ loop.nextitem.role }}{% endfor %}", "error:UndefinedError: there is no next item"},
		{ms + "{{ loop.previtem['role'] }}{% endfor %}", "error:there is no previous item"},
		{ms + "{{ loop.previtem.role is defined }}{% endfor %}", "error:there is no previous item"},
		{ms + "[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", "[|{'role': 'a'}][{'role': 'u'}|]"},
		{ms + "{{ loop.previtem is defined }}{{ loop.nextitem is none }}{% endfor %}", "FalseFalseTrueFalse"},
		{ms + "{% if loop.previtem and loop.previtem.role == 'u' %}x{% endif %}{% endfor %}", "x"},
		{ms + "{% if not loop.first %}{{ loop.previtem.role }}{% endif %}{% if not loop.last %}{{ loop.nextitem['role'] }}{% endif %}{% endfor %}", "au"},
		{ms + "{{ loop.previtem|default('d') }}{% endfor %}", "d{'role': 'u'}"},
	})
}
