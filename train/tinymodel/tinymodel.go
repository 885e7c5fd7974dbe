package tinymodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/model"
)

// specials are the special tokens after the 256 byte tokens.
var specials = [...]string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}

// MinVocab is the vocabulary the tokenizer needs: 256 bytes and the specials.
const MinVocab = 256 + len(specials)

// Options size the model. Zero fields take the defaults of Defaults.
type Options struct {
	Family       string // llama, mistral, qwen2, qwen3 or gemma3_text
	Hidden       int
	Layers       int
	Heads        int
	KVHeads      int
	HeadDim      int // 0: Hidden/Heads (Qwen3 writes it explicitly either way)
	Intermediate int // 0: about 8/3·Hidden rounded up to a multiple of 8
	Vocab        int // 0: MinVocab; never less than MinVocab
	Tie          bool
	DType        string // F32 (default), BF16 or F16 on disk
	Seed         uint64
	InitStd      float64 // 0: 0.02 (HF initializer_range)
	// SlidingWindow is the attention window of gemma3_text's sliding
	// layers (0: 32); other families have none.
	SlidingWindow int
	// MaxPositions is config.json's max_position_embeddings and the
	// tokenizer's model_max_length (0: DefaultMaxPositions): a token a
	// byte, a judge's prompt or a long episode needs more than the default.
	MaxPositions int
}

// DefaultMaxPositions is the context of a tiny model unless
// Options.MaxPositions says otherwise.
const DefaultMaxPositions = 4096

// gemmaPattern is the sliding_window_pattern of a tiny gemma3_text: every
// second layer full, so two layers already hold both kinds (Gemma 3's own
// checkpoints use 6).
const gemmaPattern = 2

// Defaults fills unset fields.
func (o Options) Defaults() Options {
	if o.Family == "" {
		o.Family = "qwen3"
	}
	if o.Hidden == 0 {
		o.Hidden = 64
	}
	if o.Layers == 0 {
		o.Layers = 2
	}
	if o.Heads == 0 {
		o.Heads = 4
	}
	if o.KVHeads == 0 {
		o.KVHeads = o.Heads
	}
	if o.HeadDim == 0 && o.Heads > 0 {
		o.HeadDim = o.Hidden / o.Heads
	}
	if o.Intermediate == 0 {
		o.Intermediate = (8*o.Hidden/3 + 7) / 8 * 8
	}
	if o.Vocab == 0 {
		o.Vocab = MinVocab
	}
	if o.DType == "" {
		o.DType = "F32"
	}
	if o.InitStd == 0 {
		o.InitStd = 0.02
	}
	if o.SlidingWindow == 0 && o.Family == "gemma3_text" {
		o.SlidingWindow = 32
	}
	if o.MaxPositions == 0 {
		o.MaxPositions = DefaultMaxPositions
	}
	return o
}

// Config returns the model config Options describe.
func (o Options) Config() (model.Config, error) {
	o = o.Defaults()
	if o.Vocab < MinVocab {
		return model.Config{}, fmt.Errorf("tinymodel: vocab %d is smaller than the %d byte and special tokens", o.Vocab, MinVocab)
	}
	if _, ok := torchDTypes[o.DType]; !ok {
		return model.Config{}, fmt.Errorf("tinymodel: dtype %q not supported (want F32, BF16 or F16)", o.DType)
	}
	if o.MaxPositions < 0 {
		return model.Config{}, fmt.Errorf("tinymodel: max positions %d: want a token count, or 0 for %d", o.MaxPositions, DefaultMaxPositions)
	}
	if o.SlidingWindow != 0 && o.Family != "gemma3_text" {
		return model.Config{}, fmt.Errorf("tinymodel: a sliding window (%d) is for gemma3_text only, not %s", o.SlidingWindow, o.Family)
	}
	c := model.Config{
		Family: o.Family, Vocab: o.Vocab, Hidden: o.Hidden, Intermediate: o.Intermediate, Layers: o.Layers,
		Heads: o.Heads, KVHeads: o.KVHeads, HeadDim: o.HeadDim, RMSNormEps: 1e-6,
		RoPE:          kernels.RoPEConfig{Theta: 1e6},
		TieEmbeddings: o.Tie, QKVBias: o.Family == "qwen2", QKNorm: o.Family == "qwen3",
	}
	switch o.Family {
	case "llama":
		c.RMSNormEps = 1e-5
		c.RoPE = kernels.RoPEConfig{Theta: 500000, Scaling: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 8192}
	case "gemma3_text":
		// What train/model.ConfigFromHF makes of configJSON's Gemma keys
		// (query_pre_attn_scalar is the head dimension, as in Gemma 3 1B).
		c.QKNorm, c.Act, c.NormOffset, c.SandwichNorms = true, "gelu_tanh", true, true
		c.EmbedScale = model.EmbedScale(o.Hidden, safetensors.DType(o.DType))
		c.AttnScale = float32(1 / math.Sqrt(float64(o.HeadDim)))
		c.SlidingWindow, c.LocalRoPE = o.SlidingWindow, kernels.RoPEConfig{Theta: 10000}
		c.LayerKinds = string(gemmaKinds(o.Layers))
	}
	if err := c.Validate(); err != nil {
		return model.Config{}, fmt.Errorf("tinymodel: %w", err)
	}
	return c, nil
}

