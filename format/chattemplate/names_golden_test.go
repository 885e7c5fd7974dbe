package chattemplate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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
	data, err := os.ReadFile(filepath.Join("testdata", "names", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Vars    json.RawMessage `json:"vars"`
		Filters []string        `json:"filters"`
		Tests   []string        `json:"tests"`
		Cases   []loadCase      `json:"cases"`
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatalf("golden.json: %v", err)
	}
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
	checkLoadGolden(t, golden.Vars, golden.Cases)
}

// loadCase is a case of a golden that records whether jinja2 refused the
// template when it compiled it (load_error), raised when it rendered it
// (error) or rendered it (want).
type loadCase struct {
	Src       string  `json:"src"`
	Want      *string `json:"want"`
	Error     string  `json:"error"`
	LoadError string  `json:"load_error"`
}

// checkLoadGolden loads and renders each case as jinja2 did: refused at
// load (ErrBadTemplate) where jinja2's compiler refused it, else a
// rendering that fails where jinja2's raised or gives what it rendered.
func checkLoadGolden(t *testing.T, rawVars json.RawMessage, cases []loadCase) {
	t.Helper()
	vars, err := KwargsFromJSON(rawVars)
	if err != nil {
		t.Fatalf("golden.json vars: %v", err)
	}
	if len(cases) == 0 {
		t.Fatal("golden.json holds no case")
	}
	for _, c := range cases {
		tmpl, err := New(c.Src, nil)
		if c.LoadError != "" {
			if err == nil || !errors.Is(err, ErrBadTemplate) {
				t.Errorf("%s: loaded (err %v), jinja2 refused it: %s", c.Src, err, c.LoadError)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: refused at load: %v", c.Src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{Kwargs: vars})
		switch {
		case c.Want == nil && err == nil:
			t.Errorf("%s: rendered %q, jinja2 raised %s", c.Src, got, c.Error)
		case c.Want != nil && err != nil:
			t.Errorf("%s: %v, jinja2 rendered %q", c.Src, err, *c.Want)
		case c.Want != nil && got != *c.Want:
			t.Errorf("%s:\n got %q\nwant %q (jinja2)", c.Src, got, *c.Want)
		}
	}
}
