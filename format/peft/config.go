package peft

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/hone-rl/hone/format/internal/exactjson"
)

// File names inside an adapter folder, as PEFT saves them.
const (
	ConfigName  = "adapter_config.json"
	WeightsName = "adapter_model.safetensors"
)

// Modules lists the projections an adapter may target, in layer order.
func Modules() []string {
	return []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
}

// ModulePath returns where a projection sits inside a decoder layer
// ("self_attn.q_proj", "mlp.down_proj").
func ModulePath(module string) (string, error) {
	switch module {
	case "q_proj", "k_proj", "v_proj", "o_proj":
		return "self_attn." + module, nil
	case "gate_proj", "up_proj", "down_proj":
		return "mlp." + module, nil
	}
	return "", fmt.Errorf("peft: unknown target module %q (supported: %s)", module, strings.Join(Modules(), ", "))
}

// The module paths of the decoder layers inside the models PEFT wraps, which
// begin the saved tensor names after "base_model.model.".
const (
	// LayersPath is a text model's (LlamaForCausalLM, Qwen2ForCausalLM,
	// Qwen3ForCausalLM, Gemma3ForCausalLM).
	LayersPath = "model.layers"
	// Gemma3LayersPath is Gemma3ForConditionalGeneration's language model's
	// since transformers 4.52 (self.model.language_model), what PEFT saves
	// with transformers 4.52 and later and vLLM's Gemma 3 loads.
	Gemma3LayersPath = "model.language_model.layers"
	// Gemma3LegacyLayersPath is Gemma3ForConditionalGeneration's under
	// transformers 4.50 and 4.51 (self.language_model.model), read only.
	Gemma3LegacyLayersPath = "language_model.model.layers"
)

// LayersPaths lists the layer paths Read accepts.
func LayersPaths() []string { return []string{LayersPath, Gemma3LayersPath, Gemma3LegacyLayersPath} }

// TensorName returns the saved name of a LoRA matrix of a text model
// (layers under LayersPath); which is "A" or "B".
func TensorName(layer int, module, which string) string {
	return TensorNameAt(LayersPath, layer, module, which)
}

// TensorNameAt returns the saved name of a LoRA matrix of a model whose
// decoder layers sit at layers ("" is LayersPath).
func TensorNameAt(layers string, layer int, module, which string) string {
	if layers == "" {
		layers = LayersPath
	}
	p, _ := ModulePath(module)
	return fmt.Sprintf("base_model.model.%s.%d.%s.lora_%s.weight", layers, layer, p, which)
}

// Config is adapter_config.json. The fields are PEFT's LoraConfig keys; Write emits
// them all so PEFT and vLLM find what they look for, and Read accepts files that
// omit the optional ones.
type Config struct {
	PeftType            string   `json:"peft_type"` // "LORA"
	TaskType            string   `json:"task_type"` // "CAUSAL_LM"
	BaseModelNameOrPath string   `json:"base_model_name_or_path"`
	Revision            *string  `json:"revision"`
	InferenceMode       bool     `json:"inference_mode"`
	R                   int      `json:"r"`
	LoraAlpha           float64  `json:"lora_alpha"`
	LoraDropout         float64  `json:"lora_dropout"`
	TargetModules       []string `json:"target_modules"`
	FanInFanOut         bool     `json:"fan_in_fan_out"`
	Bias                string   `json:"bias"` // "none"
	UseRSLoRA           bool     `json:"use_rslora"`
	UseDoRA             bool     `json:"use_dora"`
	ModulesToSave       []string `json:"modules_to_save"`
	// LayersToTransform, when set, lists the layers that carry LoRA tensors.
	LayersToTransform []int `json:"layers_to_transform"`
}

// Scaling is the factor of B·A: lora_alpha/r, or lora_alpha/√r with rsLoRA.
func (c Config) Scaling() float64 {
	if c.UseRSLoRA {
		return c.LoraAlpha / math.Sqrt(float64(c.R))
	}
	return c.LoraAlpha / float64(c.R)
}

// rawConfig takes the polymorphic keys as raw JSON so each can be judged.
type rawConfig struct {
	PeftType            *string         `json:"peft_type"`
	TaskType            *string         `json:"task_type"`
	BaseModelNameOrPath *string         `json:"base_model_name_or_path"`
	Revision            *string         `json:"revision"`
	InferenceMode       *bool           `json:"inference_mode"`
	R                   *int            `json:"r"`
	LoraAlpha           *float64        `json:"lora_alpha"`
	LoraDropout         *float64        `json:"lora_dropout"`
	TargetModules       json.RawMessage `json:"target_modules"`
	FanInFanOut         *bool           `json:"fan_in_fan_out"`
	Bias                *string         `json:"bias"`
	UseRSLoRA           *bool           `json:"use_rslora"`
	UseDoRA             *bool           `json:"use_dora"`
	ModulesToSave       json.RawMessage `json:"modules_to_save"`
	LayersToTransform   json.RawMessage `json:"layers_to_transform"`
	RankPattern         json.RawMessage `json:"rank_pattern"`
	AlphaPattern        json.RawMessage `json:"alpha_pattern"`
	LoraBias            *bool           `json:"lora_bias"`
	LayerReplication    json.RawMessage `json:"layer_replication"`
	UseQALoRA           *bool           `json:"use_qalora"`
	TrainableTokens     json.RawMessage `json:"trainable_token_indices"`
	TargetParameters    json.RawMessage `json:"target_parameters"`
	ExcludeModules      json.RawMessage `json:"exclude_modules"`
	AloraInvocation     json.RawMessage `json:"alora_invocation_tokens"`
	ArrowConfig         json.RawMessage `json:"arrow_config"`
	UseBdLoRA           json.RawMessage `json:"use_bdlora"`
	KasaConfig          json.RawMessage `json:"kasa_config"`
	InitLoraWeights     json.RawMessage `json:"init_lora_weights"`
}

