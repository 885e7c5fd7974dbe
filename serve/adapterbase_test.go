package serve

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/internal/waitfor"
)

// setBase rewrites the base_model_name_or_path of run's step n.
func setBase(t *testing.T, adaptersDir, run string, n int, base string) {
	t.Helper()
	p := filepath.Join(adaptersDir, run, stepName(n), peft.ConfigName)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	cfg["base_model_name_or_path"] = base
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAdapterOtherBaseWarned: hone-serve serving the tiny model folder
// loads an adapter whose adapter_config.json names another base model
// (same shapes) with a warning naming the step's folder, its
// base_model_name_or_path and the served folder, and serves it; one whose
// base is the hub id of a folder of the served one's name is loaded
// without a word. Before, both were served silently.
func TestAdapterOtherBaseWarned(t *testing.T) {
	dir := tinyDir(t)
	adir := t.TempDir()
	writeStep(t, dir, adir, "other", 1)
	setBase(t, adir, "other", 1, "meta-llama/Llama-3.2-1B-Instruct")
	writeStep(t, dir, adir, "same", 1)
	setBase(t, adir, "same", 1, "some-org/"+filepath.Base(dir))
	var log waitfor.Buffer
	ts := startServer(t, Options{Model: dir, Adapters: adir, Log: slog.New(slog.NewTextHandler(&log, nil))}, nil)
	const msg = "the adapter names another base model than the one served"
	var warns []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, msg) {
			warns = append(warns, l)
		}
	}
	if len(warns) != 1 {
		t.Fatalf("%d warnings about another base model, want 1 (the run \"other\"); log:\n%s", len(warns), log.String())
	}
	for _, want := range []string{filepath.Join(adir, "other", stepName(1)), "base_model_name_or_path=meta-llama/Llama-3.2-1B-Instruct", "served_model=" + dir} {
		if !strings.Contains(warns[0], want) {
			t.Errorf("the warning does not name %q: %s", want, warns[0])
		}
	}
	resp, err := ts.client.Chat.Completions.New(t.Context(), chatParams("other", 1, 2))
	if err != nil {
		t.Fatalf("the adapter of another base is still served: %v", err)
	}
	if resp.Model != "other@1" {
		t.Errorf("model %q, want other@1", resp.Model)
	}
}
