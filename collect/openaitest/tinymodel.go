package openaitest

import (
	"os"
	"path/filepath"
	"testing"
)

// TinyQwenModel copies the repository's tiny test model into a temporary
// folder with Qwen2.5's chat template (Hermes tool calls), for a test to
// serve with the real hone-serve (StartProcess) as it is or edited, and
// returns the folder. root is the repository's root, relative to the
// test's package folder ("..", "../..").
func TinyQwenModel(t testing.TB, root string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "serve", "testdata", "tiny"))); err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile(filepath.Join(root, "testdata", "templates", "qwen2.5", "chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), tmpl, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
