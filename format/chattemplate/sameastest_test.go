package chattemplate

import "testing"

// TestSameasIsIdentity: `is sameas` is Python's `is`, as in jinja2, by
// `is` and by a select or reject that names it: two lists or dicts built
// apart are not the same though equal, 1 is not true nor 0 false, and an
// undefined value is not itself; the engine's test compared by equality
// and said true of all of them. A list, a dict or a value read twice from
// the same place, none, bools and equal small numbers and strings stay
// the same. The outcomes are jinja2 3.1.6's, set up as
// testdata/templates/py/check_jinja2.py sets it up (transformers'
// settings).
func TestSameasIsIdentity(t *testing.T) {
	renderEach(t, []struct{ src, want string }{
		{"{{ [1] is sameas [1] }}{{ {} is sameas {} }}{{ none is sameas none }}{{ 1 is sameas true }}{{ 0 is sameas false }}{{ true is sameas true }}{{ nothing is sameas nothing }}{{ 1 is sameas 1.0 }}{{ 'a' is sameas 'a' }}{{ 256 is sameas 256 }}",
			"FalseFalseTrueFalseFalseTrueFalseFalseTrueTrue"},
		{"{% set l = [1] %}{% set k = [1] %}{{ l is sameas l }}{{ l is sameas k }}{% set ms = [{'r': 'u'}, {'r': 'a'}] %}{% for m in ms %}{{ m is sameas ms[loop.index0] }}{{ m.r is sameas m.r }}{% endfor %}{% set x = 257 %}{% set y = 257 %}{{ x is sameas y }}{{ none is not sameas none }}",
			"TrueFalseTrueTrueTrueTrueTrueFalse"},
		{"{{ [1, none, true, [1]]|select('sameas', none)|list }}{{ [1, true, 1.0]|reject('sameas', true)|list }}{{ [1, true]|select('sameas', 1)|list }}", "[None][1, 1.0][1]"},
		{"{{ 6 is not sameas(*[3]) }}|{{ 6 is sameas(*[6]) }}", "True|True"},
	})
}
