package model

import (
	"fmt"
	"math"
	"strings"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/kernels"
)

// ConfigFromHF maps a parsed config.json onto the model's Config, refusing
// what the model does not implement.
func ConfigFromHF(h *hfconfig.Config) (Config, error) {
	gemma := h.ModelType == "gemma3_text"
	switch {
	case gemma && h.HiddenAct != "gelu_pytorch_tanh":
		return Config{}, fmt.Errorf("model: hidden_activation %q not supported (want gelu_pytorch_tanh)", h.HiddenAct)
	case !gemma && h.HiddenAct != "" && h.HiddenAct != "silu":
		return Config{}, fmt.Errorf("model: hidden_act %q not supported (want silu)", h.HiddenAct)
	}
	c := Config{
		Family: h.ModelType, Vocab: h.VocabSize, Hidden: h.HiddenSize, Intermediate: h.IntermediateSize,
		Layers: h.NumHiddenLayers, Heads: h.NumAttentionHeads, KVHeads: h.NumKeyValueHeads, HeadDim: h.HeadDim,
		RMSNormEps: float32(h.RMSNormEps), TieEmbeddings: h.TieWordEmbeddings,
		QKVBias: h.QKVBias, QKNorm: h.QKNorm, OBias: h.OBias, MLPBias: h.MLPBias,
		RoPE: kernels.RoPEConfig{Theta: h.RoPE.Theta, HeadDim: h.HeadDim},
	}
	switch h.RoPE.Type {
	case "", "default":
	case "linear":
		c.RoPELinear = h.RoPE.Factor
	case "llama3":
		c.RoPE.Scaling = "llama3"
		c.RoPE.Factor = h.RoPE.Factor
		c.RoPE.LowFreqFactor = h.RoPE.LowFreqFactor
		c.RoPE.HighFreqFactor = h.RoPE.HighFreqFactor
		c.RoPE.OriginalMaxPos = float64(h.RoPE.OriginalMaxPositionEmbeddings)
	default:
		return Config{}, fmt.Errorf("model: config.json rope_scaling type %q not supported (want default, linear or llama3)", h.RoPE.Type)
	}
	if gemma {
		// Gemma 3: transformers' modeling_gemma3 (Gemma3TextScaledWordEmbedding,
		// Gemma3RMSNorm, Gemma3Attention.scaling, Gemma3DecoderLayer).
		c.Act, c.NormOffset, c.SandwichNorms = "gelu_tanh", true, true
		// float32's √hidden; fromFolder rounds it to the stored dtype
		// (EmbedScale), which config.json does not decide.
		c.EmbedScale = float32(math.Sqrt(float64(h.HiddenSize)))
		c.AttnScale = float32(1 / math.Sqrt(h.QueryPreAttnScalar))
		c.SlidingWindow = h.SlidingWindow
		c.LocalRoPE = kernels.RoPEConfig{Theta: h.LocalRoPETheta, HeadDim: h.HeadDim}
		kinds := make([]byte, len(h.LayerTypes))
		for i, t := range h.LayerTypes {
			switch t {
			case "sliding_attention":
				kinds[i] = 'S'
			case "full_attention":
				kinds[i] = 'F'
			default:
				return Config{}, fmt.Errorf("model: layer_types[%d] %q not supported", i, t)
			}
		}
		c.LayerKinds = string(kinds)
	}
	if h.ModelType == "mistral" && h.SlidingWindow > 0 {
		// MistralAttention: every layer attends through the window, with
		// the model's one RoPE.
		if c.RoPELinear > 1 {
			return Config{}, fmt.Errorf("model: linear rope scaling with a sliding window is not supported for mistral")
		}
		c.SlidingWindow, c.LocalRoPE = h.SlidingWindow, c.RoPE
		c.LayerKinds = strings.Repeat("S", c.Layers)
	}
	switch h.Wrapper {
	case "":
	case "gemma3":
		// Gemma3ForConditionalGeneration: its text model's layers, which
		// the folder's weights are read from (modelfolder.TextWeights).
		c.LayersPath = peft.Gemma3LayersPath
	default:
		return Config{}, fmt.Errorf("model: the text model of a %s checkpoint is not supported", h.Wrapper)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// EmbedScale is Gemma 3's embedding scale √hidden as the checkpoint holds
// it: rounded to stored, the dtype of its embed_tokens tensor, as
// transformers' Gemma3TextScaledWordEmbedding multiplies by
// embed_scale.to(self.weight.dtype) and vLLM by a normalizer made in the
// model's dtype (the original JAX Gemma's sqrt(embed_dim).astype(x.dtype)):
// in a bf16 checkpoint of hidden 1152 (Gemma 3 1B), √1152 = 33.94 is 34.
// The model computes in float32 whatever the stored dtype, but the scale is
// part of the model the checkpoint was trained as; float32's √hidden would
// shift every residual stream by 0.1–0.2% from what HF and vLLM compute.
func EmbedScale(hidden int, stored safetensors.DType) float32 {
	s := float32(math.Sqrt(float64(hidden)))
	switch stored {
	case safetensors.BF16:
		return safetensors.BF16ToF32(safetensors.F32ToBF16(s))
	case safetensors.F16:
		return safetensors.F16ToF32(safetensors.F32ToF16(s))
	}
	return s
}

// Load reads the model folder dir (config.json and model.safetensors, or a
// sharded model.safetensors.index.json, opened and checked by
// modelfolder.Open) into a model computing with be.
// Weights stored as f16 or bf16 are converted to float32.
func Load(dir string, be kernels.Backend) (*Model, error) { return load(dir, be, false) }

// LoadBF16 is Load keeping the projection, embedding and lm_head matrices as
// bfloat16 (converted tensor by tensor, so float32 copies of the whole model
// never exist): half the memory, and decoding reads half the bytes.
func LoadBF16(dir string, be kernels.Backend) (*Model, error) { return load(dir, be, true) }

// WeightDType says how a model's matrices are held in memory: DTypeFloat32
// or DTypeBFloat16. Either way the model computes in float32.
type WeightDType string

// The weight dtypes, named as vLLM's --dtype names them.
const (
	DTypeFloat32  WeightDType = "float32"
	DTypeBFloat16 WeightDType = "bfloat16"
)

// ParseWeightDType reads a --dtype value: vLLM's names (float32, float,
// bfloat16) or the short ones (f32, fp32, bf16), in any case.
func ParseWeightDType(s string) (WeightDType, error) {
	switch strings.ToLower(s) {
	case "float32", "float", "f32", "fp32":
		return DTypeFloat32, nil
	case "bfloat16", "bf16":
		return DTypeBFloat16, nil
	}
	return "", fmt.Errorf("dtype %q: want float32 or bfloat16", s)
}

// isBF16 reports whether dt holds matrices as bfloat16, refusing a value
// that is neither constant (ParseWeightDType gives only those).
func (dt WeightDType) isBF16() (bool, error) {
	switch dt {
	case DTypeFloat32:
		return false, nil
	case DTypeBFloat16:
		return true, nil
	}
	return false, fmt.Errorf("model: weight dtype %q: want float32 or bfloat16", dt)
}

// LoadAs is Load (float32) or LoadBF16 (bfloat16), as dt says.
func LoadAs(dir string, be kernels.Backend, dt WeightDType) (*Model, error) {
	bf16, err := dt.isBF16()
	if err != nil {
		return nil, err
	}
	return load(dir, be, bf16)
}

func load(dir string, be kernels.Backend, bf16 bool) (*Model, error) {
	f, err := modelfolder.Open(dir, modelfolder.Weights)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	return fromFolder(f, be, bf16)
}

// FromFolder builds the model of an opened model folder (its Config and
// Weights parts) computing with be, holding its matrices as dt. The weights
// are copied out of the folder's mappings, so the folder may be closed
// once FromFolder returns.
func FromFolder(f *modelfolder.Folder, be kernels.Backend, dt WeightDType) (*Model, error) {
	bf16, err := dt.isBF16()
	if err != nil {
		return nil, err
	}
	if f.Config == nil || f.Weights == nil {
		return nil, fmt.Errorf("model: %s was opened without its weights (want modelfolder.Weights)", f.Dir)
	}
	return fromFolder(f, be, bf16)
}

func fromFolder(f *modelfolder.Folder, be kernels.Backend, bf16 bool) (*Model, error) {
	c, err := ConfigFromHF(f.Config)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", f.Dir, err)
	}
	if c.EmbedScale != 0 {
		if info, ok := f.TextWeights().Info("model.embed_tokens.weight"); ok {
			c.EmbedScale = EmbedScale(c.Hidden, info.DType)
		}
	}
	m, err := newModel(c, be, bf16)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", f.Dir, err)
	}
	if err := m.LoadWeights(f.TextWeights()); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, f.Dir)
	}
	return m, nil
}

// SaveWeights writes every weight under its checkpoint name to a safetensors
// file at path (atomically), stored as dtype (F32, F16 or BF16). With Merge
// first, this exports a merged checkpoint; config.json and the tokenizer
// files are copied from the base folder by the caller.
func (m *Model) SaveWeights(path string, dtype safetensors.DType) error {
	var ts []safetensors.Tensor
	for _, t := range m.Tensors() {
		vals := t.Values
		if t.Bits != nil {
			vals = make([]float32, len(t.Bits))
			kernels.FromBF16(vals, t.Bits)
		}
		st, err := safetensors.FromFloat32Tensor(t.Name, dtype, t.Shape, vals)
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		ts = append(ts, st)
	}
	if err := safetensors.Write(path, ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}
