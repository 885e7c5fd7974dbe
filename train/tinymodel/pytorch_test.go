package tinymodel

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

const referenceScript = "../../testdata/golden/model/reference.py"

// needTorch skips (or, under CI, fails) when /usr/bin/python3 has no torch.
func needTorch(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: /usr/bin/python3 with torch (Debian python3-torch) is required: %v", err)
		}
		t.Skipf("no torch for /usr/bin/python3 (%v)", err)
	}
}

// A folder written by Write and an adapter written through format/peft are
// read by the independent PyTorch reference, which agrees with our model on
// logits, logprobs and LoRA gradients.
// The gemma3_text folder's first layer slides with a window of 4, shorter
// than the first sequence.
func TestFolderAgainstPyTorch(t *testing.T) {
	needTorch(t)
	for _, o := range []Options{
		{Family: "qwen3", Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 12, Vocab: 263, DType: "BF16", Seed: 5, InitStd: 0.2},
		{Family: "gemma3_text", Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 12, Vocab: 263, Tie: true, SlidingWindow: 4, DType: "BF16", Seed: 5, InitStd: 0.2},
	} {
		t.Run(o.Family, func(t *testing.T) { folderAgainstPyTorch(t, o) })
	}
}

func folderAgainstPyTorch(t *testing.T, o Options) {
	ctx := context.Background()
	be := ref.New()
	dir := t.TempDir()
	if err := Write(ctx, filepath.Join(dir, "model"), o, be); err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(filepath.Join(dir, "model"), be)
	if err != nil {
		t.Fatal(err)
	}
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: []model.Module{model.ModK, model.ModO, model.ModDown}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for _, tn := range ad.Tensors() {
		for i := range tn.Values {
			if tn.Values[i] == 0 { // B starts at zero; make it matter
				tn.Values[i] = float32(0.2 * rng.NormFloat64())
			}
		}
	}
	if err := model.WriteAdapter(filepath.Join(dir, "adapter"), ad, "../model"); err != nil {
		t.Fatal(err)
	}
	b := &model.Batch{SeqOff: []int32{0, 6, 11}}
	for i := range 11 {
		b.IDs = append(b.IDs, int32(rng.IntN(m.Config.Vocab)))
		b.Targets = append(b.Targets, int32(rng.IntN(m.Config.Vocab)))
		b.Pos = append(b.Pos, int32(i%6))
	}
	w := make([]float32, len(b.IDs))
	for i := range w {
		w[i] = float32(i%3) - 0.5
	}
	inputs, _ := json.Marshal(map[string]any{"input_ids": b.IDs, "position_ids": b.Pos, "seq_starts": b.SeqOff[:2], "targets": b.Targets, "weights": w})
	if err := os.WriteFile(filepath.Join(dir, "inputs.json"), inputs, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("/usr/bin/python3", referenceScript, "golden", dir).CombinedOutput(); err != nil {
		t.Fatalf("%s golden %s: %v\n%s", referenceScript, dir, err, out)
	}
	var g struct {
		Logits   [][]float64            `json:"logits"`
		Logprobs []float64              `json:"logprobs"`
		Grads    map[string][]float64   `json:"-"`
		Raw      map[string][][]float64 `json:"grads"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	logits, err := m.Logits(ctx, b, ad)
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for _, r := range g.Logits {
		want = append(want, r...)
	}
	check(t, "logits", logits, want, 1e-4)
	p, err := m.Forward(ctx, b, ad, model.TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "logprobs", p.Logprob, g.Logprobs, 1e-4)
	ad.ZeroGrad()
	if err := p.Backward(ctx, w, nil); err != nil {
		t.Fatal(err)
	}
	n := 0
	ad.Params(func(name string, _, grad []float32) {
		rows, ok := g.Raw[name]
		if !ok {
			t.Errorf("reference has no gradient for %s", name)
			return
		}
		var want []float64
		for _, r := range rows {
			want = append(want, r...)
		}
		check(t, "d"+name, grad, want, 1e-3)
		n++
	})
	if n != len(g.Raw) {
		t.Errorf("compared %d gradients, reference wrote %d", n, len(g.Raw))
	}
}

// check compares with |got−want| ≤ tol·(|want| + rms(want)).
func check(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, reference %d", what, len(got), len(want))
	}
	var ss float64
	for _, v := range want {
		ss += v * v
	}
	floor := math.Sqrt(ss / float64(len(want)))
	for i := range got {
		if e := math.Abs(float64(got[i])-want[i]) / (math.Abs(want[i]) + floor); !(e <= tol) {
			t.Errorf("%s[%d] = %v, reference %v (relative error %.3g > %.0e)", what, i, got[i], want[i], e, tol)
			return
		}
	}
}
