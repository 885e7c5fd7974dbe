package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// TestGemma3SlidingWindowDecode: a Gemma 3 model whose first layer slides
// with a window of 4 decodes through the engine's paged KV cache — prompt
// prefilled in chunks of 3, then 10 tokens, far past the window — to the
// same greedy tokens and logprobs as the full forward over the whole
// sequence each step.
func TestGemma3SlidingWindowDecode(t *testing.T) {
	tm, tok := tiny(t)
	c := model.Config{Family: "gemma3_text", Vocab: tm.Config.Vocab, Hidden: 32, Intermediate: 48, Layers: 2,
		Heads: 4, KVHeads: 2, HeadDim: 8, RMSNormEps: 1e-6, RoPE: kernels.RoPEConfig{Theta: 1e6},
		TieEmbeddings: true, QKNorm: true, Act: "gelu_tanh", NormOffset: true, SandwichNorms: true,
		EmbedScale: float32(math.Sqrt(32)), AttnScale: float32(1 / math.Sqrt(8)),
		LayerKinds: "SF", SlidingWindow: 4, LocalRoPE: kernels.RoPEConfig{Theta: 10000}}
	m, err := model.New(c, ref.New())
	if err != nil {
		t.Fatal(err)
	}
	initRandom(m, 5, 0.3)
	e := New(m, Config{Tokenizer: tok, PrefillTokens: 3})
	defer e.Shutdown(context.Background())
	prompt := []int32{104, 101, 108, 108, 111, 33, 10}
	const n = 10
	got := run(t, e, &Request{Prompt: prompt, N: 1, Params: Params{MaxTokens: n, Logprobs: true, IgnoreEOS: true}})[0]
	if len(got.ids) != n {
		t.Fatalf("engine gave %d tokens, want %d", len(got.ids), n)
	}

	seq := slices.Clone(prompt)
	V := m.Config.Vocab
	for i := range n {
		b, err := model.Pack([][]int32{seq}, nil)
		if err != nil {
			t.Fatal(err)
		}
		logits, err := m.Logits(context.Background(), b, nil)
		if err != nil {
			t.Fatal(err)
		}
		row := logits[(len(seq)-1)*V:]
		best := 0
		for k, v := range row {
			if v > row[best] {
				best = k
			}
		}
		if got.ids[i] != int32(best) {
			t.Fatalf("token %d: engine %d, full forward %d", i, got.ids[i], best)
		}
		want := LogSoftmax(m.Backend(), row)[best]
		if d := math.Abs(float64(got.lps[i] - want)); d > 1e-4*max(1, math.Abs(float64(want))) {
			t.Fatalf("token %d: logprob %v, full forward %v", i, got.lps[i], want)
		}
		seq = append(seq, int32(best))
	}
}

// initRandom gives m's weights random values of deviation std (norm weights
// 1), as train/tinymodel does; serve may not import train/tinymodel.
func initRandom(m *model.Model, seed uint64, std float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, t := range m.Tensors() {
		if strings.HasSuffix(t.Name, "norm.weight") {
			for i := range t.Values {
				t.Values[i] = 1
			}
			continue
		}
		for i := range t.Values {
			t.Values[i] = float32(std * rng.NormFloat64())
		}
	}
}
