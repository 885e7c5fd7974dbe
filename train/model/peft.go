package model

import (
	"fmt"

	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/kernels"
)

// FromPEFT turns an adapter read by format/peft into the model's Adapter for
// a model of config c. Layers or modules the file does not carry stay
// unadapted. Gradient buffers are allocated, so the adapter can be trained
// further (resume).
func FromPEFT(c *Config, pa *peft.Adapter) (*Adapter, error) {
	ac := AdapterConfig{Rank: pa.Config.R, Alpha: pa.Config.LoraAlpha, RSLoRA: pa.Config.UseRSLoRA}
	for _, s := range pa.Config.TargetModules {
		m, err := ParseModule(s)
		if err != nil {
			return nil, err
		}
		ac.Targets = append(ac.Targets, m)
	}
	if ac.Rank <= 0 {
		return nil, fmt.Errorf("lora: rank %d must be positive", ac.Rank)
	}
	// pa may name its layers otherwise (an adapter of Gemma3ForCausalLM
	// for the text model of Gemma3ForConditionalGeneration, or the
	// reverse): the layers are the same; it is saved again under c's.
	ad := &Adapter{Config: ac, Layers: make([][numModules]*LoRA, c.Layers), LayersPath: c.LayersPath}
	scale := float32(pa.Config.Scaling())
	for layer, mods := range pa.Tensors {
		if layer < 0 || layer >= c.Layers {
			return nil, fmt.Errorf("lora: adapter has layer %d, model has %d layers", layer, c.Layers)
		}
		for name, p := range mods {
			m, err := ParseModule(name)
			if err != nil {
				return nil, err
			}
			in, out := c.dims(m)
			if p.In != in || p.Out != out || len(p.A) != p.R*in || len(p.B) != out*p.R {
				return nil, fmt.Errorf("lora: layer %d %s maps %d→%d at rank %d, the model's projection is %d→%d", layer, name, p.In, p.Out, p.R, in, out)
			}
			ad.Layers[layer][m] = &LoRA{
				A: append([]float32(nil), p.A...), B: append([]float32(nil), p.B...),
				DA: make([]float32, len(p.A)), DB: make([]float32, len(p.B)),
				R: p.R, In: in, Out: out, Scale: scale,
			}
		}
	}
	return ad, nil
}

// ToPEFT returns the adapter as format/peft writes it (float32 values copied),
// naming base as base_model_name_or_path.
func (ad *Adapter) ToPEFT(base string) *peft.Adapter {
	cfg := peft.Config{
		PeftType: "LORA", TaskType: "CAUSAL_LM", BaseModelNameOrPath: base, InferenceMode: true,
		R: ad.Config.Rank, LoraAlpha: ad.Config.Alpha, Bias: "none", UseRSLoRA: ad.Config.RSLoRA,
	}
	for _, m := range ad.Config.Targets {
		cfg.TargetModules = append(cfg.TargetModules, m.String())
	}
	pa := &peft.Adapter{Config: cfg, LayersPath: ad.LayersPath}
	if ad.be != nil {
		kernels.Synchronize(ad.be) // the host reads A and B
	}
	for l, layer := range ad.Layers {
		for m, lr := range layer {
			if lr != nil {
				pa.Set(l, Module(m).String(), peft.LoRA{
					A: append([]float32(nil), lr.A...), B: append([]float32(nil), lr.B...), R: lr.R, In: lr.In, Out: lr.Out,
				})
			}
		}
	}
	return pa
}

// ReadAdapter reads the PEFT adapter folder dir for a model of config c.
func ReadAdapter(dir string, c *Config) (*Adapter, error) {
	ad, _, err := ReadAdapterBase(dir, c)
	return ad, err
}

// ReadAdapterBase is ReadAdapter that also returns the
// base_model_name_or_path the folder's adapter_config.json names ("" when
// none), which hone-serve compares with the model it serves.
func ReadAdapterBase(dir string, c *Config) (*Adapter, string, error) {
	pa, err := peft.Read(dir)
	if err != nil {
		return nil, "", err
	}
	ad, err := FromPEFT(c, pa)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", dir, err)
	}
	return ad, pa.Config.BaseModelNameOrPath, nil
}

// WriteAdapter saves ad as a PEFT adapter folder dir (adapter_config.json and
// adapter_model.safetensors, float32), which must not exist or be empty.
func WriteAdapter(dir string, ad *Adapter, base string) error {
	return peft.Write(dir, ad.ToPEFT(base))
}
