package serve

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/kernels/ref"
)

// withTemplate copies the tiny model with src as its chat_template.jinja.
func withTemplate(t *testing.T, src string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.CopyFS(dir, os.DirFS(tinyDir(t))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// hostileOn renders the conversation plainly, except that a message saying
// "recurse" starts a macro recursion without end and one saying "loop" a
// loop over range(10**12): the load-time check passes, then requests hit
// the bombs. Before rendering had limits the first killed the server with
// a stack overflow and the second ran until memory was gone.
const hostileOn = `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}` +
	`{% for m in messages %}{% if m.content == "recurse" %}{{ f(0) }}{% elif m.content == "loop" %}{% for i in range(10**12) %}{% endfor %}{% endif %}` +
	`<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}`

// TestHostileTemplateRequest: a request that trips the template's limits
// gets a 500 in OpenAI's error shape naming the limit and the template, at
// once, and the server goes on serving.
func TestHostileTemplateRequest(t *testing.T) {
	ts := startServer(t, Options{Model: withTemplate(t, hostileOn), MaxTokens: 4}, nil)
	for _, c := range []struct{ content, limit string }{{"recurse", "macro depth limit"}, {"loop", "steps limit"}} {
		start := time.Now()
		status, body := ts.post(t, "/v1/chat/completions", `{"model": "tiny", "max_tokens": 2, "messages": [{"role": "user", "content": "`+c.content+`"}]}`)
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || status != 500 || e.Error.Type != "server_error" || e.Error.Code != "chat_template_error" {
			t.Fatalf("%s: status %d, body %s", c.content, status, body)
		}
		for _, want := range []string{c.limit, "chat_template.jinja", "chat template is at fault"} {
			if !strings.Contains(e.Error.Message, want) {
				t.Errorf("%s: message %q lacks %q", c.content, e.Error.Message, want)
			}
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: took %v", c.content, took)
		}
	}
	status, body := ts.post(t, "/v1/chat/completions", `{"model": "tiny", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}`)
	if status != 200 {
		t.Fatalf("after the hostile requests: status %d, %s", status, body)
	}
}

// TestTemplateRenderingHasTheRequestDeadline: a template that would run
// for hours within its limits (raised here) stops at the request's
// deadline with the 504 that generation gives. Its list stays well under
// the value limit (100,000 items, about 3 MB as measured), so that the
// deadline is the only thing that can stop it, however fast the machine.
func TestTemplateRenderingHasTheRequestDeadline(t *testing.T) {
	slow := `{% for m in messages %}{% if m.content == "slow" %}{% set big = range(100000) %}` +
		`{% for i in big %}{% for j in big %}{% endfor %}{% endfor %}{% endif %}{{ m.content }}{% endfor %}`
	ts := startServer(t, Options{Model: withTemplate(t, slow), RequestTimeout: 50 * time.Millisecond, MaxTokens: 4}, func(s *Server) {
		s.tmpl.Limits = chattemplate.Limits{Steps: 1 << 50}
	})
	start := time.Now()
	status, body := ts.post(t, "/v1/chat/completions", `{"model": "tiny", "max_tokens": 2, "messages": [{"role": "user", "content": "slow"}]}`)
	if status != 504 || !strings.Contains(body, "deadline") {
		t.Fatalf("status %d, %s", status, body)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v", took)
	}
}

// TestServerRefusesAHostileTemplate: a template that fails on the plain
// conversation of the load-time check keeps the server from starting, with
// an error naming the template file.
func TestServerRefusesAHostileTemplate(t *testing.T) {
	dir := withTemplate(t, `{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}`)
	_, err := NewServer(Options{Model: dir, Backend: ref.New()})
	if !errors.Is(err, chattemplate.ErrBadTemplate) || !strings.Contains(err.Error(), filepath.Join(dir, "chat_template.jinja")) {
		t.Fatalf("got %v", err)
	}
}
