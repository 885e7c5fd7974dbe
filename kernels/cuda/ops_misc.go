package cuda

import (
	"fmt"
	"math"
)

// GeGLUForward is kernels.Backend.GeGLUForward on device buffers: out =
// gelu_tanh(gate)·up over n values (geglu.cu).
func (o *Ops) GeGLUForward(out, gate, up *Buffer, n int) error {
	return o.gatedForward("GeGLUForward", "geglu_forward", out, gate, up, n)
}

// GeGLUBackward is kernels.Backend.GeGLUBackward on device buffers: it
// accumulates dgate and dup over n values.
func (o *Ops) GeGLUBackward(dgate, dup, dout, gate, up *Buffer, n int) error {
	return o.gatedBackward("GeGLUBackward", "geglu_backward", dgate, dup, dout, gate, up, n)
}

// AddScalar is kernels.Backend.AddScalar on device buffers: out = a + s
// over n values (out may be a).
func (o *Ops) AddScalar(out, a *Buffer, s float32, n int) error {
	return o.scalarOp("AddScalar", "add_scalar", out, a, s, n)
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

// sumSquaresThreads and sumSquaresMaxBlocks are sumsquares.cu's geometry:
// 256 threads a block, one block per 256 values up to 256 blocks.
const (
	sumSquaresThreads   = 256
	sumSquaresMaxBlocks = 256
)

// planSumSquares: sum_squares_partial into scratch's first blocks doubles,
// then sum_squares_final into the double after them. The grid depends on n
// only, so the order of the additions is fixed for a given n.
func planSumSquares(scratch, x *Buffer, n int) []step {
	blocks := min(sumSquaresMaxBlocks, (n+sumSquaresThreads-1)/sumSquaresThreads)
	return []step{
		{"sum_squares_partial", Dim3{blocks, 1, 1}, Dim3{sumSquaresThreads, 1, 1}, []any{scratch, x, n}, nil},
		{"sum_squares_final", Dim3{1, 1, 1}, Dim3{sumSquaresThreads, 1, 1}, []any{scratch.view(2*blocks, 2), scratch, blocks}, nil},
	}
}

// SumSquares is kernels.Backend.SumSquares on a device buffer: Σ x[i]² over
// n values, in double on the device (sumsquares.cu: a fixed tree, so the
// same n gives the same bits), NaN or +Inf when a value is not finite. Its
// scratch (up to 257 doubles) is Ops' own, kept between calls (scratch.go);
// it downloads the result, which waits for the kernels.
func (o *Ops) SumSquares(x *Buffer, n int) (float64, error) {
	c := check{op: "SumSquares"}
	c.sizes("n", n)
	c.buf(o.d, "x", x, n)
	if c.err != nil {
		return 0, c.err
	}
	if n == 0 {
		return 0, nil
	}
	blocks := min(sumSquaresMaxBlocks, (n+sumSquaresThreads-1)/sumSquaresThreads)
	sc := o.lockScratch()
	defer sc.unlock()
	scratch, err := sc.get(c.op, "sumsquares", 2*(blocks+1)) // blocks+1 doubles
	if err != nil {
		return 0, err
	}
	host := make([]float32, scratch.Len())
	if err := o.run(c.op, planSumSquares(scratch, x, n)); err != nil {
		return 0, err
	}
	if err := scratch.Download(host); err != nil {
		return 0, fmt.Errorf("CUDA %s: %w", c.op, err)
	}
	// The double after the partial sums, little-endian as the device's.
	lo, hi := math.Float32bits(host[2*blocks]), math.Float32bits(host[2*blocks+1])
	return math.Float64frombits(uint64(hi)<<32 | uint64(lo)), nil
}
