package kernels

// GatedSetter is implemented by a backend whose gated units' backward can
// write dgate and dup instead of accumulating into them: the model's MLP
// backward takes both fresh, so accumulating costs a pass zeroing each
// and a read of each in the kernel, [N, I] values apiece (on the 7B
// shape 2.5 GB a layer of a LoRA step's 36). kernels/cuda implements it;
// host backends (ref, cpu) do not: the functions SwiGLUBackwardSet and
// GeGLUBackwardSet zero the two and accumulate for them.
type GatedSetter interface {
	// SwiGLUBackwardSet sets dgate and dup to what SwiGLUBackward adds
	// to them (their contents ignored, NaN included), value for value.
	SwiGLUBackwardSet(dgate, dup, dout, gate, up []float32, n int)
	// GeGLUBackwardSet is SwiGLUBackwardSet for GeGLUBackward.
	GeGLUBackwardSet(dgate, dup, dout, gate, up []float32, n int)
}

// SwiGLUBackwardSet sets dgate and dup over n values to SwiGLUBackward's
// gradients, whatever they held: with b's GatedSetter when b is one, else
// b.Zero on each, then b.SwiGLUBackward.
func SwiGLUBackwardSet(b Backend, dgate, dup, dout, gate, up []float32, n int) {
	if s, ok := b.(GatedSetter); ok {
		s.SwiGLUBackwardSet(dgate, dup, dout, gate, up, n)
		return
	}
	NeedGatedBackward("SwiGLUBackwardSet", dgate, dup, dout, gate, up, n)
	b.Zero(dgate, n)
	b.Zero(dup, n)
	b.SwiGLUBackward(dgate, dup, dout, gate, up, n)
}

// GeGLUBackwardSet is SwiGLUBackwardSet for GeGLUBackward.
func GeGLUBackwardSet(b Backend, dgate, dup, dout, gate, up []float32, n int) {
	if s, ok := b.(GatedSetter); ok {
		s.GeGLUBackwardSet(dgate, dup, dout, gate, up, n)
		return
	}
	NeedGatedBackward("GeGLUBackwardSet", dgate, dup, dout, gate, up, n)
	b.Zero(dgate, n)
	b.Zero(dup, n)
	b.GeGLUBackward(dgate, dup, dout, gate, up, n)
}
