package hfconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hone-rl/hone/format/internal/exactjson"
)

// File names inside a model folder.
const (
	ConfigName           = "config.json"
	GenerationConfigName = "generation_config.json"
)

// SupportedModelTypes returns the config.json model_type values this package accepts.
func SupportedModelTypes() []string {
	return []string{"llama", "mistral", "qwen2", "qwen3", "gemma3_text"}
}

// RoPE holds the rotary-embedding parameters, merged from rope_theta/rope_scaling or
// rope_parameters.
type RoPE struct {
	// Type is "default" (plain RoPE), "linear", "dynamic" or "llama3".
	Type  string
	Theta float64 // base θ of inv_freq_j = θ^(−2j/d)
	// Factor is the scaling factor of linear, dynamic and llama3 (0 for default).
	Factor float64
	// LowFreqFactor, HighFreqFactor and OriginalMaxPositionEmbeddings are llama3's.
	LowFreqFactor                 float64
	HighFreqFactor                float64
	OriginalMaxPositionEmbeddings int
}

// Config is a validated model configuration with transformers' defaults applied.
type Config struct {
	ModelType     string   // "llama", "mistral", "qwen2", "qwen3" or "gemma3_text"
	Architectures []string // e.g. ["Qwen2ForCausalLM"]

	VocabSize         int // V
	HiddenSize        int // C
	IntermediateSize  int // SwiGLU width
	NumHiddenLayers   int
	NumAttentionHeads int // H
	NumKeyValueHeads  int // KVH, divides H (default H)
	HeadDim           int // D (explicit head_dim, else C/H; Qwen3 and Gemma 3 default 128 and 256)
	// HiddenAct is the MLP's activation: hidden_act ("silu") for llama/qwen,
	// hidden_activation ("gelu_pytorch_tanh") for gemma3_text.
	HiddenAct  string
	RMSNormEps float64
	RoPE       RoPE

	MaxPositionEmbeddings int
	TieWordEmbeddings     bool // lm_head reuses embed_tokens; the checkpoint may lack lm_head.weight

	AttentionBias bool // the attention_bias key as written (false when absent)
	QKVBias       bool // q_proj, k_proj, v_proj have .bias tensors
	OBias         bool // o_proj has a .bias tensor
	MLPBias       bool // gate/up/down have .bias tensors (llama mlp_bias)
	QKNorm        bool // per-head q_norm/k_norm before RoPE (qwen3)

	// SlidingWindow is the attention window when use_sliding_window is true (0 when
	// off); MaxWindowLayers is Qwen's max_window_layers. Recorded, not interpreted
	// for qwen2; for gemma3_text SlidingWindow is the window of the layers
	// LayerTypes marks "sliding_attention" (a key at distance ≥ SlidingWindow
	// from the query is masked); for mistral, the window of every layer (0:
	// full attention).
	SlidingWindow   int
	MaxWindowLayers int

	// Gemma 3 (gemma3_text) only; zero for the other families.
	//
	// LayerTypes is "sliding_attention" or "full_attention" per layer: the
	// layer_types list, else derived from sliding_window_pattern (default 6:
	// every 6th layer full) as Gemma3TextConfig derives it.
	LayerTypes []string
	// LocalRoPETheta is rope_local_base_freq (default 10000), the plain-RoPE
	// base of the sliding layers; RoPE (rope_theta and rope_scaling) is the
	// full-attention layers'.
	LocalRoPETheta float64
	// QueryPreAttnScalar s scales the attention scores by s^-1/2 (default 256).
	QueryPreAttnScalar float64
	// SandwichNorms: each block also has pre_feedforward_layernorm and
	// post_feedforward_layernorm, and post_attention_layernorm normalises the
	// attention output before the residual add.
	SandwichNorms bool

	DType string // torch_dtype, or dtype in newer files ("bfloat16", …); "" when absent

	// Wrapper is the model_type of the multimodal config.json whose
	// text_config this Config is ("gemma3": Gemma3ForConditionalGeneration,
	// whose checkpoint names the text model's tensors language_model.model.…
	// or model.language_model.…); "" when config.json is the text model's own.
	Wrapper string

	// UnknownFields are the config.json keys outside the family's table
	// (Fields), sorted: left unread, as transformers leaves a key its
	// configuration class does not know. The model folder's opener logs them.
	UnknownFields []string

	BOSTokenID  *int
	EOSTokenIDs []int
	PadTokenID  *int

	// Generation is generation_config.json when the folder has one.
	Generation *GenerationConfig
}

// QDim is H·D, the output width of q_proj.
func (c *Config) QDim() int { return c.NumAttentionHeads * c.HeadDim }

// KVDim is KVH·D, the output width of k_proj and v_proj.
func (c *Config) KVDim() int { return c.NumKeyValueHeads * c.HeadDim }

// LinearDims returns (in, out) features of a per-layer linear projection named by its
// HF module name (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj). The
// weight tensor is [out, in].
func (c *Config) LinearDims(module string) (in, out int, err error) {
	switch module {
	case "q_proj":
		return c.HiddenSize, c.QDim(), nil
	case "k_proj", "v_proj":
		return c.HiddenSize, c.KVDim(), nil
	case "o_proj":
		return c.QDim(), c.HiddenSize, nil
	case "gate_proj", "up_proj":
		return c.HiddenSize, c.IntermediateSize, nil
	case "down_proj":
		return c.IntermediateSize, c.HiddenSize, nil
	}
	return 0, 0, fmt.Errorf("hfconfig: unknown projection %q (want q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj or down_proj)", module)
}

