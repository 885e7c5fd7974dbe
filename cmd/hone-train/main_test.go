package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/cmd/internal/cli"
	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/modelfolder/modelfoldertest"
	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/runfolder"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/checkpoint"
	"github.com/hone-rl/hone/train/model"
)

func TestInitModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	var out bytes.Buffer
	args := []string{"init-model", "--family", "qwen2", "--hidden", "32", "--layers", "1", "--heads", "4", "--kv-heads", "2", "--dtype", "bf16", "--seed", "3", "-o", dir}
	if err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), args); err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(dir, ref.New())
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Config; c.Family != "qwen2" || c.Hidden != 32 || c.Layers != 1 || c.KVHeads != 2 || !c.QKVBias {
		t.Errorf("loaded config %+v", c)
	}
	// Running again into the now non-empty folder is refused as bad usage
	// (--help: "DIR must not exist or be empty"; 2 is bad usage).
	if err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), args); cli.ExitCode(err) != cli.ExitUsage {
		t.Errorf("init-model into a model folder: exit %d (%v), want usage", cli.ExitCode(err), err)
	}
}

func TestInitModelUsage(t *testing.T) {
	for _, args := range [][]string{
		{"init-model"},
		{"init-model", "--family", "gpt2", "-o", t.TempDir() + "/x"},
		{"init-model", "--dtype", "F8", "-o", t.TempDir() + "/x"},
		{"init-model", "--no-such-flag"},
	} {
		var out bytes.Buffer
		err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), args)
		if cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%v: exit code %d (%v), want usage", args, cli.ExitCode(err), err)
		}
	}
}

// TestInitModelGemma: init-model writes a tiny gemma3_text folder (layer 0
// slides, layer 1 is full) that loads as Gemma 3 and trains: an SFT step
// and a GRPO step, each saving an adapter.
func TestInitModelGemma(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "model") // where scoredFixture finds it, writing none of its own
	var log bytes.Buffer
	exec := func(args ...string) {
		t.Helper()
		if err := cli.ExecuteCommand(context.Background(), newRootCmd(&log, &log), args); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, log.String())
		}
	}
	exec("init-model", "--family", "gemma3_text", "--hidden", "32", "--layers", "2", "--heads", "4", "--kv-heads", "2",
		"--sliding-window", "3", "--tie-embeddings", "--seed", "3", "--init-std", "0.2", "-o", md)
	m, err := model.Load(md, ref.New())
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Config; c.Family != "gemma3_text" || c.LayerKinds != "SF" || c.SlidingWindow != 3 || !c.SandwichNorms || c.Act != "gelu_tanh" {
		t.Fatalf("loaded config %+v", c)
	}
	if got := scoredFixture(t, dir, filepath.Join(dir, "s"), "a"); got != md {
		t.Fatalf("scored fixture's model %s, want %s", got, md)
	}
	chats := filepath.Join(dir, "chats.jsonl")
	if err := os.WriteFile(chats, []byte(`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"mv1"}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "adapters")
	exec("sft", "--model", md, "--out", out, "--run", "warm", "--rank", "2", "--steps", "2", "--lr", "1e-2", "--threads", "1", chats)
	exec("grpo", "--model", md, "--out", out, "--run", "rl", "--threads", "1", filepath.Join(dir, "s"))
	for _, run := range []string{"warm", "rl"} {
		ck := &checkpoint.Run{Dir: filepath.Join(out, run)}
		if n, ok, err := ck.Latest(); err != nil || !ok || n < 1 {
			t.Fatalf("%s: latest %d %v %v\n%s", run, n, ok, err, log.String())
		}
	}
	metrics, err := os.ReadFile(filepath.Join(out, "warm", runfolder.MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for _, line := range strings.Split(strings.TrimSpace(string(metrics)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if l, ok := r["loss"].(float64); ok {
			losses = append(losses, l)
		}
	}
	if len(losses) != 2 || !(losses[1] < losses[0]) {
		t.Errorf("SFT losses %v: want two, the second lower", losses)
	}

	// The same weights as a multimodal Gemma 3 checkpoint
	// (Gemma3ForConditionalGeneration, the hub's layout) train as their text
	// model, say that the vision tower is left aside, and save an adapter
	// under that model's layer names.
	mm := modelfoldertest.Gemma3Multimodal(t, md, modelfolder.Layouts(&hfconfig.Config{Wrapper: "gemma3"})[0])
	log.Reset()
	exec("sft", "--model", mm, "--out", out, "--run", "mm", "--rank", "2", "--steps", "1", "--lr", "1e-2", "--threads", "1", chats)
	if !strings.Contains(log.String(), "vision tower and projector") {
		t.Errorf("no log line about the vision tower:\n%s", log.String())
	}
	sf, err := safetensors.OpenFile(filepath.Join(out, "mm", runfolder.StepName(1), peft.WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	for _, n := range sf.Names() {
		if !strings.HasPrefix(n, "base_model.model.model.language_model.layers.") {
			t.Errorf("multimodal adapter tensor %q", n)
		}
	}
}

// TestInitModelOverAFile: -o naming an existing file is refused and the
// file is left as it was (it used to be removed and replaced by the model
// folder).
func TestInitModelOverAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	args := []string{"init-model", "--hidden", "32", "--layers", "1", "--heads", "4", "--kv-heads", "2", "-o", path}
	if err := cli.ExecuteCommand(context.Background(), newRootCmd(&out, &out), args); cli.ExitCode(err) != cli.ExitUsage {
		t.Errorf("init-model -o FILE: exit %d (%v), want usage", cli.ExitCode(err), err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "keep me\n" {
		t.Errorf("the file at -o is now %q (%v), want it unchanged", b, err)
	}
}
