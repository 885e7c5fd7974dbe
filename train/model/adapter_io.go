package model

import "github.com/hone-rl/hone/kernels"

// Tensors lists the adapter's A and B matrices under their PEFT names, in
// layer and module order; Values alias the adapter's memory, which the host
// may read or write until the next op (Tensors waits for the backend's
// queued ops first: kernels.Synchronize).
func (ad *Adapter) Tensors() []Tensor {
	if ad.be != nil {
		kernels.Synchronize(ad.be)
	}
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