func isNullOrEmpty(m json.RawMessage) bool {
	s := string(bytes.TrimSpace(m))
	return s == "" || s == "null" || s == "[]" || s == "{}"
}

// ReadConfigFile reads the adapter_config.json at path, refusing one of
// more than 64 MiB by its size (a weights file under the config's name, a
// corrupt write) before reading it into memory. It is the reader Read
// uses, exported for the packages outside format (serve's vLLM sync) that
// check a folder's config without the rest of Read. An error opening the
// file is returned as it is (errors.Is(err, fs.ErrNotExist) holds for a
// missing one).
func ReadConfigFile(path string) ([]byte, error) { return exactjson.ReadFile(path) }

// ParseConfig decodes adapter_config.json and rejects what Hone (and vLLM) cannot
// apply faithfully. Unknown keys are ignored, as PEFT and vLLM do.
func ParseConfig(data []byte) (Config, error) {
	var r rawConfig
	if err := exactjson.Unmarshal(data, &r); err != nil {
		return Config{}, fmt.Errorf("peft: adapter config: %w", err)
	}
	c := Config{Bias: "none", TaskType: "CAUSAL_LM", PeftType: "LORA"}
	if r.PeftType == nil {
		return c, fmt.Errorf("peft: adapter config: no peft_type (want \"LORA\")")
	}
	c.PeftType = *r.PeftType
	if c.PeftType != "LORA" {
		return c, fmt.Errorf("peft: adapter config: peft_type %q is not supported (only \"LORA\")", c.PeftType)
	}
	if r.TaskType != nil && *r.TaskType != "CAUSAL_LM" {
		return c, fmt.Errorf("peft: adapter config: task_type %q is not supported (only \"CAUSAL_LM\")", *r.TaskType)
	}
	if r.BaseModelNameOrPath != nil {
		c.BaseModelNameOrPath = *r.BaseModelNameOrPath
	}
	c.Revision = r.Revision
	if r.InferenceMode != nil {
		c.InferenceMode = *r.InferenceMode
	}
	if r.R == nil || r.LoraAlpha == nil {
		return c, fmt.Errorf("peft: adapter config: r and lora_alpha are required")
	}
	c.R, c.LoraAlpha = *r.R, *r.LoraAlpha
	if r.LoraDropout != nil {
		c.LoraDropout = *r.LoraDropout
	}
	if r.FanInFanOut != nil {
		c.FanInFanOut = *r.FanInFanOut
	}
	if r.Bias != nil {
		c.Bias = *r.Bias
	}
	if r.UseRSLoRA != nil {
		c.UseRSLoRA = *r.UseRSLoRA
	}
	if r.UseDoRA != nil {
		c.UseDoRA = *r.UseDoRA
	}
	if r.LoraBias != nil && *r.LoraBias {
		return c, fmt.Errorf("peft: adapter config: lora_bias is true; trained LoRA biases are not supported")
	}
	// Keys that change which weights exist or how they combine; their defaults are
	// null/false, and anything else would be silently misapplied.
	for _, k := range []struct {
		key string
		set bool
	}{
		{"layer_replication", !isNullOrEmpty(r.LayerReplication)},
		{"use_qalora", r.UseQALoRA != nil && *r.UseQALoRA},
		{"trainable_token_indices", !isNullOrEmpty(r.TrainableTokens)},
		{"target_parameters", !isNullOrEmpty(r.TargetParameters)},
		{"exclude_modules", !isNullOrEmpty(r.ExcludeModules)},
		// LoRA variants PEFT applies on load whose forward is not B·A on
		// every token: aLoRA acts only from its invocation tokens on, Arrow
		// routes between adapters, BD-LoRA stores block-diagonal factors,
		// KaSA truncates the base weight and adds a diagonal.
		{"alora_invocation_tokens", !isNullOrEmpty(r.AloraInvocation)},
		{"arrow_config", !isNullOrEmpty(r.ArrowConfig)},
		{"use_bdlora", !isNullOrEmpty(r.UseBdLoRA) && string(bytes.TrimSpace(r.UseBdLoRA)) != "false"},
		{"kasa_config", !isNullOrEmpty(r.KasaConfig)},
	} {
		if k.set {
			return c, fmt.Errorf("peft: adapter config: %s is set; Hone supports only its default (null/false)", k.key)
		}
	}
	if err := checkInit(r.InitLoraWeights); err != nil {
		return c, err
	}
	if !isNullOrEmpty(r.ModulesToSave) {
		return c, fmt.Errorf("peft: adapter config: modules_to_save is %s; fully trained extra modules are not supported (vLLM rejects them too)", r.ModulesToSave)
	}
	if !isNullOrEmpty(r.RankPattern) || !isNullOrEmpty(r.AlphaPattern) {
		return c, fmt.Errorf("peft: adapter config: rank_pattern/alpha_pattern set; per-module rank or alpha is not supported")
	}
	if len(r.TargetModules) == 0 || string(r.TargetModules) == "null" {
		return c, fmt.Errorf("peft: adapter config: target_modules is required")
	}
	var s string
	if err := json.Unmarshal(r.TargetModules, &s); err == nil {
		if s != "all-linear" {
			return c, fmt.Errorf("peft: adapter config: target_modules %q: regular expressions are not supported; give a list of module names", s)
		}
		c.TargetModules = Modules() // every linear projection but lm_head, as PEFT expands it
	} else if err := json.Unmarshal(r.TargetModules, &c.TargetModules); err != nil {
		return c, fmt.Errorf("peft: adapter config: target_modules must be a list of module names: %w", err)
	}
	if !isNullOrEmpty(r.LayersToTransform) {
		var one int
		if err := json.Unmarshal(r.LayersToTransform, &one); err == nil {
			c.LayersToTransform = []int{one}
		} else if err := json.Unmarshal(r.LayersToTransform, &c.LayersToTransform); err != nil {
			return c, fmt.Errorf("peft: adapter config: layers_to_transform must be an int or a list of ints: %w", err)
		}
	}
	if err := c.validate(); err != nil {
		return c, err
	}
	return c, nil
}

