package chattemplate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// jinja2Golden is a testdata/<dir>/golden.json, written by the
// make_golden.py beside it (its case loop is
// testdata/templates/py/golden_cases.py) with jinja2 set up as
// transformers sets it up: the variables every case renders with and, for
// each template, what jinja2 did with it. Filters and Tests are the names
// of jinja2's filters and tests, which only testdata/names records.
type jinja2Golden struct {
	Vars    json.RawMessage `json:"vars"`
	Filters []string        `json:"filters"`
	Tests   []string        `json:"tests"`
	Cases   []jinja2Case    `json:"cases"`
}

// jinja2Case records one of three things jinja2 did with Src: refused it
// when it compiled it (LoadError), raised when it rendered it (Error), or
// rendered Want. Errors are written "Class: message".
type jinja2Case struct {
	Src       string  `json:"src"`
	Want      *string `json:"want"`
	Error     string  `json:"error"`
	LoadError string  `json:"load_error"`
}

// jinja2Rules says how closely a golden's failures must match jinja2's;
// what renders must always render the same text, and a LoadError is
// always a refusal at load (ErrBadTemplate), whatever its message.
type jinja2Rules struct {
	// syntaxErrorAtLoad: an Error "TemplateSyntaxError: msg" (the
	// generator loaded and rendered in one step) means a refusal at load
	// (ErrBadTemplate) that says msg. Without it every template but a
	// LoadError's must load.
	syntaxErrorAtLoad bool
	// message maps jinja2's Error to what the rendering's error must
	// contain; nil lets any error stand for jinja2's, where the message
	// is ours.
	message func(jinja2Error string) string
}

// jinja2Outcomes holds the engine to what jinja2 did, not to what it
// said: a template loads unless jinja2 refused it at load (LoadError), and
// a rendering fails, saying what it will, where jinja2's raised.
var jinja2Outcomes = jinja2Rules{}

// jinja2Messages holds the engine to jinja2's messages: a
// TemplateSyntaxError is a refusal at load saying the same, any other
// error a rendering that fails saying what follows the class.
var jinja2Messages = jinja2Rules{syntaxErrorAtLoad: true, message: func(e string) string {
	_, msg, _ := strings.Cut(e, ": ")
	return msg
}}

// checkJinja2Golden checks every case of testdata/dir/golden.json.
func checkJinja2Golden(t *testing.T, dir string, rules jinja2Rules) {
	t.Helper()
	readJinja2Golden(t, dir).check(t, rules)
}

func readJinja2Golden(t *testing.T, dir string) jinja2Golden {
	t.Helper()
	path := filepath.Join("testdata", dir, "golden.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var golden jinja2Golden
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return golden
}

// check loads and renders each case with the golden's variables and
// demands what jinja2 did, as rules say.
func (g jinja2Golden) check(t *testing.T, rules jinja2Rules) {
	t.Helper()
	vars, err := KwargsFromJSON(g.Vars)
	if err != nil {
		t.Fatalf("golden.json vars: %v", err)
	}
	if len(g.Cases) == 0 {
		t.Fatal("golden.json holds no case")
	}
	for _, c := range g.Cases {
		// make_golden.py writes exactly one outcome; a case with none or
		// two would leave it open what the engine must do.
		if n := countTrue(c.Want != nil, c.Error != "", c.LoadError != ""); n != 1 {
			t.Errorf("%s: golden.json case holds %d of want, error and load_error, want 1", c.Src, n)
			continue
		}
		tmpl, err := New(c.Src, nil)
		if c.LoadError != "" {
			if err == nil || !errors.Is(err, ErrBadTemplate) {
				t.Errorf("%s: loaded (err %v), jinja2 refused it: %s", c.Src, err, c.LoadError)
			}
			continue
		}
		if want, ok := strings.CutPrefix(c.Error, "TemplateSyntaxError: "); ok && rules.syntaxErrorAtLoad {
			if err == nil || !errors.Is(err, ErrBadTemplate) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: got %v, want a refusal at load saying %q (jinja2)", c.Src, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: refused at load: %v", c.Src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{Kwargs: vars})
		switch {
		case c.Error != "" && err == nil:
			t.Errorf("%s: rendered %q, jinja2 raised %s", c.Src, got, c.Error)
		case c.Error != "" && rules.message != nil && !strings.Contains(err.Error(), rules.message(c.Error)):
			t.Errorf("%s: %v, want an error saying %q (jinja2's %s)", c.Src, err, rules.message(c.Error), c.Error)
		case c.Error != "":
			// it failed, as jinja2 did
		case err != nil:
			t.Errorf("%s: %v, jinja2 rendered %q", c.Src, err, *c.Want)
		case got != *c.Want:
			t.Errorf("%s:\n got %q\nwant %q (jinja2)", c.Src, got, *c.Want)
		}
	}
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