// StopTokenIDs returns the ids that end generation: generation_config.json's
// eos_token_id when present (what transformers' generate uses), else config.json's.
func (c *Config) StopTokenIDs() []int {
	return eosRule(c.Generation, c.EOSTokenIDs)
}

// eosRule is StopTokenIDs' rule, shared with LoadEOS: transformers builds
// the generation config from config.json only when generation_config.json
// gives no eos_token_id.
func eosRule(g *GenerationConfig, configEOS []int) []int {
	if g != nil && len(g.EOSTokenIDs) > 0 {
		return append([]int(nil), g.EOSTokenIDs...)
	}
	return append([]int(nil), configEOS...)
}

// LoadEOS reads only the end-of-sequence ids of the model folder dir, by
// StopTokenIDs' rule. It checks nothing else in config.json, so it reads
// folders of model families Hone does not run (hone-inspect renders those);
// a folder with neither file gives no ids. Load is the reader of a folder
// whose model is to be built.
func LoadEOS(dir string) ([]int, error) {
	var g *GenerationConfig
	gpath := filepath.Join(dir, GenerationConfigName)
	gdata, err := exactjson.ReadFile(gpath)
	switch {
	case err == nil:
		if g, err = ParseGenerationConfig(gdata); err != nil {
			return nil, fmt.Errorf("%s: %w", gpath, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("hfconfig: %w", err)
	}
	var configEOS []int
	path := filepath.Join(dir, ConfigName)
	data, err := exactjson.ReadFile(path)
	switch {
	case err == nil:
		var r struct {
			EOSTokenID json.RawMessage `json:"eos_token_id"`
		}
		if err := exactjson.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: hfconfig: %w", path, err)
		}
		if configEOS, err = tokenIDs("eos_token_id", r.EOSTokenID, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("hfconfig: %w", err)
	}
	return eosRule(g, configEOS), nil
}

// raw mirrors config.json; pointers tell "absent" from zero.
type raw struct {
	ModelType             *string         `json:"model_type"`
	Architectures         []string        `json:"architectures"`
	VocabSize             *int            `json:"vocab_size"`
	HiddenSize            *int            `json:"hidden_size"`
	IntermediateSize      *int            `json:"intermediate_size"`
	NumHiddenLayers       *int            `json:"num_hidden_layers"`
	NumAttentionHeads     *int            `json:"num_attention_heads"`
	NumKeyValueHeads      *int            `json:"num_key_value_heads"`
	HeadDim               *int            `json:"head_dim"`
	HiddenAct             *string         `json:"hidden_act"`
	RMSNormEps            *float64        `json:"rms_norm_eps"`
	RopeTheta             *float64        `json:"rope_theta"`
	RopeScaling           json.RawMessage `json:"rope_scaling"`
	RopeParameters        json.RawMessage `json:"rope_parameters"`
	MaxPositionEmbeddings *int            `json:"max_position_embeddings"`
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
	AttentionBias         *bool           `json:"attention_bias"`
	MLPBias               *bool           `json:"mlp_bias"`
	UseSlidingWindow      *bool           `json:"use_sliding_window"`
	SlidingWindow         *int            `json:"sliding_window"`
	MaxWindowLayers       *int            `json:"max_window_layers"`
	TorchDType            *string         `json:"torch_dtype"`
	DType                 *string         `json:"dtype"`
	BOSTokenID            json.RawMessage `json:"bos_token_id"`
	EOSTokenID            json.RawMessage `json:"eos_token_id"`
	PadTokenID            json.RawMessage `json:"pad_token_id"`

	// gemma3_text
	HiddenActivation     *string  `json:"hidden_activation"`
	QueryPreAttnScalar   *float64 `json:"query_pre_attn_scalar"`
	SlidingWindowPattern *int     `json:"sliding_window_pattern"`
	LayerTypes           []string `json:"layer_types"`
	RopeLocalBaseFreq    *float64 `json:"rope_local_base_freq"`

	keys map[string]json.RawMessage // every top-level key as written (tells null from absent)
}

// MaxModelLen is the longest sequence the model takes, as vLLM derives its
// max_model_len from the config: max_position_embeddings, times the factor
// of a linear or dynamic rope_scaling (position-interpolated models are
// trained to that many positions); llama3's max_position_embeddings
// already counts its scaling, and so does Gemma 3's (131072 with a linear
// factor of 8 in the 4B to 27B configs: vLLM leaves the factor out for
// every model_type holding "gemma3"). hone-serve refuses requests past it
// and hone-train sequences past it, so both stages hold the model to one
// length.
func (c *Config) MaxModelLen() int {
	n, _ := c.scaledLen()
	return int(n) // Parse refused a length past maxPositions
}

// scaledLen is MaxModelLen in float64, before the conversion to int that
// would overflow on a huge factor, and the factor applied (1 for none).
func (c *Config) scaledLen() (float64, float64) {
	n := float64(c.MaxPositionEmbeddings)
	if c.ModelType == "gemma3_text" {
		return n, 1
	}
	if (c.RoPE.Type == "linear" || c.RoPE.Type == "dynamic") && c.RoPE.Factor > 1 {
		return n * c.RoPE.Factor, c.RoPE.Factor
	}
	return n, 1
}

// Load reads dir/config.json and, when present, dir/generation_config.json. dir may
// also be the path of a config.json file.
func Load(dir string) (*Config, error) {
	path := filepath.Join(dir, ConfigName)
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		path, dir = dir, filepath.Dir(dir)
	}
	data, err := exactjson.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hfconfig: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	gpath := filepath.Join(dir, GenerationConfigName)
	gdata, err := exactjson.ReadFile(gpath)
	switch {
	case err == nil:
		g, err := ParseGenerationConfig(gdata)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gpath, err)
		}
		for _, id := range append(g.EOSTokenIDs, derefAll(g.BOSTokenID, g.PadTokenID)...) {
			if id >= c.VocabSize {
				return nil, fmt.Errorf("%s: token id %d outside the vocabulary [0, %d) of %s", gpath, id, c.VocabSize, path)
			}
		}
		c.Generation = g
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("hfconfig: %w", err)
	}
	return c, nil
}

