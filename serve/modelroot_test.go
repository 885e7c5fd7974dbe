package serve

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestAdapterModelRoot: /v1/models, asked over HTTP with openai-go, names
// each adapter's step folder as its root, as vLLM names a LoRA's path
// (root) beside the base model it extends (parent); "<run>" names the
// folder of the step it currently means; the base model's root is the
// model folder served, as vLLM's is its --model. Before, root repeated
// the id.
func TestAdapterModelRoot(t *testing.T) {
	dir := tinyDir(t)
	adir := t.TempDir()
	writeStep(t, dir, adir, "r1", 2)
	ts := startServer(t, Options{Model: dir, Adapters: adir}, nil)
	page, err := ts.client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"r1":   filepath.Join(adir, "r1", stepName(2)),
		"r1@2": filepath.Join(adir, "r1", stepName(2)),
	}
	for _, m := range page.Data {
		if m.ID == "tiny" {
			// vLLM's base model card names the --model it loaded.
			if root := m.JSON.ExtraFields["root"].Raw(); root != `"`+dir+`"` {
				t.Errorf("tiny: root %s, want %q", root, dir)
			}
			continue
		}
		w, ok := want[m.ID]
		if !ok {
			t.Fatalf("unexpected model %q in %+v", m.ID, page.Data)
		}
		root := m.JSON.ExtraFields["root"].Raw()
		if root != `"`+w+`"` {
			t.Errorf("%s: root %s, want %q", m.ID, root, w)
		}
		if parent := m.JSON.ExtraFields["parent"].Raw(); parent != `"tiny"` {
			t.Errorf("%s: parent %s, want \"tiny\"", m.ID, parent)
		}
		delete(want, m.ID)
	}
	if len(want) > 0 {
		t.Fatalf("models %+v lack %v", page.Data, want)
	}
}

// TestAdapterModelRootAbsolute: with --adapters given as a relative path,
// /v1/models still names each step folder by its absolute path, as the
// vLLM front (--upstream) loads it into vLLM and vLLM then lists it, so
// that a client not in the server's working folder can tell which folder
// it is. Before, the root was relative to the server's working folder.
func TestAdapterModelRootAbsolute(t *testing.T) {
	dir := tinyDir(t)
	adir := t.TempDir()
	writeStep(t, dir, adir, "r1", 2)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, adir)
	if err != nil || filepath.IsAbs(rel) {
		t.Fatalf("no relative path from %s to %s: %q %v", wd, adir, rel, err)
	}
	ts := startServer(t, Options{Model: dir, Adapters: rel}, nil)
	page, err := ts.client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := `"` + filepath.Join(adir, "r1", stepName(2)) + `"`
	n := 0
	for _, m := range page.Data {
		if m.ID != "r1" && m.ID != "r1@2" {
			continue
		}
		n++
		if root := m.JSON.ExtraFields["root"].Raw(); root != want {
			t.Errorf("%s: root %s, want %s", m.ID, root, want)
		}
	}
	if n != 2 {
		t.Fatalf("models %+v lack r1 or r1@2", page.Data)
	}
}
