package chattemplate

import (
	"strings"
	"testing"
)

// TestStrFormatMatchJinja2 renders the templates of
// testdata/strformat/golden.json, written by make_golden.py beside it
// with jinja2 set up as transformers sets it up: str.format with
// positions, names, .attr and [key], !s and !r, {{ and }}, and format
// specs, with fields inside them, renders what jinja2's sandbox renders and fails where it raises,
// saying what it says.
func TestStrFormatMatchJinja2(t *testing.T) {
	checkJinja2Golden(t, "strformat", jinja2Messages)
}

// TestStrFormatNestedWidthBounded: a width or precision filled in from
// an argument ({:>{}}) is as bounded as a written one: past what one
// value may hold the rendering fails before it allocates the padding,
// where below it renders.
func TestStrFormatNestedWidthBounded(t *testing.T) {
	rows := []struct {
		src, want string
		fails     bool // want is what the error says
	}{
		{`{{ '{:>{}}'.format('a', 5) }}|{{ '{:.{}f}'.format(1.5, 2) }}`, "    a|1.50", false},
		{`{{ '{:>{}}'.format('a', 99999999) }}`, "width 99999999 is past the value bytes limit", true},
		{`{{ '{:.{}f}'.format(1.5, 99999999) }}`, "precision 99999999 is past the value bytes limit", true},
		{`{{ '{:>{}}'.format('a', '9' * 30) }}`, "Too many decimal digits", true},
	}
	for _, r := range rows {
		tmpl, err := New(r.src, nil)
		if err != nil {
			t.Fatalf("%s: %v", r.src, err)
		}
		got, err := tmpl.Render(t.Context(), Input{})
		if r.fails && (err == nil || !strings.Contains(err.Error(), r.want)) || !r.fails && (err != nil || got != r.want) {
			t.Errorf("%s: got %q (%v), want %q", r.src, got, err, r.want)
		}
	}
}
