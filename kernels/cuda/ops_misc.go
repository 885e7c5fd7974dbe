package cuda

// GeGLUForward is kernels.Backend.GeGLUForward on device buffers: out =
// gelu_tanh(gate)·up over n values (geglu.cu).
func (o *Ops) GeGLUForward(out, gate, up *Buffer, n int) error {
	c := check{op: "GeGLUForward"}
	c.sizes("n", n)
	c.buf(o.d, "out", out, n)
	c.buf(o.d, "gate", gate, n)
	c.buf(o.d, "up", up, n)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planFlat("geglu_forward", n, out, gate, up, n))
}

// GeGLUBackward is kernels.Backend.GeGLUBackward on device buffers: it
// accumulates dgate and dup over n values.
func (o *Ops) GeGLUBackward(dgate, dup, dout, gate, up *Buffer, n int) error {
	c := check{op: "GeGLUBackward"}
	c.sizes("n", n)
	c.buf(o.d, "dgate", dgate, n)
	c.buf(o.d, "dup", dup, n)
	c.buf(o.d, "dout", dout, n)
	c.buf(o.d, "gate", gate, n)
	c.buf(o.d, "up", up, n)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planFlat("geglu_backward", n, dgate, dup, dout, gate, up, n))
}

// AddScalar is kernels.Backend.AddScalar on device buffers: out = a + s
// over n values (out may be a).
func (o *Ops) AddScalar(out, a *Buffer, s float32, n int) error {
	c := check{op: "AddScalar"}
	c.sizes("n", n)
	c.buf(o.d, "out", out, n)
	c.buf(o.d, "a", a, n)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planFlat("add_scalar", n, out, a, s, n))
}

// Copy is kernels.Backend.Copy on device buffers: dst = src over the
// first n values (the two must not overlap; the rest of dst is left as it
// is).
func (o *Ops) Copy(dst, src *Buffer, n int) error {
	c := check{op: "Copy"}
	c.sizes("n", n)
	c.buf(o.d, "dst", dst, n)
	c.buf(o.d, "src", src, n)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planFlat("copy_f32", n, dst, src, n))
}

// Zero is kernels.Backend.Zero on device buffers: the first n values of x
// become 0 (whatever they were, NaN included).
func (o *Ops) Zero(x *Buffer, n int) error {
	c := check{op: "Zero"}
	c.sizes("n", n)
	c.buf(o.d, "x", x, n)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planFlat("zero_f32", n, x, n))
}
