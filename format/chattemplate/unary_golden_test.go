package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestUnaryMatchesJinja2 renders the templates of
// testdata/unary/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up, and compares each with what
// jinja2 rendered: a unary - or + on what is no number (a string, None, a
// list, an undefined name) fails, as Python's does, where the engine gave
// 0 and rendered on; on numbers it is Python's.
func TestUnaryMatchesJinja2(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "unary", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Vars  json.RawMessage `json:"vars"`
		Cases []struct {
			Src   string  `json:"src"`
			Want  *string `json:"want"`
			Error string  `json:"error"`
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
