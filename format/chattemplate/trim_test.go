package chattemplate

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/format/chatmsg"
)

// TestTrimIsPythonStrip: the trim filter strips what Python's str.strip()
// strips, as jinja2 (transformers, vLLM) does: U+001C..U+001F are
// whitespace to Python and not to Go's unicode.IsSpace, so Llama 3.1's
// template (content | trim) rendered a message that begins or ends with
// one of them differently from the server that sampled the conversation.
// The wants are Python jinja2 3.1.6's output with transformers' setup
// (testdata/templates/py/check_jinja2.py's environment).
func TestTrimIsPythonStrip(t *testing.T) {
	tmpl, err := Load(filepath.Join(templatesDir, "llama3.1"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(t.Context(), Input{Messages: []chatmsg.Message{
		{Role: "user", Content: "\x1chi\x1d \x1e\x1f"},
		{Role: "assistant", Content: "\x1fyo\u0085"},
	}})
	want := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nyo<|eot_id|>"
	if err != nil || got != want {
		t.Errorf("got %q (%v)\nwant %q", got, err, want)
	}

	small, err := New(`{{ x|trim }}|{{ x | trim(c) }}|{{ n|trim }}|{{ 5|trim }}|{% set y = x|trim %}{{ y }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err = small.Render(t.Context(), Input{Kwargs: map[string]any{"x": "\x1c a \x1f", "n": nil, "c": "\x1c"}})
	// jinja2 prints None|trim as "None"; the engine's "" is kept.
	if want := "a| a \x1f||5|a"; err != nil || got != want {
		t.Errorf("got %q (%v), want %q", got, err, want)
	}
}

// TestLstripBlocksNotAfterATagOnTheLine: lstrip_blocks strips the spaces
// before a block tag only when the tag starts its line. The engine also
// stripped them when they were the template's first text but came after a
// tag on the same line, so Tenyx's and Orca's templates ("{{ bos_token }}
// {% for message in messages %}…") lost the space after <s>. The wants are
// Python jinja2 3.1.2's, set up as transformers sets it up:
//
//	"{{ bos_token }} {% for … %}…"    -> '<s> hi'
//	"{% set a = 1 %}\t {# c #}x"       -> '\t x'
//	"{%- set a = 1 -%}  {% if true %}x" -> 'x'
//	"  {% if true %}x{% endif %}"      -> 'x'
//	"{% if true %}{% endif %}  {%- if true %}x{% endif %}" -> 'x'
//	"{% raw %}a{% endraw %}  {% if true %}x{% endif %}"    -> 'a  x'
func TestLstripBlocksNotAfterATagOnTheLine(t *testing.T) {
	cases := []struct{ src, want string }{
		{"{{ bos_token }} {% for message in messages %}{{ message['content'] }}{% endfor %}", "<s> hi"},
		{"{% set a = 1 %}\t {# c #}x", "\t x"},
		{"{%- set a = 1 -%}  {% if true %}x{% endif %}", "x"},
		{"  {% if true %}x{% endif %}", "x"},
		{"{% if true %}{% endif %}  {%- if true %}x{% endif %}", "x"},
		{"{% raw %}a{% endraw %}  {% if true %}x{% endif %}", "a  x"},
	}
	for _, c := range cases {
		tmpl, err := New(c.src, map[string]string{"bos_token": "<s>"})
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		got, err := tmpl.Render(t.Context(), Input{Messages: []chatmsg.Message{{Role: "user", Content: "hi"}}})
		if err != nil || got != c.want {
			t.Errorf("%q: got %q (%v), want %q", c.src, got, err, c.want)
		}
	}
}

// TestFloatsPrintAsPython: {{ }} prints a float as Python's str() does,
// with its ".0" and its exponent, as jinja2 does; the engine printed
// 6 / 2 and a tool schema's "default": 1.0 as "3" and "1". The want is
// Python jinja2 3.1.2's.
func TestFloatsPrintAsPython(t *testing.T) {
	tmpl, err := New(`{{ 6 / 2 }}|{{ 1.0 }}|{{ x }}|{{ y }}|{{ z }}|{{ n }}|{{ 7 / 2 }}|{{ -0.0 }}|{{ d.default }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(t.Context(), Input{Kwargs: map[string]any{
		"x": 2.0, "y": 1e16, "z": math.Inf(1), "n": 1.5e-7, "d": json.RawMessage(`{"default": 1.0}`),
	}})
	if want := "3.0|1.0|2.0|1e+16|inf|1.5e-07|3.5|-0.0|1.0"; err != nil || got != want {
		t.Errorf("got %q (%v), want %q", got, err, want)
	}
}
