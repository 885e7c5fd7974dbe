package modelfolder

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/safetensors"
)

// Folder is an opened model folder. Close releases the weight mappings.
type Folder struct {
	Dir     string
	Config  *hfconfig.Config
	Weights *safetensors.Set
	// TokenizerPath and TokenizerConfigPath name tokenizer.json and
	// tokenizer_config.json when the folder has them ("" otherwise).
	TokenizerPath       string
	TokenizerConfigPath string
}

// TensorSpec is one checkpoint tensor a config implies. Shape is PyTorch's: a
// Linear weight is [out, in].
type TensorSpec struct {
	Name     string
	Shape    []int
	Optional bool // lm_head.weight of a tied model: present in some checkpoints
}

// Open reads dir's config and opens its weights, then checks them with Check.
func Open(dir string) (*Folder, error) {
	cfg, err := hfconfig.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("model folder %s: %w", dir, err)
	}
	w, err := safetensors.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("model folder %s: %w", dir, err)
	}
	if err := Check(cfg, w); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("model folder %s: %w", dir, err)
	}
	f := &Folder{Dir: dir, Config: cfg, Weights: w}
	if p := filepath.Join(dir, "tokenizer.json"); exists(p) {
		f.TokenizerPath = p
	}
	if p := filepath.Join(dir, "tokenizer_config.json"); exists(p) {
		f.TokenizerConfigPath = p
	}
	return f, nil
}

func exists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Close unmaps the weights.
func (f *Folder) Close() error { return f.Weights.Close() }

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

// Check verifies that w holds every tensor Expected(c) lists, with its shape and a
// float dtype, and nothing else (rotary_emb.inv_freq buffers that old exports
// include are tolerated, as transformers ignores them).
func Check(c *hfconfig.Config, w *safetensors.Set) error {
	want := map[string]bool{}
	for _, s := range Expected(c) {
		want[s.Name] = true
		info, ok := w.Info(s.Name)
		if !ok {
			if s.Optional {
				continue
			}
			return fmt.Errorf("checkpoint has no tensor %q, which a %s config with these sizes needs", s.Name, c.ModelType)
		}
		switch info.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16, safetensors.F64:
		default:
			return fmt.Errorf("tensor %q has dtype %s; only float weights are supported (no quantized checkpoints)", s.Name, info.DType)
		}
		if fmt.Sprint(info.Shape) != fmt.Sprint(s.Shape) {
			return fmt.Errorf("tensor %q has shape %v, config.json implies %v", s.Name, info.Shape, s.Shape)
		}
	}
	var extra []string
	for _, n := range w.Names() {
		if !want[n] && !strings.HasSuffix(n, "rotary_emb.inv_freq") {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		more := ""
		if len(extra) > 5 {
			more = fmt.Sprintf(" and %d more", len(extra)-5)
			extra = extra[:5]
		}
		return fmt.Errorf("checkpoint has tensors the %s config does not explain: %s%s", c.ModelType, strings.Join(extra, ", "), more)
	}
	return nil
}
