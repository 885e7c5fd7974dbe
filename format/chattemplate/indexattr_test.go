package chattemplate

import (
	"encoding/json"
	"testing"
)

// TestNumberAttributeIsAnItem: x.0 is x[0], as jinja2 parses it; the
// engine looked for an attribute named "0" and found nothing, so GLM-5.1's
// test for a tool result that names tools (the first case has its form)
// was never true. The wants are Python jinja2 3.1.6's, set up as
// transformers sets it up.
func TestNumberAttributeIsAnItem(t *testing.T) {
	msgs := json.RawMessage(`[{"role": "user", "content": [{"type": "tool_reference", "name": "f"}]}, {"role": "assistant", "content": "A1"}]`)
	cases := []struct{ src, want string }{
		{"{% for m in msgs %}{% if m.content is not string and m.content.0.type == 'tool_reference' %}ref:{{ m.content.0.name }}{% else %}{{ m.content.1 }}{% endif %};{% endfor %}", "ref:f;1;"},
		{"{{ msgs.1.content }}|{{ msgs.0.content.0['type'].0 }}|{{ msgs[1].content.0 }}|{{ 1.5 }}|{{ msgs.5 is defined }}|{{ (msgs|last).role.2 }}|{{ 'x.0' }}", "A1|t|A|1.5|False|s|x.0"},
		// Two numbers in a row: the engine's lexer reads .0.1 as a dot
		// and the float 0.1, and refused the template.
		{"{{ msgs.1.content.0 }}|{{ [[1, 2], [3]].0.1 }}|{% set p = msgs.0.content.0.name %}{{ p }}|{% raw %}{{ x.0.1 }}{% endraw %}", "A|2|f|{{ x.0.1 }}"},
	}
	for _, c := range cases {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{"msgs": msgs}})
		if err != nil || got != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.src, got, err, c.want)
		}
	}
}
