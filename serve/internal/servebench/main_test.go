package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/train/model"
)

// TestRunHoneOnly: a short run on the committed tiny model prints a table
// row per stream count with the batch it formed.
func TestRunHoneOnly(t *testing.T) {
	var out strings.Builder
	o := options{model: filepath.Join("..", "..", "testdata", "tiny"), streams: []int{1, 4}, tokens: 4, prompt: 8, batch: 8}
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, l := range strings.Split(out.String(), "\n") {
		f := strings.Fields(l)
		if len(f) == 8 && f[0] == "hone" {
			rows++
		}
	}
	if rows != 2 || !strings.Contains(out.String(), "hone: aggregate at 4 streams") {
		t.Fatalf("want 2 hone rows and the ratio line:\n%s", out.String())
	}
}

// TestMeasureTurns: the conversation is timed with the prefix cache off
// and on, and with it on every turn after the first reuses the whole of
// the turn before (its prompt and all but the last reply token).
func TestMeasureTurns(t *testing.T) {
	be, err := cpu.New(cpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	var out strings.Builder
	o := options{model: filepath.Join("..", "..", "testdata", "tiny"), tokens: 4, prompt: 8, batch: 8, turns: 3, turnNew: 5}
	if err := measureTurns(context.Background(), o, be, &out); err != nil {
		t.Fatal(err)
	}
	// Prompts of 8, 8+4+5 = 17 and 26 tokens: turns 2 and 3 reuse 8+4−1
	// and 17+4−1 rows.
	want := fmt.Sprintf("prefix cache: %d prompt tokens reused", (8+4-1)+(17+4-1))
	rows := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) == 5 && (f[0] == "1" || f[0] == "2" || f[0] == "3") {
			rows++
		}
	}
	if rows != 3 || !strings.Contains(out.String(), want) {
		t.Fatalf("want 3 turn rows and %q:\n%s", want, out.String())
	}
}

// TestMeasureGroup: with the prefix cache on, the group's requests after
// the first reuse the shared prompt.
func TestMeasureGroup(t *testing.T) {
	be, err := cpu.New(cpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	var out strings.Builder
	o := options{model: filepath.Join("..", "..", "testdata", "tiny"), tokens: 3, prompt: 8, batch: 8, group: 4, groupP: 40}
	if err := measureGroup(context.Background(), o, be, &out); err != nil {
		t.Fatal(err)
	}
	var hits []string
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) == 4 && (f[0] == "off" || f[0] == "on") {
			hits = append(hits, f[3])
		}
	}
	// Off: nothing reused. On: the three others take the first's 40 rows,
	// by waiting for its prefill or copying them once it decodes.
	if len(hits) != 2 || hits[0] != "0" || hits[1] != "120" {
		t.Fatalf("tokens reused off/on %v, want [0 120]:\n%s", hits, out.String())
	}
}

// TestTorchShape: the served model's config maps onto reference.py's bench
// shape of the same numbers, and a different shape is refused.
func TestTorchShape(t *testing.T) {
	c := model.Config{Family: "qwen2", Vocab: 151936, Hidden: 896, Intermediate: 4864, Layers: 24, Heads: 14, KVHeads: 2,
		HeadDim: 64, RMSNormEps: 1e-6, QKVBias: true, TieEmbeddings: true, RoPE: kernels.RoPEConfig{Theta: 1e6}}
	if s, err := torchShape(c); err != nil || s != "05b" {
		t.Fatalf("0.5B shape: %q, %v", s, err)
	}
	c.Layers = 2
	if s, err := torchShape(c); err == nil {
		t.Fatalf("2-layer model mapped to %q", s)
	}
}

// TestTorchDecode runs reference.py bench-decode on its tiny shape and reads
// its figures.
func TestTorchDecode(t *testing.T) {
	o := options{python: "/usr/bin/python3", prompt: 4, tokens: 3, torchThreads: 1}
	if err := exec.Command(o.python, "-c", "import torch").Run(); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s with torch: %v", o.python, err)
		}
		t.Fatalf("%s with torch: %v", o.python, err)
	}
	ref, err := findReference()
	if err != nil {
		t.Fatal(err)
	}
	o.reference = ref
	r, err := torchDecode(context.Background(), o, "tiny", 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Batch != 2 || r.Tokens != 2 || !(r.TokensPerS > 0) || !(r.PrefillS > 0) || r.Threads != 1 {
		t.Fatalf("BENCH figures %+v", r)
	}
}
