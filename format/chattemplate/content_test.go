package chattemplate

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/chatmsg"
)

// TestContentParts: a conversation whose contents are lists of text parts
// (what OpenAI's clients send for multi-part messages, and what a recorded
// trajectory keeps) renders with the templates that take content as a
// string — Qwen2.5's, Qwen3's, Llama 3.1's, ChatML — as the same
// conversation with each list's text parts joined by newlines, as vLLM's
// "auto" content format gives it (the list itself printed as its Python
// repr into Qwen2.5's and Llama's prompts, and failed Qwen3's template);
// Gemma 3's template, which loops over a message's content, gets the list
// and prints each text part.
func TestContentParts(t *testing.T) {
	parts := []chatmsg.Message{
		{Role: "system", ContentJSON: json.RawMessage(`[{"type":"text","text":"be brief"}]`)},
		{Role: "user", ContentJSON: json.RawMessage(`[{"type":"text","text":"hello"},{"type":"image_url","image_url":{"url":"data:,"}},{"type":"text","text":"there"}]`)},
	}
	strs := []chatmsg.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello\nthere"}}
	for _, name := range goldenModels {
		t.Run(name, func(t *testing.T) {
			tmpl, err := Load(filepath.Join(templatesDir, name))
			if err != nil {
				t.Fatal(err)
			}
			render := func(msgs []chatmsg.Message) string {
				t.Helper()
				out, err := tmpl.Render(context.Background(), Input{Messages: msgs, AddGenerationPrompt: true})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			got := render(parts)
			if strings.Contains(got, "'type'") || strings.Contains(got, `"type"`) {
				t.Errorf("the parts' list reached the prompt:\n%s", got)
			}
			if name == "gemma3" {
				if !strings.Contains(got, "hello") || !strings.Contains(got, "there") || got == render(strs) {
					t.Errorf("gemma3 should print each text part from the list:\n%s", got)
				}
				return
			}
			if want := render(strs); got != want {
				t.Errorf("content parts rendered as\n%q\nthe joined strings as\n%q", got, want)
			}
		})
	}
}

// TestLoopsOverContent: of the committed templates, Gemma 3's loops over a
// message's content (its images); the text models' do not. And the forms
// the detection must tell apart.
func TestLoopsOverContent(t *testing.T) {
	for _, name := range goldenModels {
		tmpl, err := Load(filepath.Join(templatesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := loopsOverContent(tmpl.Source("default")), name == "gemma3"; got != want {
			t.Errorf("%s: loopsOverContent %v, want %v", name, got, want)
		}
	}
	for src, want := range map[string]bool{
		`{% for m in messages %}{% for p in m.content if p.type == 'text' %}{{ p.text }}{% endfor %}{% endfor %}`:     true,
		`{% for m in messages %}{%- for p in m['content'] -%}{{ p.text }}{% endfor %}{% endfor %}`:                    true,
		`{% for m in messages %}{% set c = m['content'] %}{%- for p in c -%}{{ p.text }}{% endfor %}{% endfor %}`:     true,
		`{% for m in messages %}{% for p in m.content | list %}{{ p }}{% endfor %}{% endfor %}`:                       true,
		`{% for m in messages %}{% for line in m.content.split('\n') %}{{ line }}{% endfor %}{% endfor %}`:            false,
		`{% for m in messages %}{% set c = m.content | trim %}{% for x in c %}{{ x }}{% endfor %}{% endfor %}`:        false,
		`{% for message in messages %}{{ message.content }}{% endfor %}{% for tool in tools %}{{ tool }}{% endfor %}`: false,
	} {
		if got := loopsOverContent(src); got != want {
			t.Errorf("loopsOverContent(%s) = %v, want %v", src, got, want)
		}
	}
}

// TestContentLinesBadPart: a list whose parts are malformed is an error
// naming the message and the part, for a string-content template too.
func TestContentLinesBadPart(t *testing.T) {
	tmpl, err := Load(filepath.Join(templatesDir, "qwen2.5"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(context.Background(), Input{Messages: []chatmsg.Message{
		{Role: "user", ContentJSON: json.RawMessage(`[{"type":"text","text":7}]`)},
	}})
	if err == nil || !strings.Contains(err.Error(), "message 0 (user)") || !strings.Contains(err.Error(), "[0].text") {
		t.Errorf("got %v, want an error naming message 0 and [0].text", err)
	}
}

// TestInputNow: strftime_now prints Input.Now when it is set, else the
// Template's Clock.
func TestInputNow(t *testing.T) {
	tmpl, err := New(`{{ strftime_now('%Y-%m-%d') }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Clock = func() time.Time { return time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC) }
	for now, want := range map[time.Time]string{{}: "2024-07-26", time.Date(2025, 1, 2, 23, 0, 0, 0, time.UTC): "2025-01-02"} {
		if got, err := tmpl.Render(context.Background(), Input{Now: now}); err != nil || got != want {
			t.Errorf("Now %v: %q, %v; want %q", now, got, err, want)
		}
	}
}
