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

// RoPESetter is implemented by a backend whose RoPE backward can write
// dinp instead of accumulating into it: the attention's backward takes dq
// and dk fresh. kernels/cuda implements it; for host backends the
// function RoPEBackwardSet zeroes dinp and accumulates.
type RoPESetter interface {
	// RoPEBackwardSet sets dinp [N, H, D] to what RoPEBackward adds to
	// it (its contents ignored, NaN included), value for value.
	RoPEBackwardSet(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int)
}

// RoPEBackwardSet sets dinp [N, H, D] to RoPEBackward's gradient, whatever
// it held: with b's RoPESetter when b is one, else b.Zero, then
// b.RoPEBackward.
func RoPEBackwardSet(b Backend, dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	if s, ok := b.(RoPESetter); ok {
		s.RoPEBackwardSet(dinp, dout, pos, invFreq, N, H, D)
		return
	}
	NeedSizes("RoPEBackwardSet", N, H, D)
	Need("RoPEBackwardSet", "dinp", len(dinp), N*H*D)
	b.Zero(dinp, N*H*D)
	b.RoPEBackward(dinp, dout, pos, invFreq, N, H, D)
}
