package chattemplate

import (
	"strings"
	"testing"
)

// TestMutatorsMatchJinja2 renders the templates of
// testdata/mutate/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: list.append, list.insert,
// dict.update and the pop of both fail with the SecurityError of
// transformers' sandbox, where the engine's changed the value in place
// and the template rendered; attributes of those names are undefined, as the sandbox's,
// and calling them on a value that lacks them fails as jinja2's does.
func TestMutatorsMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "mutate", jinja2Messages)
}

// TestMutatorTakenAsValue: list.append taken as a value and called later
// fails, as in transformers' sandbox, whose unsafe attribute raises a
// SecurityError when called; here the value is undefined, and calling it
// fails saying so. The list is left as it was.
func TestMutatorTakenAsValue(t *testing.T) {
	for _, src := range []string{
		`{% set l = [] %}{% set f = l.append %}{{ f(1) }}`,
		`{% set d = {} %}{% set f = d.update %}{% set _ = f({'a': 1}) %}`,
	} {
		tmpl, err := New(src, nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := tmpl.Render(t.Context(), Input{})
		if err == nil || !strings.Contains(err.Error(), "not callable") {
			t.Errorf("%s: rendered %q (%v), want an error saying the value is not callable", src, got, err)
		}
	}
}
