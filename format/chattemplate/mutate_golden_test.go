package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestMutatorsMatchJinja2 renders the templates of
// testdata/mutate/golden.json, written by make_golden.py beside it with
// jinja2 set up as transformers sets it up: list.append, list.insert
// (a negative index counts from the end) and dict.update, ours since
// they refuse to put a value inside itself (mutate.go), render as
// jinja2's, and so do attributes of those names.
func TestMutatorsMatchJinja2(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "mutate", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Vars  json.RawMessage `json:"vars"`
		Cases []struct {
			Src  string `json:"src"`
			Want string `json:"want"`
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
		case err != nil:
			t.Errorf("%s: %v, jinja2 rendered %q", c.Src, err, c.Want)
		case got != c.Want:
			t.Errorf("%s:\n got %q\nwant %q (jinja2)", c.Src, got, c.Want)
		}
	}
}
