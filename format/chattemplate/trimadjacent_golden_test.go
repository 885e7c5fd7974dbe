package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestTrimStopsAtTheNextTag renders the templates of
// testdata/trimadjacent/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: trim_blocks, lstrip_blocks
// and the "-" markers strip only the text that touches their tag. The
// engine looked from each tag to the nearest text past any tags between,
// so "{% if t %}{{ x }}\nX" lost its newline and "P {{ x }}{%- if t %}"
// its space.
func TestTrimStopsAtTheNextTag(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "trimadjacent", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Vars  json.RawMessage `json:"vars"`
		Cases []loadCase      `json:"cases"`
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatalf("golden.json: %v", err)
	}
	checkLoadGolden(t, golden.Vars, golden.Cases)
}
