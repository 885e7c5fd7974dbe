package model

// Tensors lists the adapter's A and B matrices under their PEFT names, in
// layer and module order; Values alias the adapter's memory.
func (ad *Adapter) Tensors() []Tensor {
	var out []Tensor
	for l, layer := range ad.Layers {
		for m, lr := range layer {
			if lr == nil {
				continue
			}
			p := ad.peftPrefix(l, Module(m))
			out = append(out,
				Tensor{Name: p + "lora_A.weight", Shape: []int{lr.R, lr.In}, Values: lr.A},
				Tensor{Name: p + "lora_B.weight", Shape: []int{lr.Out, lr.R}, Values: lr.B})
		}
	}
	return out
}
