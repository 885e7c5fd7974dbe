package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
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
