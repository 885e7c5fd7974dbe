package chattemplate

import (
	"slices"
	"sort"
	"testing"
)

// TestNamesMatchJinja2 loads and renders the templates of
// testdata/names/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: a filter or test jinja2 has
// not must refuse the template when it is loaded (ErrBadTemplate), as
// jinja2's compiler does, except where jinja2 puts the error off to the
// rendering (in an {% if %} or an inline if-expression), where the
// rendering fails only if it runs; a test named by what is no name
// (x is 3) or chained (x is odd is true) refuses it wherever it is, as
// jinja2's parser does, and so does a tag whose name runs on past a
// keyword ({%for0%0 in 0%}, {%if0%}), which the engine read as for and if
// ("please report this as a bug" or a rendering). The filter and test
// names jinja2 has are checked against jinja2Filters and jinja2Tests.
func TestNamesMatchJinja2(t *testing.T) {
	golden := readJinja2Golden(t, "names")
	for _, names := range []struct {
		what string
		ours map[string]bool
		want []string
	}{{"filters", jinja2Filters, golden.Filters}, {"tests", jinja2Tests, golden.Tests}} {
		var ours []string
		for k := range names.ours {
			ours = append(ours, k)
		}
		sort.Strings(ours)
		if !slices.Equal(ours, names.want) {
			t.Errorf("%s:\n ours   %q\n jinja2 %q", names.what, ours, names.want)
		}
	}
	golden.check(t, jinja2Outcomes)
}
