package model

import "fmt"

// LoadAdapter builds an adapter of config ac for a model of config c from
// tensors named as PEFT saves them (base_model.model.model.layers.N.<path>.
// lora_A.weight [r, in] and lora_B.weight [out, r]). Every targeted module of
// every layer must be present, with the expected shape.
func LoadAdapter(c *Config, ac AdapterConfig, src TensorSource) (*Adapter, error) {
	ad, err := newZeroAdapter(c, ac)
	if err != nil {
		return nil, err
	}
	for _, t := range ad.Tensors() {
		info, ok := src.Info(t.Name)
		if !ok {
			return nil, fmt.Errorf("lora: adapter has no tensor %q", t.Name)
		}
		if !equalShape(info.Shape, t.Shape) {
			return nil, fmt.Errorf("lora: tensor %q has shape %v, model and rank want %v", t.Name, info.Shape, t.Shape)
		}
		if err := src.Float32Into(t.Values, t.Name); err != nil {
			return nil, fmt.Errorf("lora: tensor %q: %w", t.Name, err)
		}
	}
	return ad, nil
}

// Tensors lists the adapter's A and B matrices under their PEFT names, in
// layer and module order; Values alias the adapter's memory.
func (ad *Adapter) Tensors() []Tensor {
	var out []Tensor
	for l, layer := range ad.Layers {
		for m, lr := range layer {
			if lr == nil {
				continue
			}
			p := PEFTPrefix(l, Module(m))
			out = append(out,
				Tensor{Name: p + "lora_A.weight", Shape: []int{lr.R, lr.In}, Values: lr.A},
				Tensor{Name: p + "lora_B.weight", Shape: []int{lr.Out, lr.R}, Values: lr.B})
		}
	}
	return out
}
