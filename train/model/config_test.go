package model

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/kernels"
)

// Real config.json files (kept by format/hfconfig) map onto the model's
// Config with the family specifics: Qwen2 biases, Qwen3 q/k norms and
// explicit head_dim, Llama 3.2 rope scaling, tied embeddings.
func TestConfigFromRealFiles(t *testing.T) {
	dir := "../../format/hfconfig/testdata"
	cases := map[string]Config{
		"qwen2.5-0.5b-instruct": {Family: "qwen2", Vocab: 151936, Hidden: 896, Intermediate: 4864, Layers: 24, Heads: 14, KVHeads: 2,
			HeadDim: 64, RMSNormEps: 1e-6, RoPE: kernels.RoPEConfig{Theta: 1e6, HeadDim: 64}, TieEmbeddings: true, QKVBias: true},
		"qwen3-1.7b": {Family: "qwen3", Vocab: 151936, Hidden: 2048, Intermediate: 6144, Layers: 28, Heads: 16, KVHeads: 8,
			HeadDim: 128, RMSNormEps: 1e-6, RoPE: kernels.RoPEConfig{Theta: 1e6, HeadDim: 128}, TieEmbeddings: true, QKNorm: true},
		"llama-3.2-1b-instruct": {Family: "llama", Vocab: 128256, Hidden: 2048, Intermediate: 8192, Layers: 16, Heads: 32, KVHeads: 8,
			HeadDim: 64, RMSNormEps: 1e-5, TieEmbeddings: true, RoPE: kernels.RoPEConfig{Theta: 500000, HeadDim: 64,
				Scaling: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 8192}},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			h, err := hfconfig.Load(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ConfigFromHF(h)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("ConfigFromHF =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// The Gemma 3 golden case's config.json maps onto the Gemma specifics:
// GeGLU, (1+w) norms, sandwich norms, √hidden embedding scale,
// query_pre_attn_scalar, the layer pattern, the full layers' linear rope
// scaling and the sliding layers' RoPE.
func TestConfigFromGemma3(t *testing.T) {
	h, err := hfconfig.Load(filepath.Join(goldenDir, "gemma3", "model"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ConfigFromHF(h)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Family: "gemma3_text", Vocab: 331, Hidden: 48, Intermediate: 80, Layers: 3, Heads: 4, KVHeads: 2,
		HeadDim: 16, RMSNormEps: 1e-6, RoPE: kernels.RoPEConfig{Theta: 1e6, HeadDim: 16}, RoPELinear: 2, TieEmbeddings: true, QKNorm: true,
		Act: "gelu_tanh", NormOffset: true, SandwichNorms: true, EmbedScale: float32(math.Sqrt(48)),
		AttnScale: float32(1 / math.Sqrt(24)), LayerKinds: "SFS", SlidingWindow: 4,
		LocalRoPE: kernels.RoPEConfig{Theta: 10000, HeadDim: 16}}
	if got != want {
		t.Errorf("ConfigFromHF =\n%+v\nwant\n%+v", got, want)
	}

	// A gemma3_text Config without Gemma's pieces (as a builder that knows
	// only the other families would make) is refused, not run as Llama.
	bare := want
	bare.SandwichNorms = false
	if err := bare.Validate(); err == nil || !strings.Contains(err.Error(), "gemma3_text needs") {
		t.Errorf("gemma3_text without sandwich norms: error %v", err)
	}

	// Dynamic rope scaling is parsed by hfconfig but not implemented by the
	// model: refused by name.
	h.RoPE = hfconfig.RoPE{Type: "dynamic", Theta: 1e6, Factor: 8}
	if _, err := ConfigFromHF(h); err == nil || !strings.Contains(err.Error(), `config.json rope_scaling type "dynamic" not supported`) {
		t.Errorf("dynamic rope scaling: error %v", err)
	}
}

// Gemma's √hidden is rounded to the dtype the checkpoint stores its
// embedding in, as transformers' Gemma3TextScaledWordEmbedding
// (embed_scale.to(weight.dtype)) and its comment "sqrt(3072)=55.4256 to
// become 55.5" say; a float32 checkpoint keeps float32's √hidden.
func TestEmbedScaleInStoredDType(t *testing.T) {
	for _, c := range []struct {
		hidden int
		dt     safetensors.DType
		want   float32
	}{
		{3072, safetensors.BF16, 55.5},
		{1152, safetensors.BF16, 34},
		{48, safetensors.BF16, 6.9375},
		{48, safetensors.F16, 6.9296875},
		{48, safetensors.F32, float32(math.Sqrt(48))},
	} {
		if got := EmbedScale(c.hidden, c.dt); got != c.want {
			t.Errorf("EmbedScale(%d, %s) = %v, want %v", c.hidden, c.dt, got, c.want)
		}
	}
}
