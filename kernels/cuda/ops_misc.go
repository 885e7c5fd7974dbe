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

// GeGLUBackwardSet is kernels.GatedSetter's GeGLUBackwardSet on device
// buffers: it writes dgate and dup over n values and, unless act is nil,
// GeGLUForward's output into act (geglu_backward_set).
func (o *Ops) GeGLUBackwardSet(dgate, dup, act, dout, gate, up *Buffer, n int) error {
	return o.gatedBackwardSet("GeGLUBackwardSet", "geglu_backward_set", dgate, dup, act, dout, gate, up, n)
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
		{Kernel: "sum_squares_partial", Grid: Dim3{blocks, 1, 1}, Block: Dim3{sumSquaresThreads, 1, 1}, Args: []any{scratch, x, n}},
		{Kernel: "sum_squares_final", Grid: Dim3{1, 1, 1}, Block: Dim3{sumSquaresThreads, 1, 1}, Args: []any{scratch.view(2*blocks, 2), scratch, blocks}},
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

// SumSquaresMany is SumSquares of each xs[i] over ns[i] values, the same
// kernels with the same geometry (so the same bits), all queued before one
// download: their partial sums and results side by side in one scratch
// (2·(blocks+1) floats a tensor, each region starting 8-byte aligned), and
// one cuMemcpyDtoH for all, which waits for the kernels once. A zero ns[i]
// gives 0 and launches nothing.
func (o *Ops) SumSquaresMany(xs []*Buffer, ns []int) ([]float64, error) {
	c := check{op: "SumSquaresMany"}
	if len(xs) != len(ns) {
		return nil, fmt.Errorf("CUDA %s: %d buffers, %d sizes", c.op, len(xs), len(ns))
	}
	for i, x := range xs {
		c.sizes("n", ns[i])
		if ns[i] > 0 {
			c.buf(o.d, fmt.Sprintf("xs[%d]", i), x, ns[i])
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	out := make([]float64, len(xs))
	offs := make([]int, len(xs)) // the result's float index in the scratch, or -1
	total := 0
	for i, n := range ns {
		offs[i] = -1
		if n == 0 {
			continue
		}
		blocks := min(sumSquaresMaxBlocks, (n+sumSquaresThreads-1)/sumSquaresThreads)
		offs[i] = total + 2*blocks
		total += 2 * (blocks + 1)
	}
	if total == 0 {
		return out, nil
	}
	sc := o.lockScratch()
	defer sc.unlock()
	scratch, err := sc.get(c.op, "sumsquares", total)
	if err != nil {
		return nil, err
	}
	var steps []step
	at := 0
	for i, n := range ns {
		if n == 0 {
			continue
		}
		blocks := min(sumSquaresMaxBlocks, (n+sumSquaresThreads-1)/sumSquaresThreads)
		steps = append(steps, planSumSquares(scratch.view(at, 2*(blocks+1)), xs[i], n)...)
		at += 2 * (blocks + 1)
	}
	if err := o.run(c.op, steps); err != nil {
		return nil, err
	}
	host := make([]float32, total)
	if err := scratch.view(0, total).Download(host); err != nil {
		return nil, fmt.Errorf("CUDA %s: %w", c.op, err)
	}
	for i, off := range offs {
		if off < 0 {
			continue
		}
		// Little-endian as the device's, as in SumSquares.
		lo, hi := math.Float32bits(host[off]), math.Float32bits(host[off+1])
		out[i] = math.Float64frombits(uint64(hi)<<32 | uint64(lo))
	}
	return out, nil
}

// SumSquaresSegments is SumSquares of segments of one buffer: out[i] =
// Σ x[offs[i]+j]² over j < ns[i], bit for bit what SumSquares gives for
// that segment alone, by one launch of sum_squares_segments (one block a
// segment, playing SumSquares' two kernels and grid for it: sumsquares.cu)
// where SumSquaresMany launches two kernels a tensor. The segment table,
// (offset, length) int32 pairs, is copied to the device only when it
// differs from the last one copied into its scratch slot (a flat
// adapter's gradients and weights share one); the results come back by
// one cuMemcpyDtoH, which waits for the kernel. Segments may overlap; a
// zero-length one gives 0 and an empty list launches nothing.
func (o *Ops) SumSquaresSegments(x *Buffer, offs, ns []int) ([]float64, error) {
	c := check{op: "SumSquaresSegments"}
	if len(offs) != len(ns) {
		return nil, fmt.Errorf("CUDA %s: %d offsets, %d lengths", c.op, len(offs), len(ns))
	}
	if len(offs) == 0 {
		return nil, nil
	}
	c.sizes("segments", len(offs), 2) // the table's int32 pairs
	tab := make([]int32, 0, 2*len(offs))
	end := 0
	for i, off := range offs {
		c.sizes(fmt.Sprintf("segment %d's offset", i), off)
		c.sizes(fmt.Sprintf("segment %d's length", i), ns[i])
		if off+ns[i] > 1<<31-1 {
			c.fail("segment %d ends at %d: past 2³¹−1 elements", i, off+ns[i])
		}
		if c.err != nil {
			return nil, c.err
		}
		tab = append(tab, int32(off), int32(ns[i]))
		end = max(end, off+ns[i])
	}
	c.buf(o.d, "x", x, end)
	if c.err != nil {
		return nil, c.err
	}
	sc := o.lockScratch()
	defer sc.unlock()
	res, err := sc.get(c.op, "sumsquares", 2*len(offs)) // a double a segment
	if err != nil {
		return nil, err
	}
	seg, err := sc.table(c.op, "sumsquares.segments", tab)
	if err != nil {
		return nil, err
	}
	steps := []step{{Kernel: "sum_squares_segments", Grid: Dim3{len(offs), 1, 1}, Block: Dim3{sumSquaresThreads, 1, 1}, Args: []any{res, x, seg}}}
	if err := o.run(c.op, steps); err != nil {
		return nil, err
	}
	host := make([]float32, 2*len(offs))
	if err := res.Download(host); err != nil {
		return nil, fmt.Errorf("CUDA %s: %w", c.op, err)
	}
	out := make([]float64, len(offs))
	for i := range out {
		// Little-endian as the device's, as in SumSquares.
		lo, hi := math.Float32bits(host[2*i]), math.Float32bits(host[2*i+1])
		out[i] = math.Float64frombits(uint64(hi)<<32 | uint64(lo))
	}
	return out, nil
}
