package modelfolder

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hone-rl/hone/format/chattemplate"
	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/safetensors"
	"github.com/hone-rl/hone/format/tokenizer"
)

// The files of a model folder, named for the programs that write one
// (hone-train init-model). The weights are model.safetensors, or shards
// with safetensors.IndexName.
const (
	ConfigFile           = hfconfig.ConfigName
	GenerationConfigFile = hfconfig.GenerationConfigName
	TokenizerFile        = tokenizer.FileName
	TokenizerConfigFile  = chattemplate.ConfigName
	SpecialTokensMapFile = chattemplate.SpecialTokensMapName
)

// Part is a part of a model folder for Open to read; parts combine with |.
type Part uint

const (
	// Config is config.json, with generation_config.json when present.
	Config Part = 1 << iota
	// Weights are the safetensors weights, checked against the config
	// (Check); asking for them reads Config too.
	Weights
	// Tokenizer is tokenizer.json (or tokenizer.json.gz), with the
	// add_bos_token and add_eos_token of tokenizer_config.json for the
	// classes whose post-processor transformers rebuilds from them
	// (tokenizer.Load).
	Tokenizer
	// Template is the chat template and the special tokens, from
	// tokenizer_config.json and chat_template.jinja.
	Template
	// All is what serve and train open: the whole folder.
	All = Config | Weights | Tokenizer | Template
)

// Folder is an opened model folder: the parts Open was asked for, nil for
// the others. Close releases the weight mappings.
type Folder struct {
	Dir       string
	Config    *hfconfig.Config // Config.Generation is generation_config.json
	Weights   *safetensors.Set
	Tokenizer *tokenizer.Tokenizer
	Template  *chattemplate.Template
	// StopTokens are the ids that end a turn (see StopTokens): serve stops
	// generating on them and layout ends a trained turn at them. Set when
	// Tokenizer and Template are both opened.
	StopTokens []int

	layout  Layout   // how Weights names the text model's tensors
	skipped []string // tensors of a multimodal checkpoint that are not the text model's
}

// Layout is how a checkpoint names the text model's tensors: Model replaces
// the "model." that begins the names Expected lists, LMHead the "lm_head."
// of lm_head.weight. A text-only checkpoint's Layout is {"model.",
// "lm_head."}.
type Layout struct{ Model, LMHead string }

// Name returns the checkpoint's name of the tensor Expected calls name.
func (l Layout) Name(name string) string {
	if rest, ok := strings.CutPrefix(name, "model."); ok {
		return l.Model + rest
	}
	if rest, ok := strings.CutPrefix(name, "lm_head."); ok {
		return l.LMHead + rest
	}
	return name
}

// Layouts returns the layouts a checkpoint of config c may have, the first
// the one Hone expects when none is found. The multimodal Gemma 3
// (Gemma3ForConditionalGeneration) has two: the hub files' (what
// save_pretrained writes, transformers 4.50 to 4.57: language_model.model.…,
// language_model.lm_head.weight), and its modules' own names since
// transformers 4.52 (model.language_model.…, lm_head.weight; its
// _checkpoint_conversion_mapping maps the first onto these).
func Layouts(c *hfconfig.Config) []Layout {
	if c.Wrapper == "gemma3" {
		return []Layout{{"language_model.model.", "language_model.lm_head."}, {"model.language_model.", "lm_head."}}
	}
	return []Layout{{"model.", "lm_head."}}
}