// Parse decodes and validates the bytes of a config.json.
func Parse(data []byte) (*Config, error) {
	var r raw
	if err := exactjson.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("hfconfig: %w", err)
	}
	if err := json.Unmarshal(data, &r.keys); err != nil {
		return nil, fmt.Errorf("hfconfig: %w", err)
	}
	if r.ModelType == nil {
		return nil, fmt.Errorf("hfconfig: no model_type (supported: %s)", strings.Join(SupportedModelTypes(), ", "))
	}
	c := &Config{ModelType: *r.ModelType, Architectures: r.Architectures}
	switch c.ModelType {
	case "llama", "mistral", "qwen2", "qwen3", "gemma3_text":
	case "gemma3":
		return parseGemma3Wrapper(&r)
	default:
		return nil, fmt.Errorf("hfconfig: model_type %q is not supported (supported: %s)", c.ModelType, strings.Join(SupportedModelTypes(), ", "))
	}
	var err error
	if c.UnknownFields, err = checkFields(c.ModelType, r.keys); err != nil {
		return nil, err
	}
	for _, parse := range []func(*raw, *Config) error{parseShape, parseNumerics, parseLayers, parseGemma3, parseMistral, parseSpecialIDs} {
		if err := parse(&r, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseGemma3Wrapper reads the config.json of Gemma3ForConditionalGeneration
// (model_type gemma3: gemma-3-4b-it and larger) as its language model, the
// gemma3_text config under text_config, which Hone trains and serves alone
// (the vision tower is not loaded). Its own keys are checked against the
// gemma3 table, text_config's against gemma3_text's. The top level's token
// ids and dtype take precedence over text_config's, as transformers'
// GenerationConfig.from_model_config lets the outer config's win.
func parseGemma3Wrapper(r *raw) (*Config, error) {
	unknown, err := checkFields("gemma3", r.keys)
	if err != nil {
		return nil, err
	}
	tc, ok := r.keys["text_config"]
	if !ok || string(tc) == "null" {
		return nil, errors.New("hfconfig: text_config: missing (a gemma3 config holds its language model there)")
	}
	var text map[string]json.RawMessage
	if err := json.Unmarshal(tc, &text); err != nil || text == nil {
		return nil, fmt.Errorf("hfconfig: text_config: want an object, got %.40s", tc)
	}
	if mt, ok := text["model_type"]; ok && string(mt) != `"gemma3_text"` {
		return nil, fmt.Errorf("hfconfig: text_config.model_type %s: want \"gemma3_text\"", mt)
	}
	text["model_type"] = json.RawMessage(`"gemma3_text"`)
	for _, k := range []string{"bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "dtype"} {
		if v, ok := r.keys[k]; ok {
			text[k] = v
		}
	}
	data, err := json.Marshal(text)
	if err != nil {
		return nil, fmt.Errorf("hfconfig: text_config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in text_config)", err)
	}
	c.Wrapper, c.Architectures = "gemma3", r.Architectures
	// transformers ties lm_head by the text config's tie_word_embeddings;
	// a top-level value that says otherwise would be silently overruled.
	if v, ok := r.keys["tie_word_embeddings"]; ok && string(v) != "null" {
		var tie bool
		if err := json.Unmarshal(v, &tie); err != nil || tie != c.TieWordEmbeddings {
			return nil, fmt.Errorf("hfconfig: tie_word_embeddings %s disagrees with text_config's %v, which decides whether lm_head is tied", v, c.TieWordEmbeddings)
		}
	}
	for _, k := range c.UnknownFields {
		unknown = append(unknown, "text_config."+k)
	}
	c.UnknownFields = unknown
	return c, nil
}

// gemma3TextDefaults are Gemma3TextConfig's sizes for the keys a config
// leaves out (the text_config of gemma-3-4b-it gives neither vocab_size nor
// the head counts).
func gemma3TextDefaults() map[string]int {
	return map[string]int{"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
		"num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4}
}

// maxLayers bounds num_hidden_layers (the deepest released checkpoints have
// about 130 layers). Whatever reads a config expands it per layer
// (modelfolder.Expected lists ~10 tensors a layer, Gemma 3's layer pattern
// a string each) before any tensor is compared, so a corrupt count, a few
// digits too many, must be refused here, not left to exhaust the memory.
const maxLayers = 1 << 16

// maxWidth bounds every size a config gives (vocab_size, hidden_size,
// intermediate_size, the head counts, head_dim) and the projection widths
// heads × head_dim; the largest released checkpoints stay under 2^19. A
// corrupt value past it would overflow the products taken of it (2^31
// heads of 2^33 dimensions make a q_proj of 0 rows), and below it any
// product of two sizes fits an int.
const maxWidth = 1 << 24

// maxPositions bounds MaxModelLen, max_position_embeddings scaled by a
// linear or dynamic RoPE factor, so that the product stays an int (a
// factor of 1e300 made it negative); the longest contexts released are
// about 2^24 tokens.
const maxPositions = 1 << 31

// parseShape reads the sizes: vocabulary, hidden and MLP widths, layers,
// query and key/value heads, and the head dimension.
func parseShape(r *raw, c *Config) error {
	var defaults map[string]int
	if c.ModelType == "gemma3_text" {
		defaults = gemma3TextDefaults()
	}
	need := func(field string, p *int) (int, error) {
		if d, ok := defaults[field]; ok && p == nil {
			return d, nil
		}
		if p == nil {
			return 0, fmt.Errorf("hfconfig: %s: missing", field)
		}
		if *p <= 0 {
			return 0, fmt.Errorf("hfconfig: %s: %d must be positive", field, *p)
		}
		if *p > maxWidth && field != "num_hidden_layers" {
			return 0, fmt.Errorf("hfconfig: %s %d is more than %d (a corrupt value?)", field, *p, maxWidth)
		}
		return *p, nil
	}
	for _, f := range []struct {
		name string
		p    *int
		dst  *int
	}{
		{"vocab_size", r.VocabSize, &c.VocabSize},
		{"hidden_size", r.HiddenSize, &c.HiddenSize},
		{"intermediate_size", r.IntermediateSize, &c.IntermediateSize},
		{"num_hidden_layers", r.NumHiddenLayers, &c.NumHiddenLayers},
		{"num_attention_heads", r.NumAttentionHeads, &c.NumAttentionHeads},
	} {
		var err error
		if *f.dst, err = need(f.name, f.p); err != nil {
			return err
		}
	}
	if c.NumHiddenLayers > maxLayers {
		return fmt.Errorf("hfconfig: num_hidden_layers %d is more than %d", c.NumHiddenLayers, maxLayers)
	}
	c.NumKeyValueHeads = c.NumAttentionHeads
	if d, ok := defaults["num_key_value_heads"]; ok {
		c.NumKeyValueHeads = d
	}
	if r.NumKeyValueHeads != nil {
		c.NumKeyValueHeads = *r.NumKeyValueHeads
	}
	if c.NumKeyValueHeads <= 0 || c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return fmt.Errorf("hfconfig: num_key_value_heads %d must be positive and divide num_attention_heads %d", c.NumKeyValueHeads, c.NumAttentionHeads)
	}
	switch {
	case r.HeadDim != nil:
		c.HeadDim = *r.HeadDim
	case c.ModelType == "qwen3":
		c.HeadDim = 128 // Qwen3Config's default; its head_dim is not hidden/heads
	case c.ModelType == "gemma3_text":
		c.HeadDim = 256 // Gemma3TextConfig's default
	default:
		if c.HiddenSize%c.NumAttentionHeads != 0 {
			return fmt.Errorf("hfconfig: no head_dim and hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
		}
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 {
		return fmt.Errorf("hfconfig: head_dim %d must be positive and even (RoPE rotates pairs)", c.HeadDim)
	}
	// Checked by division, so that QDim is only taken once it fits; KVDim
	// is at most QDim, since num_key_value_heads divides the heads.
	if c.HeadDim > maxWidth/c.NumAttentionHeads {
		return fmt.Errorf("hfconfig: num_attention_heads %d × head_dim %d is more than %d (a corrupt value?)", c.NumAttentionHeads, c.HeadDim, maxWidth)
	}
	return nil
}

// parseNumerics reads the activation, the norm's epsilon, RoPE and the
// longest position.
func parseNumerics(r *raw, c *Config) error {
	if c.ModelType == "gemma3_text" {
		// Gemma3TextConfig reads hidden_activation (hidden_act is not its field).
		c.HiddenAct = "gelu_pytorch_tanh"
		if r.HiddenActivation != nil {
			c.HiddenAct = *r.HiddenActivation
		}
		if c.HiddenAct != "gelu_pytorch_tanh" {
			return fmt.Errorf("hfconfig: hidden_activation %q is not supported for gemma3_text (only gelu_pytorch_tanh)", c.HiddenAct)
		}
	} else {
		c.HiddenAct = "silu"
		if r.HiddenAct != nil {
			c.HiddenAct = *r.HiddenAct
		}
		if c.HiddenAct != "silu" {
			return fmt.Errorf("hfconfig: hidden_act %q is not supported (only silu, as in every llama/qwen2/qwen3 checkpoint)", c.HiddenAct)
		}
	}
	c.RMSNormEps = 1e-6
	if r.RMSNormEps != nil {
		c.RMSNormEps = *r.RMSNormEps
	}
	if !(c.RMSNormEps > 0) || math.IsInf(c.RMSNormEps, 0) {
		return fmt.Errorf("hfconfig: rms_norm_eps %v must be positive", c.RMSNormEps)
	}
	var err error
	defTheta := 10000.0 // the class default of llama, qwen2 and qwen3
	if c.ModelType == "gemma3_text" {
		defTheta = 1e6 // Gemma3TextConfig's rope_theta
	}
	if c.RoPE, err = parseRoPE(*r, defTheta); err != nil {
		return err
	}
	c.MaxPositionEmbeddings = map[string]int{"llama": 2048, "mistral": 4096 * 32, "qwen2": 32768, "qwen3": 32768, "gemma3_text": 131072}[c.ModelType]
	if r.MaxPositionEmbeddings != nil {
		c.MaxPositionEmbeddings = *r.MaxPositionEmbeddings
	}
	if c.MaxPositionEmbeddings <= 0 {
		return fmt.Errorf("hfconfig: max_position_embeddings %d must be positive", c.MaxPositionEmbeddings)
	}
	if n, f := c.scaledLen(); n > maxPositions {
		return fmt.Errorf("hfconfig: max_position_embeddings %d × rope factor %v is more than %d positions (a corrupt value?)", c.MaxPositionEmbeddings, f, maxPositions)
	}
	return nil
}

// parseLayers reads how the family builds its layers: tied embeddings,
// biases, Qwen3's q/k norms, the sliding window and the stored dtype.
func parseLayers(r *raw, c *Config) error {
	c.TieWordEmbeddings = c.ModelType == "gemma3_text" // Gemma3TextConfig's default
	if r.TieWordEmbeddings != nil {
		c.TieWordEmbeddings = *r.TieWordEmbeddings
	}
	if r.AttentionBias != nil {
		c.AttentionBias = *r.AttentionBias
	}
	switch c.ModelType {
	case "qwen2":
		// Qwen2Attention hard-codes bias=True on q/k/v and False on o, whatever
		// attention_bias says.
		c.QKVBias, c.OBias = true, false
	case "llama", "qwen3", "gemma3_text":
		c.QKVBias, c.OBias = c.AttentionBias, c.AttentionBias
	case "mistral":
		// MistralAttention hard-codes bias=False; attention_bias is not
		// MistralConfig's key.
		c.QKVBias, c.OBias = false, false
	}
	if r.MLPBias != nil && c.ModelType == "llama" {
		c.MLPBias = *r.MLPBias
	}
	c.QKNorm = c.ModelType == "qwen3" || c.ModelType == "gemma3_text"
	if r.MaxWindowLayers != nil {
		c.MaxWindowLayers = *r.MaxWindowLayers
	}
	if c.ModelType == "qwen2" || c.ModelType == "qwen3" {
		if err := parseQwenWindow(r, c); err != nil {
			return err
		}
	}
	switch {
	case r.DType != nil:
		c.DType = *r.DType
	case r.TorchDType != nil:
		c.DType = *r.TorchDType
	}
	return nil
}

// parseQwenWindow reads Qwen's sliding-window keys as Qwen2Config and
// Qwen3Config do: with use_sliding_window true, layers max_window_layers and
// up attend through a window of sliding_window keys. Hone implements
// windowed attention for gemma3_text only, so a config that would make any
// layer slide is refused (no released Qwen2.5 or Qwen3 checkpoint does);
// layer_types, which newer transformers write, must say full_attention
// throughout.
func parseQwenWindow(r *raw, c *Config) error {
	if r.UseSlidingWindow != nil && *r.UseSlidingWindow {
		if r.SlidingWindow == nil || *r.SlidingWindow <= 0 {
			return errors.New("hfconfig: use_sliding_window is true but sliding_window is not a positive number")
		}
		c.SlidingWindow = *r.SlidingWindow
		first := 28 // Qwen2Config's and Qwen3Config's max_window_layers default
		if r.MaxWindowLayers != nil {
			first = *r.MaxWindowLayers
		}
		if first < c.NumHiddenLayers {
			return fmt.Errorf("hfconfig: use_sliding_window true with max_window_layers %d makes layers %d..%d attend through a window of %d, which is not supported for %s (Hone implements sliding-window attention for gemma3_text only)",
				first, max(first, 0), c.NumHiddenLayers-1, c.SlidingWindow, c.ModelType)
		}
	}
	for i, t := range r.LayerTypes {
		if t != "full_attention" {
			return fmt.Errorf("hfconfig: layer_types[%d] %q is not supported for %s (only full_attention)", i, t, c.ModelType)
		}
	}
	if r.LayerTypes != nil && len(r.LayerTypes) != c.NumHiddenLayers {
		return fmt.Errorf("hfconfig: layer_types has %d entries, num_hidden_layers is %d", len(r.LayerTypes), c.NumHiddenLayers)
	}
	return nil
}

// gemma3LayerTypes are the values of layer_types Gemma 3 knows.
var gemma3LayerTypes = []string{"sliding_attention", "full_attention"}

// parseGemma3 reads what only gemma3_text has, with Gemma3TextConfig's
// defaults (transformers' configuration_gemma3.py): the layer types and
// their window, the local RoPE base, query_pre_attn_scalar, and refuses
// soft-capping and bidirectional attention, which Hone does not implement.
func parseGemma3(r *raw, c *Config) error {
	if c.ModelType != "gemma3_text" {
		return nil
	}
	c.SandwichNorms = true
	// Soft-capping, dropout and bidirectional attention are refused by the
	// field table (gemma3TextFields).
	c.QueryPreAttnScalar = 256
	if r.QueryPreAttnScalar != nil {
		c.QueryPreAttnScalar = *r.QueryPreAttnScalar
	}
	if !(c.QueryPreAttnScalar > 0) || math.IsInf(c.QueryPreAttnScalar, 0) {
		return fmt.Errorf("hfconfig: query_pre_attn_scalar %v must be positive", c.QueryPreAttnScalar)
	}
	if r.LayerTypes != nil {
		if len(r.LayerTypes) != c.NumHiddenLayers {
			return fmt.Errorf("hfconfig: layer_types has %d entries, num_hidden_layers is %d", len(r.LayerTypes), c.NumHiddenLayers)
		}
		for i, t := range r.LayerTypes {
			if !slices.Contains(gemma3LayerTypes, t) {
				return fmt.Errorf("hfconfig: layer_types[%d] %q is not supported (want %s)", i, t, strings.Join(gemma3LayerTypes, " or "))
			}
		}
		c.LayerTypes = append([]string(nil), r.LayerTypes...)
	} else {
		pattern := 6
		if r.SlidingWindowPattern != nil {
			pattern = *r.SlidingWindowPattern
		}
		if pattern <= 0 {
			return fmt.Errorf("hfconfig: sliding_window_pattern %d must be positive", pattern)
		}
		c.LayerTypes = make([]string, c.NumHiddenLayers)
		for i := range c.LayerTypes {
			c.LayerTypes[i] = "sliding_attention"
			if (i+1)%pattern == 0 {
				c.LayerTypes[i] = "full_attention"
			}
		}
	}
	c.SlidingWindow = 4096
	if m, ok := r.keys["sliding_window"]; ok {
		if string(m) == "null" || r.SlidingWindow == nil || *r.SlidingWindow <= 0 {
			return fmt.Errorf("hfconfig: sliding_window %s must be a positive number for gemma3_text", m)
		}
		c.SlidingWindow = *r.SlidingWindow
	}
	c.LocalRoPETheta = 10000
	if r.RopeLocalBaseFreq != nil {
		c.LocalRoPETheta = *r.RopeLocalBaseFreq
	}
	// Newer transformers write rope_parameters per layer type instead.
	var perType map[string]json.RawMessage
	if m := r.RopeParameters; len(m) > 0 && string(m) != "null" && json.Unmarshal(m, &perType) == nil {
		full, hasFull := perType["full_attention"]
		sliding, hasSliding := perType["sliding_attention"]
		if hasFull || hasSliding {
			var err error
			if hasFull {
				if c.RoPE, err = parseRoPE(raw{RopeTheta: r.RopeTheta, RopeScaling: r.RopeScaling, RopeParameters: full}, 1e6); err != nil {
					return fmt.Errorf("%w (in rope_parameters.full_attention)", err)
				}
			}
			if hasSliding {
				local, err := parseRoPE(raw{RopeTheta: r.RopeLocalBaseFreq, RopeParameters: sliding}, 10000)
				if err != nil {
					return fmt.Errorf("%w (in rope_parameters.sliding_attention; rope_theta there is rope_local_base_freq)", err)
				}
				if local.Type != "default" {
					return fmt.Errorf("hfconfig: rope_parameters.sliding_attention: rope type %q is not supported (the sliding layers use plain RoPE)", local.Type)
				}
				c.LocalRoPETheta = local.Theta
			}
		}
	}
	if !(c.LocalRoPETheta > 0) || math.IsInf(c.LocalRoPETheta, 0) {
		return fmt.Errorf("hfconfig: rope_local_base_freq %v must be positive", c.LocalRoPETheta)
	}
	return nil
}

// parseMistral reads the one key only MistralConfig has, sliding_window, as
// transformers' configuration_mistral.py does: absent, 4096 (its default);
// null, full attention (Mistral 7B v0.2 and later write it); a positive
// number, the window of every layer (v0.1 writes 4096): a key at distance
// ≥ sliding_window from the query is masked, as Gemma 3's sliding layers
// mask it.
func parseMistral(r *raw, c *Config) error {
	if c.ModelType != "mistral" {
		return nil
	}
	c.SlidingWindow = 4096
	if m, ok := r.keys["sliding_window"]; ok {
		switch {
		case string(m) == "null":
			c.SlidingWindow = 0
		case r.SlidingWindow == nil || *r.SlidingWindow <= 0:
			return fmt.Errorf("hfconfig: sliding_window %s must be null or a positive number for mistral", m)
		default:
			c.SlidingWindow = *r.SlidingWindow
		}
	}
	return nil
}

// parseSpecialIDs reads the bos, eos and pad token ids, each inside the
// vocabulary.
func parseSpecialIDs(r *raw, c *Config) error {
	if c.ModelType == "gemma3_text" {
		// Gemma3TextConfig's defaults: pad 0, eos 1, bos 2.
		for _, d := range []struct {
			key string
			m   *json.RawMessage
			id  string
		}{{"pad_token_id", &r.PadTokenID, "0"}, {"eos_token_id", &r.EOSTokenID, "1"}, {"bos_token_id", &r.BOSTokenID, "2"}} {
			if _, ok := r.keys[d.key]; !ok {
				*d.m = json.RawMessage(d.id)
			}
		}
	}
	ids, err := tokenIDs("bos_token_id", r.BOSTokenID, c.VocabSize)
	if err != nil {
		return err
	}
	if len(ids) > 1 {
		return fmt.Errorf("hfconfig: bos_token_id: want one id, got %v", ids)
	}
	if len(ids) == 1 {
		c.BOSTokenID = &ids[0]
	}
	if c.EOSTokenIDs, err = tokenIDs("eos_token_id", r.EOSTokenID, c.VocabSize); err != nil {
		return err
	}
	if ids, err = tokenIDs("pad_token_id", noPad(r.PadTokenID), c.VocabSize); err != nil {
		return err
	}
	if len(ids) > 1 {
		return fmt.Errorf("hfconfig: pad_token_id: want one id, got %v", ids)
	}
	if len(ids) == 1 {
		c.PadTokenID = &ids[0]
	}
	return nil
}

// noPad reads a pad_token_id of one negative id as no pad token (null):
// the early LLaMA conversions (decapoda-research's, made with a transformers
// 4.27 pre-release) and the fine-tunes made from them write -1 there, which
// transformers and vLLM load (a pad id is only ever a filler), so it must
// not refuse the folder. Other values pass through unchanged.
func noPad(m json.RawMessage) json.RawMessage {
	var one int
	if json.Unmarshal(m, &one) == nil && one < 0 {
		return nil
	}
	return m
}

// tokenIDs decodes a token id field written as an int, a list of ints, or null. Each
// id must index the vocabulary (vocab 0 skips the check).
func tokenIDs(field string, m json.RawMessage, vocab int) ([]int, error) {
	if len(m) == 0 || string(m) == "null" {
		return nil, nil
	}
	var ids []int
	var one int
	if err := json.Unmarshal(m, &one); err == nil {
		ids = []int{one}
	} else if err := json.Unmarshal(m, &ids); err != nil {
		return nil, fmt.Errorf("hfconfig: %s: want an int or a list of ints, got %s", field, m)
	}
	for _, id := range ids {
		if id < 0 || (vocab > 0 && id >= vocab) {
			return nil, fmt.Errorf("hfconfig: %s: id %d outside the vocabulary [0, %d)", field, id, vocab)
		}
	}
	return ids, nil
}

// ropeObj is the shape of both rope_scaling and rope_parameters.
type ropeObj struct {
	RopeType                      *string  `json:"rope_type"`
	Type                          *string  `json:"type"` // legacy spelling
	RopeTheta                     *float64 `json:"rope_theta"`
	Factor                        *float64 `json:"factor"`
	LowFreqFactor                 *float64 `json:"low_freq_factor"`
	HighFreqFactor                *float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings *float64 `json:"original_max_position_embeddings"`
	// PartialRotaryFactor is where transformers 5 may put it: RoPE on
	// that fraction of a head's dimensions, which Hone does not implement.
	PartialRotaryFactor *float64 `json:"partial_rotary_factor"`
}

func supportedRoPE() string { return "default, linear, llama3" }

func parseRoPE(r raw, defTheta float64) (RoPE, error) {
	rope := RoPE{Type: "default", Theta: defTheta}
	var objs []struct {
		field string
		o     ropeObj
	}
	for _, f := range []struct {
		field string
		m     json.RawMessage
	}{{"rope_scaling", r.RopeScaling}, {"rope_parameters", r.RopeParameters}} {
		if len(f.m) == 0 || string(f.m) == "null" {
			continue
		}
		var o ropeObj
		if err := exactjson.Unmarshal(f.m, &o); err != nil {
			return rope, fmt.Errorf("hfconfig: %s: %w", f.field, err)
		}
		objs = append(objs, struct {
			field string
			o     ropeObj
		}{f.field, o})
	}
	theta, thetaFrom := r.RopeTheta, "rope_theta"
	typ, typFrom := "", ""
	var o ropeObj
	for _, x := range objs {
		if f := x.o.PartialRotaryFactor; f != nil && *f != 1 {
			return rope, fmt.Errorf("hfconfig: %s.partial_rotary_factor %v is not supported (Hone rotates every dimension of a head)", x.field, *f)
		}
		t := ""
		switch {
		case x.o.RopeType != nil:
			t = *x.o.RopeType
		case x.o.Type != nil:
			t = *x.o.Type
		default:
			if x.field == "rope_parameters" {
				t = "default"
			} else {
				return rope, errors.New("hfconfig: rope_scaling has neither rope_type nor type")
			}
		}
		if typ != "" && t != typ {
			return rope, fmt.Errorf("hfconfig: %s says rope type %q but %s says %q", typFrom, typ, x.field, t)
		}
		typ, typFrom = t, x.field
		if x.o.RopeTheta != nil {
			if theta != nil && *theta != *x.o.RopeTheta {
				return rope, fmt.Errorf("hfconfig: %s %v and %s.rope_theta %v disagree", thetaFrom, *theta, x.field, *x.o.RopeTheta)
			}
			theta, thetaFrom = x.o.RopeTheta, x.field+".rope_theta"
		}
		// Later objects fill what earlier ones lacked (the two spellings carry the
		// same parameters when both are present).
		if o.Factor == nil {
			o.Factor = x.o.Factor
		}
		if o.LowFreqFactor == nil {
			o.LowFreqFactor = x.o.LowFreqFactor
		}
		if o.HighFreqFactor == nil {
			o.HighFreqFactor = x.o.HighFreqFactor
		}
		if o.OriginalMaxPositionEmbeddings == nil {
			o.OriginalMaxPositionEmbeddings = x.o.OriginalMaxPositionEmbeddings
		}
	}
	if theta != nil {
		rope.Theta = *theta
	}
	if !(rope.Theta > 0) || math.IsInf(rope.Theta, 0) {
		return rope, fmt.Errorf("hfconfig: %s %v must be positive", thetaFrom, rope.Theta)
	}
	if typ == "" {
		return rope, nil
	}
	rope.Type = typ
	from := typFrom
	factor := func() error {
		if o.Factor == nil || !(*o.Factor >= 1) || math.IsInf(*o.Factor, 0) {
			return fmt.Errorf("hfconfig: %s: %s rope needs factor >= 1", from, typ)
		}
		rope.Factor = *o.Factor
		return nil
	}
	switch typ {
	case "default":
	case "linear", "dynamic":
		if err := factor(); err != nil {
			return rope, err
		}
	case "llama3":
		if err := factor(); err != nil {
			return rope, err
		}
		if o.LowFreqFactor == nil || o.HighFreqFactor == nil || o.OriginalMaxPositionEmbeddings == nil {
			return rope, fmt.Errorf("hfconfig: %s: llama3 rope needs low_freq_factor, high_freq_factor and original_max_position_embeddings", from)
		}
		rope.LowFreqFactor, rope.HighFreqFactor = *o.LowFreqFactor, *o.HighFreqFactor
		if !(rope.LowFreqFactor > 0) || !(rope.HighFreqFactor > rope.LowFreqFactor) || math.IsInf(rope.HighFreqFactor, 0) {
			return rope, fmt.Errorf("hfconfig: %s: llama3 rope needs 0 < low_freq_factor (%v) < high_freq_factor (%v)", from, rope.LowFreqFactor, rope.HighFreqFactor)
		}
		omp := *o.OriginalMaxPositionEmbeddings
		if omp != math.Trunc(omp) || omp < 1 || omp > 1<<31 {
			return rope, fmt.Errorf("hfconfig: %s: original_max_position_embeddings %v must be a positive integer", from, omp)
		}
		rope.OriginalMaxPositionEmbeddings = int(omp)
	default:
		return rope, fmt.Errorf("hfconfig: %s: rope type %q is not supported (supported: %s)", from, typ, supportedRoPE())
	}
	return rope, nil
}

// GenerationConfig is the part of generation_config.json Hone uses. Nil pointers
// mean the key is absent.
type GenerationConfig struct {
	BOSTokenID        *int
	EOSTokenIDs       []int
	PadTokenID        *int
	DoSample          *bool
	Temperature       *float64
	TopP              *float64
	TopK              *int
	MinP              *float64
	RepetitionPenalty *float64
	MaxNewTokens      *int
}

// ParseGenerationConfig decodes generation_config.json.
func ParseGenerationConfig(data []byte) (*GenerationConfig, error) {
	var r struct {
		BOSTokenID        json.RawMessage `json:"bos_token_id"`
		EOSTokenID        json.RawMessage `json:"eos_token_id"`
		PadTokenID        json.RawMessage `json:"pad_token_id"`
		DoSample          *bool           `json:"do_sample"`
		Temperature       *float64        `json:"temperature"`
		TopP              *float64        `json:"top_p"`
		TopK              *int            `json:"top_k"`
		MinP              *float64        `json:"min_p"`
		RepetitionPenalty *float64        `json:"repetition_penalty"`
		MaxNewTokens      *int            `json:"max_new_tokens"`
	}
	if err := exactjson.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("hfconfig: generation config: %w", err)
	}
	g := &GenerationConfig{DoSample: r.DoSample, Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MinP: r.MinP,
		RepetitionPenalty: r.RepetitionPenalty, MaxNewTokens: r.MaxNewTokens}
	var err error
	one := func(field string, m json.RawMessage) (*int, error) {
		ids, err := tokenIDs(field, m, 0)
		if err != nil || len(ids) == 0 {
			return nil, err
		}
		if len(ids) > 1 {
			return nil, fmt.Errorf("hfconfig: generation config: %s: want one id, got %v", field, ids)
		}
		return &ids[0], nil
	}
	if g.BOSTokenID, err = one("bos_token_id", r.BOSTokenID); err != nil {
		return nil, err
	}
	if g.PadTokenID, err = one("pad_token_id", noPad(r.PadTokenID)); err != nil {
		return nil, err
	}
	if g.EOSTokenIDs, err = tokenIDs("eos_token_id", r.EOSTokenID, 0); err != nil {
		return nil, err
	}
	if g.Temperature != nil && *g.Temperature < 0 {
		return nil, fmt.Errorf("hfconfig: generation config: temperature %v is negative", *g.Temperature)
	}
	if g.TopP != nil && !(*g.TopP > 0 && *g.TopP <= 1) {
		return nil, fmt.Errorf("hfconfig: generation config: top_p %v outside (0, 1]", *g.TopP)
	}
	return g, nil
}

func derefAll(ps ...*int) []int {
	var out []int
	for _, p := range ps {
		if p != nil {
			out = append(out, *p)
		}
	}
	return out
}
