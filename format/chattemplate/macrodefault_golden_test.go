package chattemplate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMacroDefaultsMatchJinja2 renders the templates of
// testdata/macrodefault/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: macro default values and
// {% call %} bodies, which count as levels of macro nesting
// (guardMacroDefaults), render as jinja2 renders them, falsy defaults
// included, and more calls in a row than the nesting limit allows at once
// end each level they start.
func TestMacroDefaultsMatchJinja2(t *testing.T) {
	checkRenderGolden(t, "macrodefault")
}

// checkRenderGolden renders every case of testdata/dir/golden.json (a
// make_golden.py beside it writes its vars and each case's src and the
// text jinja2 rendered, or the error it raised) and demands that text,
// or jinja2's message: a TemplateSyntaxError at load, any other when
// rendering.
func checkRenderGolden(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Vars  json.RawMessage `json:"vars"`
		Cases []struct {
			Src   string `json:"src"`
			Want  string `json:"want"`
			Error string `json:"error"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatalf("golden.json: %v", err)
	}
	vars, err := KwargsFromJSON(golden.Vars)
	if err != nil {
		t.Fatalf("golden.json vars: %v", err)
	}
	if len(golden.Cases) == 0 {
		t.Fatal("golden.json holds no case")
	}
	for _, c := range golden.Cases {
		tmpl, err := New(c.Src, nil)
		if want, ok := strings.CutPrefix(c.Error, "TemplateSyntaxError: "); ok {
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
		if c.Error != "" {
			// jinja2 raised when it rendered: "ValueError: msg"
			_, want, _ := strings.Cut(c.Error, ": ")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: got %q, %v; want an error saying %q (jinja2)", c.Src, got, err, want)
			}
			continue
		}
		switch {
		case err != nil:
			t.Errorf("%s: %v, jinja2 rendered %q", c.Src, err, c.Want)
		case got != c.Want:
			t.Errorf("%s:\n got %q\nwant %q (jinja2)", c.Src, got, c.Want)
		}
	}
}