// nonText reports whether a tensor of a multimodal checkpoint belongs to its
// vision side (the SigLIP tower and the projector into the text model),
// which Hone does not load.
func nonText(c *hfconfig.Config, name string) bool {
	if c.Wrapper != "gemma3" {
		return false
	}
	for _, p := range []string{"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// TextWeights are the folder's weights under the names Expected lists
// (model.…, lm_head.weight), whatever the checkpoint's layout; a model
// loader reads them through Info, Bytes and Float32Into.
type TextWeights struct {
	set    *safetensors.Set
	layout Layout
}

// TextWeights returns the text model's weights (nil set when Weights was
// not opened).
func (f *Folder) TextWeights() TextWeights { return TextWeights{f.Weights, f.layout} }

// Info describes the tensor Expected calls name.
func (t TextWeights) Info(name string) (safetensors.TensorInfo, bool) {
	return t.set.Info(t.layout.Name(name))
}

// Bytes returns the raw bytes of the tensor Expected calls name.
func (t TextWeights) Bytes(name string) ([]byte, error) { return t.set.Bytes(t.layout.Name(name)) }

// Float32Into converts the tensor Expected calls name into dst.
func (t TextWeights) Float32Into(dst []float32, name string) error {
	return t.set.Float32Into(dst, t.layout.Name(name))
}

// TensorSpec is one checkpoint tensor a config implies. Shape is PyTorch's: a
// Linear weight is [out, in].
type TensorSpec struct {
	Name     string
	Shape    []int
	Optional bool // lm_head.weight of a tied model: present in some checkpoints
}

// Open reads the parts of the model folder dir. Errors name the folder and
// the file at fault; a missing config.json or tokenizer.json wraps
// fs.ErrNotExist.
func Open(dir string, parts Part) (*Folder, error) {
	f := &Folder{Dir: dir}
	if err := f.open(parts); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("model folder %s: %w", dir, err)
	}
	return f, nil
}

func (f *Folder) open(parts Part) error {
	var err error
	if parts&(Config|Weights) != 0 {
		if f.Config, err = hfconfig.Load(f.Dir); err != nil {
			return err
		}
	}
	if parts&Weights != 0 {
		if f.Weights, err = safetensors.Open(f.Dir); err != nil {
			return err
		}
		if f.layout, f.skipped, err = check(f.Config, f.Weights); err != nil {
			return err
		}
	}
	if parts&Template != 0 {
		if f.Template, err = chattemplate.Load(f.Dir); err != nil {
			return err
		}
	}
	if parts&Tokenizer != 0 {
		if f.Tokenizer, err = tokenizer.Load(f.Dir); err != nil {
			return err
		}
	}
	if f.Tokenizer == nil || f.Template == nil {
		return nil
	}
	var eos []int
	if f.Config != nil {
		eos = f.Config.StopTokenIDs()
	} else if eos, err = hfconfig.LoadEOS(f.Dir); err != nil {
		// Without Config, the eos ids are read on their own, so that a
		// folder of a family Hone cannot run still renders.
		return err
	}
	f.StopTokens = StopTokens(eos, f.Template, f.Tokenizer)
	return nil
}

// Notes returns what opening the folder knowingly left aside, one line
// each, for the stage to log: config.json keys outside the family's table
// (hfconfig.Fields), which are left unread.
func (f *Folder) Notes() []string {
	var notes []string
	if f.Config != nil && len(f.Config.UnknownFields) > 0 {
		table := f.Config.ModelType
		if f.Config.Wrapper != "" {
			table = f.Config.Wrapper + " and " + table
		}
		notes = append(notes, fmt.Sprintf("%s: %s: keys not read (unknown to Hone's %s table; transformers' configuration class stores such keys without using them): %s",
			f.Dir, ConfigFile, table, strings.Join(f.Config.UnknownFields, ", ")))
	}
	if len(f.skipped) > 0 {
		notes = append(notes, fmt.Sprintf("%s: a %s checkpoint: its text model is loaded (tensors %s…); the %d tensors of its vision tower and projector (%s, …) are not: Hone trains and serves text only",
			f.Dir, f.Config.Wrapper, f.layout.Model, len(f.skipped), f.skipped[0]))
	}
	return notes
}

// Close unmaps the weights (when they were opened).
func (f *Folder) Close() error {
	if f == nil || f.Weights == nil {
		return nil
	}
	return f.Weights.Close()
}

// TokenIDer maps a token, spelled as in tokenizer.json, to its id;
// *tokenizer.Tokenizer is one.
type TokenIDer interface {
	TokenID(token string) (int, bool)
}

// StopTokens is the one rule for which tokens end a turn, shared by serve
// (generation stops on them) and layout (a trained turn ends at them), as
// vLLM serves a Hugging Face folder:
//   - eos, the ids transformers' generate stops on: generation_config.json's
//     eos_token_id, one id or a list, else config.json's
//     (hfconfig.Config.StopTokenIDs); Llama 3.2 lists <|end_of_text|>,
//     <|eom_id|> and <|eot_id|> there;
//   - the tokenizer's eos_token from tokenizer_config.json (the template's
//     special token; special_tokens_map.json's in a folder saved before
//     transformers 4.34), which vLLM stops on besides: Qwen's <|im_end|>
//     when generation_config.json is missing.
//
// The ids come in that order, each once. Nothing else ends a turn: a token
// the folder does not name is text to the model, however it is spelled.
func StopTokens(eos []int, t *chattemplate.Template, tok TokenIDer) []int {
	out := make([]int, 0, len(eos)+1)
	for _, id := range eos {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if name, ok := t.SpecialTokens()["eos_token"]; ok {
		if id, ok := tok.TokenID(name); ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Expected lists the tensors a checkpoint of config c holds, in layer order.
func Expected(c *hfconfig.Config) []TensorSpec {
	C, V, I := c.HiddenSize, c.VocabSize, c.IntermediateSize
	q, kv, D := c.QDim(), c.KVDim(), c.HeadDim
	specs := []TensorSpec{{Name: "model.embed_tokens.weight", Shape: []int{V, C}}}
	add := func(name string, shape ...int) { specs = append(specs, TensorSpec{Name: name, Shape: shape}) }
	for l := 0; l < c.NumHiddenLayers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", C)
		add(p+"self_attn.q_proj.weight", q, C)
		add(p+"self_attn.k_proj.weight", kv, C)
		add(p+"self_attn.v_proj.weight", kv, C)
		add(p+"self_attn.o_proj.weight", C, q)
		if c.QKVBias {
			add(p+"self_attn.q_proj.bias", q)
			add(p+"self_attn.k_proj.bias", kv)
			add(p+"self_attn.v_proj.bias", kv)
		}
		if c.OBias {
			add(p+"self_attn.o_proj.bias", C)
		}
		if c.QKNorm {
			add(p+"self_attn.q_norm.weight", D)
			add(p+"self_attn.k_norm.weight", D)
		}
		add(p+"post_attention_layernorm.weight", C)
		if c.SandwichNorms {
			add(p+"pre_feedforward_layernorm.weight", C)
			add(p+"post_feedforward_layernorm.weight", C)
		}
		add(p+"mlp.gate_proj.weight", I, C)
		add(p+"mlp.up_proj.weight", I, C)
		add(p+"mlp.down_proj.weight", C, I)
		if c.MLPBias {
			add(p+"mlp.gate_proj.bias", I)
			add(p+"mlp.up_proj.bias", I)
			add(p+"mlp.down_proj.bias", C)
		}
	}
	add("model.norm.weight", C)
	specs = append(specs, TensorSpec{Name: "lm_head.weight", Shape: []int{V, C}, Optional: c.TieWordEmbeddings})
	return specs
}

// Check verifies that w holds every tensor Expected(c) lists, named as one of
// Layouts(c) names them, with its shape and a float dtype, and nothing else
// (rotary_emb.inv_freq buffers that old exports include are tolerated, as
// transformers ignores them; so are the vision tensors of a multimodal
// checkpoint, which are not loaded).
func Check(c *hfconfig.Config, w *safetensors.Set) error {
	_, _, err := check(c, w)
	return err
}

// check is Check, returning the layout found and the names of the tensors
// left aside, sorted.
func check(c *hfconfig.Config, w *safetensors.Set) (Layout, []string, error) {
	layouts := Layouts(c)
	layout := layouts[0]
	for _, l := range layouts {
		if w.Has(l.Name("model.embed_tokens.weight")) {
			layout = l
			break
		}
	}
	want := map[string]bool{}
	for _, s := range Expected(c) {
		name := layout.Name(s.Name)
		want[name] = true
		info, ok := w.Info(name)
		if !ok {
			if s.Optional {
				continue
			}
			what := c.ModelType
			if c.Wrapper != "" {
				what = c.Wrapper + " (text model " + c.ModelType + ")"
			}
			return layout, nil, fmt.Errorf("checkpoint has no tensor %q, which a %s config with these sizes needs", name, what)
		}
		switch info.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16, safetensors.F64:
		default:
			return layout, nil, fmt.Errorf("tensor %q%s has dtype %s; only float weights are supported (no quantized checkpoints)", name, inFile(w, name), info.DType)
		}
		if fmt.Sprint(info.Shape) != fmt.Sprint(s.Shape) {
			return layout, nil, fmt.Errorf("tensor %q%s has shape %v, config.json implies %v", name, inFile(w, name), info.Shape, s.Shape)
		}
	}
	var extra, skipped []string
	for _, n := range w.Names() {
		switch {
		case want[n] || strings.HasSuffix(n, "rotary_emb.inv_freq"):
		case nonText(c, n):
			skipped = append(skipped, n)
		default:
			extra = append(extra, n)
		}
	}
	sort.Strings(skipped)
	if len(extra) > 0 {
		sort.Strings(extra)
		more := ""
		if len(extra) > 5 {
			more = fmt.Sprintf(" and %d more", len(extra)-5)
			extra = extra[:5]
		}
		for i, n := range extra {
			extra[i] = n + inFile(w, n)
		}
		return layout, nil, fmt.Errorf("checkpoint has tensors the %s config does not explain: %s%s", c.ModelType, strings.Join(extra, ", "), more)
	}
	return layout, skipped, nil
}

// inFile is " (in SHARD)", naming the file of w that holds the tensor: a
// checkpoint of many shards names which one to look into.
func inFile(w *safetensors.Set, name string) string {
	p := w.FileOf(name)
	if p == "" {
		return ""
	}
	return " (in " + filepath.Base(p) + ")"
}
