package chattemplate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: every template in testdata passes the load-time check; a
// template that fails every conversation, or loops when given tools, is
// refused with an error naming its file; one that only refuses a system
// message passes.
func TestCheck(t *testing.T) {
	for _, dir := range modelFolders {
		tmpl, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := tmpl.Check(t.Context()); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
	rows := []struct {
		name, src, want string // want "" passes
	}{
		{"recursive", `{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}`, "macro depth limit"},
		{"loops with tools", `{% if tools %}{% for i in range(10**10) %}{% endfor %}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}`, "steps limit"},
		// The engine's indent filter panics for a negative width.
		{"engine panic", `{{ "-"|indent(messages|length - 5) }}`, ErrEngine.Error()},
		// jinja2 has wordwrap and the engine has not: the template loads
		// (a name jinja2 has not is refused by Load: TestNamesMatchJinja2)
		// and the check renders it.
		{"filter the engine lacks", `{{ messages|wordwrap }}`, `unknown filter "wordwrap"`},
		{"no system role", `{% for m in messages %}{% if m.role == "system" %}{{ raise_exception("no system") }}{% endif %}{{ m.content }}{% endfor %}`, ""},
		{"always raises", `{{ raise_exception("never") }}`, "never"},
		{"cannot render tools", `{% if tools %}{{ tools|frobnicate }}{% endif %}{{ messages[0].content }}`, ""},
	}
	for _, r := range rows {
		dir := t.TempDir()
		path := filepath.Join(dir, "chat_template.jinja")
		if err := os.WriteFile(path, []byte(r.src), 0o644); err != nil {
			t.Fatal(err)
		}
		tmpl, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		err = tmpl.Check(t.Context())
		if r.want == "" {
			if err != nil {
				t.Errorf("%s: %v", r.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadTemplate) || !strings.Contains(err.Error(), r.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v, want an ErrBadTemplate naming %s and saying %q", r.name, err, path, r.want)
		}
	}
}
