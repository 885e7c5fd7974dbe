package model

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// Config holds the architecture numbers the model is built from. Load fills
// it from config.json; tests and tinymodel build it directly.
type Config struct {
	Family       string // "llama", "qwen2" or "qwen3"
	Vocab        int    // V
	Hidden       int    // C
	Intermediate int    // I, SwiGLU width
	Layers       int
	Heads        int // H
	KVHeads      int // KVH, divides H
	HeadDim      int // D; may differ from C/H (Qwen3)
	RMSNormEps   float32

	RoPE kernels.RoPEConfig // Theta, scaling; HeadDim is filled from HeadDim

	TieEmbeddings bool // lm_head shares the embedding table
	QKVBias       bool // q/k/v projections carry a bias (Qwen2, or attention_bias)
	QKNorm        bool // per-head RMSNorm of q and k before RoPE (Qwen3)
	OBias         bool // o_proj carries a bias (Llama attention_bias)
	MLPBias       bool // gate/up/down carry biases (Llama mlp_bias)
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
	case "llama", "qwen2", "qwen3":
	default:
		return fmt.Errorf("model config: family %q not supported (want llama, qwen2 or qwen3)", c.Family)
	}
	return nil
}

// qDim is H·D, the width of the query projection; kvDim is KVH·D.
func (c *Config) qDim() int  { return c.Heads * c.HeadDim }
func (c *Config) kvDim() int { return c.KVHeads * c.HeadDim }