// gemmaKinds returns the layer kinds of sliding_window_pattern
// gemmaPattern: 'S' (sliding) or 'F' (full) per layer, as Gemma3TextConfig
// derives layer_types.
func gemmaKinds(layers int) []byte {
	k := make([]byte, layers)
	for i := range k {
		k[i] = 'S'
		if (i+1)%gemmaPattern == 0 {
			k[i] = 'F'
		}
	}
	return k
}

// Init fills every weight of m from a source seeded with seed: projections
// and embeddings normal with standard deviation std, norms the identity
// (weights 1, or 0 where the norm multiplies by 1+w, as Gemma's do), biases 0.
func Init(m *model.Model, seed uint64, std float64) {
	rng := rand.New(rand.NewPCG(seed, 0x74696e79))
	one := float32(1)
	if m.Config.NormOffset {
		one = 0
	}
	for _, t := range m.Tensors() {
		switch {
		case strings.HasSuffix(t.Name, "norm.weight"):
			for i := range t.Values {
				t.Values[i] = one
			}
		case strings.HasSuffix(t.Name, ".bias"):
			clear(t.Values)
		default:
			for i := range t.Values {
				t.Values[i] = float32(std * rng.NormFloat64())
			}
		}
	}
}

// New builds the randomly initialised model of o in memory.
func New(o Options, be kernels.Backend) (*model.Model, error) {
	o = o.Defaults()
	c, err := o.Config()
	if err != nil {
		return nil, err
	}
	m, err := model.New(c, be)
	if err != nil {
		return nil, fmt.Errorf("tinymodel: %w", err)
	}
	Init(m, o.Seed, o.InitStd)
	return m, nil
}

// ErrExists is matched (errors.Is) by Write's error when dir is a file, or
// a folder that is not empty: the caller named a place Write does not take.
var ErrExists = errors.New("tinymodel: the output exists")

type existsError string

func (e existsError) Error() string        { return string(e) }
func (e existsError) Is(target error) bool { return target == ErrExists }

// Write creates the model folder dir (which must not exist, or be empty). The
// files are written into a temporary sibling folder that is renamed to dir at
// the end, so dir never holds half a model.
func Write(ctx context.Context, dir string, o Options, be kernels.Backend) error {
	o = o.Defaults()
	m, err := New(o, be)
	if err != nil {
		return err
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return existsError(fmt.Sprintf("tinymodel: %s exists and is not a folder", dir))
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return existsError(fmt.Sprintf("tinymodel: %s exists and is not empty", dir))
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("tinymodel: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("tinymodel: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op after the rename
	if err := writeFiles(ctx, tmp, o, m); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("tinymodel: %w", err)
	}
	_ = os.Remove(dir) // an empty folder may be replaced
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("tinymodel: %w", err)
	}
	return nil
}

