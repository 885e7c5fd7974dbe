package chattemplate

import "testing"

// TestTrailingNewlineDropped: jinja2's lexer, as transformers sets it up,
// drops one line break at the end of a template and reads \r\n and \r as
// \n everywhere; the engine kept them, so DeepSeek Coder's template (the
// last case, its ending; it is a file ending in a newline) put "\n" after
// the generation prompt. The wants are Python jinja2 3.1.6's.
func TestTrailingNewlineDropped(t *testing.T) {
	cases := []struct{ src, want string }{
		{"{{ 'a' }}\n", "a"},
		{"x\r\ny\n\n", "x\ny\n"},
		{"a\rb\r\n", "a\nb"},
		{"{% if true %}\r\nx{% endif %}\r\n", "x"},
		{"{{ 'p\r\nq' }}", "p\nq"},
		{"{% raw %}a\r\n{% endraw %}\n", "a\n"},
		{"{%- if add_generation_prompt %}{{'### Response:\\n'}}{% endif %}\n{{'### Response:\\n'}}\n", "### Response:\n"},
	}
	for _, c := range cases {
		tmpl, err := New(c.src, nil)
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{})
		if err != nil || got != c.want {
			t.Errorf("%q: got %q (%v), want %q", c.src, got, err, c.want)
		}
	}
}
