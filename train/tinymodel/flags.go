package tinymodel

import (
	"strings"

	"github.com/spf13/pflag"
)

// AddFlags registers the sizing flags of Options on fs (used by
// `hone-train init-model`).
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Family, "family", "qwen3", "model family: llama, mistral, qwen2, qwen3 or gemma3_text")
	fs.IntVar(&o.Hidden, "hidden", 64, "hidden size")
	fs.IntVar(&o.Layers, "layers", 2, "number of decoder layers")
	fs.IntVar(&o.Heads, "heads", 4, "attention heads")
	fs.IntVar(&o.KVHeads, "kv-heads", 0, "key/value heads (0: same as --heads)")
	fs.IntVar(&o.HeadDim, "head-dim", 0, "head dimension (0: hidden/heads)")
	fs.IntVar(&o.Intermediate, "intermediate", 0, "MLP width (0: about 8/3 of hidden)")
	fs.IntVar(&o.Vocab, "vocab", 0, "vocabulary size, at least 259 (0: 259 = 256 bytes + 3 specials)")
	fs.BoolVar(&o.Tie, "tie-embeddings", false, "share the embedding table with the output layer")
	fs.StringVar(&o.DType, "dtype", "F32", "dtype on disk: F32, BF16 or F16")
	fs.Uint64Var(&o.Seed, "seed", 0, "random seed (same seed, same weights)")
	fs.IntVar(&o.SlidingWindow, "sliding-window", 0, "attention window of gemma3_text's sliding layers, every other layer (0: 32)")
	fs.Float64Var(&o.InitStd, "init-std", 0.02, "standard deviation of the random weights")
	fs.IntVar(&o.MaxPositions, "max-positions", DefaultMaxPositions, "context length: config.json's max_position_embeddings (a token is a byte: a RULER judge's prompt over tool-using episodes needs about 16384)")
}

// Normalize upper-cases the dtype so "bf16" and "BF16" both work.
func (o *Options) Normalize() { o.DType = strings.ToUpper(o.DType) }
