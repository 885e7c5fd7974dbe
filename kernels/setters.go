package kernels

// GatedSetter is implemented by a backend whose gated units' backward can
// write dgate and dup instead of accumulating into them, and write the
// forward's output act on the way: the model's MLP backward takes dgate
// and dup fresh, so accumulating costs a pass zeroing each and a read of
// each in the kernel, [N, I] values apiece, and it needs act again (the
// down projection's LoRA gradient reads it), which a separate forward
// pass would read gate and up once more for. kernels/cuda implements it;
// host backends (ref, cpu) do not: the functions SwiGLUBackwardSet and
// GeGLUBackwardSet zero the two and accumulate, then run the forward, for
// them.
type GatedSetter interface {
	// SwiGLUBackwardSet sets dgate and dup to what SwiGLUBackward adds
	// to them (their contents ignored, NaN included) and, when act is not
	// nil, act to SwiGLUForward's output, value for value. No output may
	// overlap another buffer.
	SwiGLUBackwardSet(dgate, dup, act, dout, gate, up []float32, n int)
	// GeGLUBackwardSet is SwiGLUBackwardSet for GeGLUBackward and
	// GeGLUForward.
	GeGLUBackwardSet(dgate, dup, act, dout, gate, up []float32, n int)
}

// SwiGLUBackwardSet sets dgate and dup over n values to SwiGLUBackward's
// gradients, whatever they held, and act (unless nil) to SwiGLUForward's
// output: with b's GatedSetter when b is one, else b.Zero on each, then
// b.SwiGLUBackward and b.SwiGLUForward.
func SwiGLUBackwardSet(b Backend, dgate, dup, act, dout, gate, up []float32, n int) {
	if s, ok := b.(GatedSetter); ok {
		s.SwiGLUBackwardSet(dgate, dup, act, dout, gate, up, n)
		return
	}
	NeedGatedBackward("SwiGLUBackwardSet", dgate, dup, dout, gate, up, n)
	b.Zero(dgate, n)
	b.Zero(dup, n)
	b.SwiGLUBackward(dgate, dup, dout, gate, up, n)
	if act != nil {
		b.SwiGLUForward(act, gate, up, n)
	}
}

// GeGLUBackwardSet is SwiGLUBackwardSet for GeGLUBackward and GeGLUForward.
func GeGLUBackwardSet(b Backend, dgate, dup, act, dout, gate, up []float32, n int) {
	if s, ok := b.(GatedSetter); ok {
		s.GeGLUBackwardSet(dgate, dup, act, dout, gate, up, n)
		return
	}
	NeedGatedBackward("GeGLUBackwardSet", dgate, dup, dout, gate, up, n)
	b.Zero(dgate, n)
	b.Zero(dup, n)
	b.GeGLUBackward(dgate, dup, dout, gate, up, n)
	if act != nil {
		b.GeGLUForward(act, gate, up, n)
	}
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
