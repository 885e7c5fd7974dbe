package chattemplate

import (
	"errors"
	"strings"
	"testing"
)

// TestSliceChargesSteps: slice builds a list for each of its columns, an
// empty one too, so its count costs a step per column as range's items
// do: [1]|slice(4000000) in a loop of 20 allocated gigabytes over seconds
// and stopped at no limit; past the steps left, or past a list that
// ValueBytes holds, it stops the rendering with a *LimitError, below
// them it renders.
func TestSliceChargesSteps(t *testing.T) {
	rows := []struct {
		src   string
		steps int64
		want  string // the text, or "limit:" and the limit it stops at
	}{
		{`{% for i in range(20) %}{{ [1]|slice(600000)|length }}{% endfor %}`, 0, "limit:steps"},
		{`{{ [1]|slice(4000000)|length }}`, 0, "limit:value bytes"},
		{`{{ [1]|slice(2000)|length }}`, 1000, "limit:steps"},
		{`{{ [1, 2]|slice(500)|length }}|{{ [1, 2, 3]|slice(2)|list }}`, 1000, "500|[[1, 2], [3]]"},
	}
	for _, r := range rows {
		tmpl, err := New(r.src, nil)
		if err != nil {
			t.Fatalf("%s: %v", r.src, err)
		}
		tmpl.Limits = Limits{Steps: r.steps}
		got, err := tmpl.Render(t.Context(), Input{})
		var le *LimitError
		limit, isLimit := strings.CutPrefix(r.want, "limit:")
		switch {
		case !isLimit && (err != nil || got != r.want):
			t.Errorf("%s: got %q (%v), want %q", r.src, got, err, r.want)
		case isLimit && (!errors.As(err, &le) || le.Limit != limit):
			t.Errorf("%s: got %q (%v), want a %s limit error", r.src, got, err, limit)
		}
	}
}
