package model

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// Config holds the architecture numbers the model is built from. Load fills
// it from config.json; tests and tinymodel build it directly.
type Config struct {
	Family       string // "llama", "mistral", "qwen2", "qwen3" or "gemma3_text"
	Vocab        int    // V
	Hidden       int    // C
	Intermediate int    // I, SwiGLU width
	Layers       int
	Heads        int // H
	KVHeads      int // KVH, divides H
	HeadDim      int // D; may differ from C/H (Qwen3)
	RMSNormEps   float32

	RoPE kernels.RoPEConfig // Theta, scaling; HeadDim is filled from HeadDim
	// RoPELinear > 1 divides RoPE's inverse frequencies by it (transformers'
	// "linear" rope scaling; for Gemma 3 only the full-attention layers');
	// 0 or 1: none.
	RoPELinear float64

	TieEmbeddings bool // lm_head shares the embedding table
	QKVBias       bool // q/k/v projections carry a bias (Qwen2, or attention_bias)
	QKNorm        bool // per-head RMSNorm of q and k before RoPE (Qwen3)
	OBias         bool // o_proj carries a bias (Llama attention_bias)
	MLPBias       bool // gate/up/down carry biases (Llama mlp_bias)

	// Gemma 3 (family gemma3_text); the zero values are the other families'.
	Act           string  // MLP activation: "" or "silu" (SwiGLU); "gelu_tanh": down(gelu_tanh(gate)·up)
	NormOffset    bool    // every RMSNorm multiplies by 1+w instead of w
	SandwichNorms bool    // post-attention, pre- and post-feed-forward norms (see Block)
	EmbedScale    float32 // the embeddings are multiplied by it (√Hidden in the stored dtype, see EmbedScale); 0: not scaled
	AttnScale     float32 // attention score scale (query_pre_attn_scalar^-1/2); 0: 1/√HeadDim
	// LayerKinds is one byte per layer, 'S' for one whose attention sees only
	// the last SlidingWindow keys (the query's own included) and whose RoPE
	// is LocalRoPE, 'F' for full attention ("": all full). A string keeps
	// Config comparable.
	LayerKinds    string
	SlidingWindow int
	LocalRoPE     kernels.RoPEConfig

	// LayersPath is where the decoder layers sit in the Hugging Face model
	// the checkpoint is of, which adapters name their tensors by
	// (peft.LayersPaths): "" for a text model's model.layers;
	// peft.Gemma3LayersPath for Gemma3ForConditionalGeneration's language
	// model. It changes no arithmetic.
	LayersPath string
}

// Validate reports the first inconsistent number.
func (c *Config) Validate() error {
	switch {
	case c.Vocab <= 0 || c.Hidden <= 0 || c.Intermediate <= 0 || c.Layers <= 0:
		return fmt.Errorf("model config: vocab %d, hidden %d, intermediate %d, layers %d must all be positive",
			c.Vocab, c.Hidden, c.Intermediate, c.Layers)
	case c.Heads <= 0 || c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("model config: %d attention heads is not a positive multiple of %d key/value heads", c.Heads, c.KVHeads)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0:
		return fmt.Errorf("model config: head dim %d must be positive and even", c.HeadDim)
	case !(c.RMSNormEps > 0):
		return fmt.Errorf("model config: rms_norm_eps %v must be positive", c.RMSNormEps)
	}
	switch c.Family {
	case "llama", "mistral", "qwen2", "qwen3", "gemma3_text":
	default:
		return fmt.Errorf("model config: family %q not supported (want llama, mistral, qwen2, qwen3 or gemma3_text)", c.Family)
	}
	if c.Family == "gemma3_text" && !(c.Act == "gelu_tanh" && c.NormOffset && c.SandwichNorms && c.QKNorm) {
		return fmt.Errorf("model config: gemma3_text needs the gelu_tanh activation, (1+w) norms, sandwich norms and q/k norms (ConfigFromHF sets them)")
	}
	switch c.Act {
	case "", "silu", "gelu_tanh":
	default:
		return fmt.Errorf("model config: activation %q not supported (want silu or gelu_tanh)", c.Act)
	}
	if c.LayerKinds != "" && len(c.LayerKinds) != c.Layers {
		return fmt.Errorf("model config: layer kinds %q for %d layers", c.LayerKinds, c.Layers)
	}
	for _, k := range c.LayerKinds {
		if k != 'S' && k != 'F' {
			return fmt.Errorf("model config: layer kinds %q: want only S (sliding) and F (full)", c.LayerKinds)
		}
		if k == 'S' && c.SlidingWindow <= 0 {
			return fmt.Errorf("model config: sliding layers need a positive window, got %d", c.SlidingWindow)
		}
	}
	if c.RoPELinear != 0 && !(c.RoPELinear >= 1) {
		return fmt.Errorf("model config: linear rope factor %v must be at least 1", c.RoPELinear)
	}
	if c.EmbedScale < 0 || c.AttnScale < 0 {
		return fmt.Errorf("model config: embedding scale %v and attention scale %v must not be negative", c.EmbedScale, c.AttnScale)
	}
	return nil
}

// qDim is H·D, the width of the query projection; kvDim is KVH·D.
func (c *Config) qDim() int  { return c.Heads * c.HeadDim }
func (c *Config) kvDim() int { return c.KVHeads * c.HeadDim }

// sliding reports whether layer l attends through a sliding window.
func (c *Config) sliding(l int) bool { return c.LayerKinds != "" && c.LayerKinds[l] == 'S' }

// normWeight returns the weight an RMSNorm multiplies by: w itself, or,
// with Gemma's offset, 1+w written into dst (len(w) long) by be.
func normWeight(be kernels.Backend, dst, w []float32, offset bool) []float32 {
	if !offset {
		return w
	}
	dst = dst[:len(w)]
	be.AddScalar(dst, w, 1, len(w))
	return dst
}