func writeFiles(ctx context.Context, dir string, o Options, m *model.Model) error {
	var ts []safetensors.Tensor
	for _, t := range m.Tensors() {
		if err := ctx.Err(); err != nil {
			return err
		}
		st, err := safetensors.FromFloat32Tensor(t.Name, safetensors.DType(o.DType), t.Shape, t.Values)
		if err != nil {
			return fmt.Errorf("tinymodel: %w", err)
		}
		ts = append(ts, st)
	}
	if err := safetensors.Write(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("tinymodel: %w", err)
	}
	files := []struct {
		name string
		v    any
	}{
		{modelfolder.ConfigFile, configJSON(o, &m.Config)},
		{modelfolder.GenerationConfigFile, map[string]any{"bos_token_id": 256, "eos_token_id": []int{258, 256}, "pad_token_id": 256}},
		{modelfolder.TokenizerFile, tokenizerJSON()},
		{modelfolder.TokenizerConfigFile, tokenizerConfigJSON(o.MaxPositions)},
	}
	for _, f := range files {
		if err := writeJSON(filepath.Join(dir, f.name), f.v); err != nil {
			return fmt.Errorf("tinymodel: %s: %w", f.name, err)
		}
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return safetensors.WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

var archNames = map[string]string{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
	"qwen3": "Qwen3ForCausalLM", "gemma3_text": "Gemma3ForCausalLM"}

var torchDTypes = map[string]string{"F32": "float32", "BF16": "bfloat16", "F16": "float16"}

// configJSON is config.json as transformers writes it for the family (keys
// that matter to loaders; HF ignores unknown ones and defaults missing ones).
func configJSON(o Options, c *model.Config) map[string]any {
	j := map[string]any{
		"architectures":           []string{archNames[c.Family]},
		"model_type":              c.Family,
		"vocab_size":              c.Vocab,
		"hidden_size":             c.Hidden,
		"intermediate_size":       c.Intermediate,
		"num_hidden_layers":       c.Layers,
		"num_attention_heads":     c.Heads,
		"num_key_value_heads":     c.KVHeads,
		"max_position_embeddings": o.MaxPositions,
		"rms_norm_eps":            float64(c.RMSNormEps),
		"rope_theta":              c.RoPE.Theta,
		"rope_scaling":            nil,
		"tie_word_embeddings":     c.TieEmbeddings,
		"hidden_act":              "silu",
		"initializer_range":       o.InitStd,
		"torch_dtype":             torchDTypes[o.DType],
		"bos_token_id":            256,
		"eos_token_id":            258,
		"use_cache":               true,
	}
	if c.Family != "qwen2" {
		j["attention_bias"] = false
	}
	if c.Family == "qwen3" || c.HeadDim*c.Heads != c.Hidden {
		j["head_dim"] = c.HeadDim
	}
	if c.Family == "mistral" {
		// Full attention, as Mistral 7B v0.2 writes it: an absent key is
		// MistralConfig's window of 4096, which the model written here has not.
		j["sliding_window"] = nil
	}
	if c.Family == "gemma3_text" {
		// Gemma3TextConfig's keys (configuration_gemma3.py): it reads
		// hidden_activation, not hidden_act, and defaults head_dim to 256.
		delete(j, "hidden_act")
		layerTypes := make([]string, c.Layers)
		for i, k := range gemmaKinds(c.Layers) {
			layerTypes[i] = map[byte]string{'S': "sliding_attention", 'F': "full_attention"}[k]
		}
		maps.Copy(j, map[string]any{
			"hidden_activation": "gelu_pytorch_tanh", "head_dim": c.HeadDim, "query_pre_attn_scalar": c.HeadDim,
			"sliding_window": c.SlidingWindow, "sliding_window_pattern": gemmaPattern, "layer_types": layerTypes,
			"rope_local_base_freq": c.LocalRoPE.Theta, "final_logit_softcapping": nil, "attn_logit_softcapping": nil,
			"attention_dropout": 0.0, "attention_bias": false,
		})
	}
	if c.RoPE.Scaling == "llama3" {
		j["rope_scaling"] = map[string]any{
			"rope_type": "llama3", "factor": c.RoPE.Factor, "low_freq_factor": c.RoPE.LowFreqFactor,
			"high_freq_factor": c.RoPE.HighFreqFactor, "original_max_position_embeddings": c.RoPE.OriginalMaxPos,
		}
	}
	return j
}

func tokenizerJSON() map[string]any {
	vocab := map[string]int{}
	for b, r := range tokenizer.ByteLevelAlphabet() {
		vocab[string(r)] = b
	}
	var added []map[string]any
	for i, s := range specials {
		added = append(added, map[string]any{
			"id": 256 + i, "content": s, "single_word": false, "lstrip": false, "rstrip": false,
			"normalized": false, "special": true,
		})
	}
	return map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": added,
		"normalizer":   nil,
		"pre_tokenizer": map[string]any{
			"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true,
		},
		"post_processor": map[string]any{
			"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false,
		},
		"decoder": map[string]any{
			"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true,
		},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": []string{},
		},
	}
}

// ChatTemplate is a plain ChatML template (system/user/assistant turns, no tools).
const ChatTemplate = "{%- for message in messages %}" +
	"{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
	"{%- endfor %}" +
	"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"

func tokenizerConfigJSON(maxPositions int) map[string]any {
	dec := map[string]any{}
	for i, s := range specials {
		dec[fmt.Sprint(256+i)] = map[string]any{
			"content": s, "lstrip": false, "normalized": false, "rstrip": false, "single_word": false, "special": true,
		}
	}
	return map[string]any{
		"added_tokens_decoder":         dec,
		"additional_special_tokens":    []string{"<|im_start|>", "<|im_end|>"},
		"bos_token":                    nil,
		"eos_token":                    "<|im_end|>",
		"pad_token":                    "<|endoftext|>",
		"unk_token":                    nil,
		"chat_template":                ChatTemplate,
		"model_max_length":             maxPositions,
		"clean_up_tokenization_spaces": false,
		"tokenizer_class":              "Qwen2Tokenizer",
	}
}