// checkInit refuses an init_lora_weights that rewrites the base weights.
// PEFT runs the initialisation again whenever it loads such an adapter
// (LoraLayer.update_layer): PiSSA, CorDA, OLoRA and LoRA-GA subtract their
// initial B·A from the base weight, LoftQ replaces it by its quantization,
// and the saved A and B are then added to that modified weight. Applied to
// the original base, as Hone and vLLM apply an adapter, the same tensors
// give another model. PEFT converts such an adapter into a plain one
// (save_pretrained with path_initial_model_for_weight_conversion), which
// writes init_lora_weights true.
func checkInit(m json.RawMessage) error {
	var s string
	if json.Unmarshal(m, &s) != nil {
		return nil // true, false or absent: the adapter applies to the base as it is
	}
	low := strings.ToLower(s)
	if strings.HasPrefix(s, "pissa") || strings.HasPrefix(s, "corda") || low == "olora" || s == "loftq" || s == "lora_ga" {
		return fmt.Errorf("peft: adapter config: init_lora_weights %q: PEFT rewrites the base model's weights for this initialisation when it loads the adapter, so the adapter does not apply to the original base; convert it to a plain LoRA adapter first (PEFT's save_pretrained with path_initial_model_for_weight_conversion)", s)
	}
	return nil
}

// validate applies the rules shared by reading and writing.
func (c Config) validate() error {
	if c.PeftType != "LORA" {
		return fmt.Errorf("peft: peft_type %q is not supported (only \"LORA\")", c.PeftType)
	}
	if c.R <= 0 {
		return fmt.Errorf("peft: r = %d must be positive", c.R)
	}
	if !(c.LoraAlpha > 0) || math.IsInf(c.LoraAlpha, 0) {
		return fmt.Errorf("peft: lora_alpha = %v must be positive", c.LoraAlpha)
	}
	if c.UseDoRA {
		return fmt.Errorf("peft: use_dora is true; DoRA adapters are not supported (vLLM rejects them too)")
	}
	if len(c.ModulesToSave) > 0 {
		return fmt.Errorf("peft: modules_to_save %v is not supported (vLLM rejects it too)", c.ModulesToSave)
	}
	if c.Bias != "none" {
		return fmt.Errorf("peft: bias %q is not supported (only \"none\")", c.Bias)
	}
	if c.FanInFanOut {
		return fmt.Errorf("peft: fan_in_fan_out is true; that layout is for GPT-2 style Conv1D layers, not llama/qwen")
	}
	if !(c.LoraDropout >= 0 && c.LoraDropout < 1) {
		return fmt.Errorf("peft: lora_dropout %v outside [0, 1)", c.LoraDropout)
	}
	if len(c.TargetModules) == 0 {
		return fmt.Errorf("peft: target_modules is empty")
	}
	seen := map[string]bool{}
	for _, m := range c.TargetModules {
		if _, err := ModulePath(m); err != nil {
			return err
		}
		if seen[m] {
			return fmt.Errorf("peft: target module %q listed twice", m)
		}
		seen[m] = true
	}
	for _, l := range c.LayersToTransform {
		if l < 0 {
			return fmt.Errorf("peft: layers_to_transform has negative layer %d", l)
		}
	}
	return nil
}

// targets reports whether module is in the config's target_modules.
func (c Config) targets(module string) bool {
	for _, m := range c.TargetModules {
		if m == module {
			return true
		}
	}
	return false
}
