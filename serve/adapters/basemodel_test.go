package adapters

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/train/model"
)

const msgOtherBase = "adapters: the adapter names another base model than the one served; its outputs may be meaningless"

// TestWarnsOtherBaseModel: a step whose adapter_config.json
// base_model_name_or_path names another model than the one served (its
// shapes matching, so it loads) is served with one warning naming the
// step's folder, its base_model_name_or_path and the served model; the
// run's later steps with the same base say nothing more, and a step that
// names the served model again clears the warning. A base that names the
// served model by its hub id, its folder's path, a Hugging Face cache
// snapshot of it, or that is not given, is not warned about. Before, such
// an adapter was served without a word (as PEFT and vLLM do).
func TestWarnsOtherBaseModel(t *testing.T) {
	c := testConfig(t)
	served := "/models/Qwen2.5-0.5B-Instruct"
	step := func(t *testing.T, root string, n int, base string) string {
		t.Helper()
		ad, err := model.NewAdapter(c, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: []model.Module{model.ModQ}}, uint64(n))
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("step-%06d", n)
		dir := filepath.Join(root, "exp", name)
		if err := model.WriteAdapter(dir, ad, base); err != nil {
			t.Fatal(err)
		}
		setLatest(t, filepath.Join(root, "exp"), name)
		return dir
	}
	newReg := func(root, path, name string) (*Registry, *records) {
		h := &records{}
		return New(Options{Dir: root, Config: c, MaxKeep: 2, Log: slog.New(h), ModelPath: path, ModelName: name}), h
	}
	poll := func(t *testing.T, r *Registry) {
		t.Helper()
		if got := r.Poll(context.Background()); got != 1 {
			t.Fatalf("loaded %d adapters, want 1 (a base model's name alone does not refuse a step)", got)
		}
	}

	t.Run("other", func(t *testing.T) {
		root := t.TempDir()
		r, logs := newReg(root, served, "Qwen2.5-0.5B-Instruct")
		dir := step(t, root, 1, "meta-llama/Llama-3.2-1B-Instruct")
		poll(t, r)
		if n := logs.count(slog.LevelWarn, msgOtherBase, "dir", dir, "base_model_name_or_path", "meta-llama/Llama-3.2-1B-Instruct",
			"served_model", served); n != 1 {
			t.Fatalf("%d warnings naming the step, its base and the served model, want 1; logs:\n%s", n, logs)
		}
		step(t, root, 2, "meta-llama/Llama-3.2-1B-Instruct")
		poll(t, r)
		if n := logs.count(slog.LevelWarn, msgOtherBase); n != 1 {
			t.Fatalf("a later step of the same base: %d warnings in all, want still 1; logs:\n%s", n, logs)
		}
		step(t, root, 3, "Qwen/Qwen2.5-0.5B-Instruct")
		poll(t, r)
		step(t, root, 4, "meta-llama/Llama-3.2-1B-Instruct")
		poll(t, r)
		if n := logs.count(slog.LevelWarn, msgOtherBase, "dir", "step-000004"); n != 1 {
			t.Fatalf("the other base back after a step of the served one: %d warnings for it, want 1; logs:\n%s", n, logs)
		}
	})

	for _, tc := range []struct{ what, path, name, base string }{
		{"the hub id of the served folder", served, "", "Qwen/Qwen2.5-0.5B-Instruct"},
		{"another path to the served folder", served, "", "/data/ckpt/Qwen2.5-0.5B-Instruct/"},
		{"the served name", "/models/local", "Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"},
		{"a hub cache snapshot", "/hf/hub/models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/0123abcd", "", "Qwen/Qwen2.5-0.5B-Instruct"},
		{"no base given", served, "", ""},
		{"no served model known", "", "", "meta-llama/Llama-3.2-1B-Instruct"},
		// hone-train writes --model as given: "--model ." names no model.
		{"a base given as the trainer's working folder", served, "", "."},
		{"a base given as ./", served, "", "./"},
		// hone-serve --model . run inside the model's folder.
		{"the served folder given as .", ".", ".", "Qwen/Qwen2.5-0.5B-Instruct"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			root := t.TempDir()
			if tc.path == "." {
				wd := filepath.Join(t.TempDir(), "Qwen2.5-0.5B-Instruct")
				if err := os.Mkdir(wd, 0o755); err != nil {
					t.Fatal(err)
				}
				t.Chdir(wd)
			}
			r, logs := newReg(root, tc.path, tc.name)
			step(t, root, 1, tc.base)
			poll(t, r)
			if n := logs.count(slog.LevelWarn, msgOtherBase); n != 0 {
				t.Fatalf("%d warnings, want none; logs:\n%s", n, logs)
			}
		})
	}
}
