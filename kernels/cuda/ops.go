package cuda

import (
	"fmt"
	"math"
	"sort"

	"github.com/hone-rl/hone/kernels"
)

// Ops launches Hone's own kernels (the .cu modules beside this file) on one
// device: its methods are kernels.Backend's ops on device buffers, each a
// fixed launch geometry (the plan* functions) after checking the sizes and
// buffer lengths. They queue the kernels on the default stream and return
// before they end (Download waits). It ran on an H200 once (gpucheck/RESULTS.md).
type Ops struct {
	d       *Device
	mods    []*Kernels
	kernels map[string]*Kernel
	prec    kernels.Precision // the products on bfloat16 weights (SetPrecision)
	attn    string            // the bf16 mode's tensor-core attention: "tc1" (""), "tc2", "tc3", "tc3k64" or "gemm" (SetAttentionKernel)
	// scoreCap and rowBlock: the GEMM attention's score scratch bound and
	// row block when > 0 (tests); attnGEMMScoreBytes and attnGEMMBlock
	// otherwise (gemmScoreBytes, gemmRowBlock)
	scoreCap, rowBlock int
	gemmLib            string // the bf16 linear products' library: "cublas" ("") or "cublaslt" (SetGEMMLibrary)
	// chooseThreads: ChooseRows' block when > 0 (tests); chooseThreads
	// otherwise
	chooseThreads int
	store         scratchStore // device scratch kept between calls (scratch.go)
}

// kernelModules names the module (.cu file) of every kernel Ops launches.
var kernelModules = map[string]string{
	"rmsnorm_forward":          "rmsnorm",
	"rmsnorm_forward_bf16":     "rmsnorm",
	"rmsnorm_forward_add":      "rmsnorm",
	"rmsnorm_backward":         "rmsnorm",
	"rmsnorm_backward_bf16":    "rmsnorm",
	"rmsnorm_backward_dweight": "rmsnorm",
	"rope_forward":             "rope",
	"rope_backward":            "rope",
	"rope_backward_set":        "rope",
	"swiglu_forward":           "swiglu",
	"swiglu_forward_bf16":      "swiglu",
	"swiglu_backward":          "swiglu",
	"swiglu_backward_set":      "swiglu",
	"swiglu_backward_set_bf16": "swiglu",
	"embedding_forward":        "embedding",
	"embedding_forward_bf16":   "embedding",
	"embedding_backward":       "embedding",
	"embedding_sort":           "embedding",
	"adamw":                    "adamw",
	"add":                      "elementwise",
	"scale":                    "elementwise",
	"axpy":                     "elementwise",
	"scale_cols":               "elementwise",
	"logprob_dz":               "logprob_backward",
	"logprob_bwd_expect_bf16":  "logprob_backward",
	"geglu_forward":            "geglu",
	"geglu_forward_bf16":       "geglu",
	"geglu_backward":           "geglu",
	"geglu_backward_set":       "geglu",
	"geglu_backward_set_bf16":  "geglu",
	"add_scalar":               "misc",
	"copy_f32":                 "misc",
	"zero_f32":                 "misc",
	"sum_squares_partial":      "sumsquares",
	"sum_squares_final":        "sumsquares",
	"sum_squares_segments":     "sumsquares",
	"choose_rows":              "sample",
	"choose_rows_max":          "sample",
	"choose_rows_sum":          "sample",
	"attention_gemm_gather":    "attention_gemm",
	"attention_gemm_scatter":   "attention_gemm",
	"attention_gemm_softmax":   "attention_gemm",
	"attention_gemm_dsoftmax":  "attention_gemm",
	"attention_decode_append":  "attention_decode",
	"attention_decode_batch":   "attention_decode",
	"bias_forward":             "linear",
	"bias_backward":            "linear",
	"bf16_to_f32":              "linear",
	"f32_to_bf16":              "linear",
	"logsoftmax_forward":       "softmax",
	"logsoftmax_backward":      "softmax",
	"entropy_forward":          "softmax",
	"entropy_backward":         "softmax",
	"logprob_chunk":            "logprob",
	"logprob_finish":           "logprob",
	"expect_scale":             "logprob",
	"logprob_expect":           "logprob",
	"logprob_backward_expect":  "logprob",
	"attention_forward":        "attention",
	"attention_backward_dq":    "attention",
	"attention_backward_dkdv":  "attention",

	"attention_tc_forward":       "attention_tc",
	"attention_tc_backward_dq":   "attention_tc",
	"attention_tc_backward_dkdv": "attention_tc",

	"attention_fa2_forward":       "attention_fa2",
	"attention_fa2_delta":         "attention_fa2",
	"attention_fa2_backward_dq":   "attention_fa2",
	"attention_fa2_backward_dkdv": "attention_fa2",

	"attention_mma_forward":           "attention_mma",
	"attention_mma_forward_k64":       "attention_mma",
	"attention_mma_backward_dq":       "attention_mma",
	"attention_mma_backward_dkdv":     "attention_mma",
	"attention_mma_backward_dkdv_k64": "attention_mma",
	"attention_mma_backward_dq_k64":   "attention_mma",

	"gated_lora_forward_swiglu":  "gated_lora",
	"gated_lora_forward_geglu":   "gated_lora",
	"gated_lora_backward_swiglu": "gated_lora",
	"gated_lora_backward_geglu":  "gated_lora",

	"gated_lora_forward_swiglu_bf16in":  "gated_lora",
	"gated_lora_forward_geglu_bf16in":   "gated_lora",
	"gated_lora_backward_swiglu_bf16in": "gated_lora",
	"gated_lora_backward_geglu_bf16in":  "gated_lora",
}

// LoadOps loads every module Ops needs (Device.LoadKernels) and looks up
// its kernels. Unload (or Device.Close) unloads them.
func (d *Device) LoadOps() (*Ops, error) {
	o := &Ops{d: d, kernels: map[string]*Kernel{}}
	byModule := map[string][]string{}
	for k, m := range kernelModules {
		byModule[m] = append(byModule[m], k)
	}
	mods := make([]string, 0, len(byModule))
	for m := range byModule {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, m := range mods {
		mod, err := d.LoadKernels(m)
		if err != nil {
			o.Unload()
			return nil, err
		}
		o.mods = append(o.mods, mod)
		for _, name := range byModule[m] {
			k, err := mod.Kernel(name)
			if err != nil {
				o.Unload()
				return nil, err
			}
			o.kernels[name] = k
		}
	}
	return o, nil
}

// Unload frees the scratch Ops kept between calls (scratch.go) and unloads
// the modules LoadOps loaded; the first error is returned.
func (o *Ops) Unload() error {
	first := o.freeScratch()
	for _, m := range o.mods {
		if err := m.Unload(); err != nil && first == nil {
			first = err
		}
	}
	o.mods = nil
	return first
}

// step is one kernel launch of an op: the kernel, its geometry, and its
// arguments in the kernel's parameter order. An op's buffer arguments are
// whatever its caller passes to the plan (*Buffer for Ops; host slices in
// the tests that run the same plans on the CPU shim), the rest int and
// float32.
type step struct {
	Kernel      string
	Grid, Block Dim3
	Args        []any
	Gemm        *gemmStep // instead of a kernel: a GEMM (Device.Matmul)
	// SharedBytes is the launch's dynamic shared memory (cuLaunchKernel's
	// sharedMemBytes, the kernel's HONE_DYNAMIC_SHARED buffer); above 48
	// KiB, Kernel.Launch opts the kernel in first.
	SharedBytes int
}

// gemmStep is C [M,N] = A [M,K] · op(B) + Beta·C (B [N,K] when TransB,
// else [K,N]) on the op's buffers (or views of them).
type gemmStep struct {
	C, A, B any
	M, N, K int
	TransB  bool
	Beta    float32
}

// run launches an op's steps in order.
func (o *Ops) run(op string, steps []step) error {
	for _, s := range steps {
		if g := s.Gemm; g != nil {
			if err := o.d.Matmul(g.C.(*Buffer), g.A.(*Buffer), g.B.(*Buffer), g.M, g.N, g.K, false, g.TransB, g.Beta); err != nil {
				return fmt.Errorf("CUDA %s: %w", op, err)
			}
			continue
		}
		k, ok := o.kernels[s.Kernel]
		if !ok {
			return fmt.Errorf("CUDA %s: kernel %s not loaded", op, s.Kernel)
		}
		if err := k.Launch(s.Grid, s.Block, s.SharedBytes, s.Args...); err != nil {
			return fmt.Errorf("CUDA %s: %w", op, err)
		}
	}
	return nil
}

// check collects an op's argument errors: negative or too large sizes,
// missing or short buffers. The first one is kept.
type check struct {
	op  string
	err error
}

func (c *check) fail(format string, a ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("CUDA %s: %s", c.op, fmt.Sprintf(format, a...))
	}
}

// sizes fails unless every size is ≥ 0 and their product fits an int32
// (the kernels index with int).
func (c *check) sizes(names string, s ...int) {
	p := 1
	for _, v := range s {
		if v < 0 {
			c.fail("negative size in %s = %v", names, s)
			return
		}
		if v > 0 && p > (1<<31-1)/v {
			c.fail("sizes %s = %v: more than 2³¹−1 elements", names, s)
			return
		}
		p *= v
	}
}

// buf fails unless b is a buffer of this device with at least n elements.
func (c *check) buf(d *Device, name string, b *Buffer, n int) {
	switch {
	case b == nil:
		c.fail("%s is nil", name)
	case b.d != d:
		c.fail("%s is a buffer of another device", name)
	case b.n < n:
		c.fail("%s has %d elements, shape needs %d", name, b.n, n)
	}
}

// rowThreads is the block of a one-block-per-row kernel over rows of C
// values: 32 threads a warp, up to 256, no more warps than the row fills.
func rowThreads(C int) int {
	return min(256, max(32, (C+31)/32*32))
}

// planRMSNormForward: one block per row.
func planRMSNormForward(out, rstd, inp, weight any, N, C int, eps float32) []step {
	if N == 0 {
		return nil
	}
	return []step{{Kernel: "rmsnorm_forward", Grid: Dim3{N, 1, 1}, Block: Dim3{rowThreads(C), 1, 1}, Args: []any{out, rstd, inp, weight, C, eps}}}
}

// planRMSNormBackward: dinp one block per row (rmsnorm_backward, or
// rmsnorm_backward_bf16 writing dinpBF too when that is not nil); dweight
// (when withDweight) one block of 32×8 threads per 32 columns.
func planRMSNormBackward(dinp, dweight, dinpBF, dout, rstd, inp, weight any, withDweight bool, N, C int) []step {
	if N == 0 {
		return nil
	}
	s := []step{{Kernel: "rmsnorm_backward", Grid: Dim3{N, 1, 1}, Block: Dim3{rowThreads(C), 1, 1}, Args: []any{dinp, dout, rstd, inp, weight, C}}}
	if dinpBF != nil {
		s[0] = step{Kernel: "rmsnorm_backward_bf16", Grid: Dim3{N, 1, 1}, Block: Dim3{rowThreads(C), 1, 1}, Args: []any{dinp, dinpBF, dout, rstd, inp, weight, C}}
	}
	if withDweight {
		s = append(s, step{Kernel: "rmsnorm_backward_dweight", Grid: Dim3{(C + 31) / 32, 1, 1}, Block: Dim3{32, 8, 1}, Args: []any{dweight, dout, rstd, inp, N, C}})
	}
	return s
}

// RMSNormForward is kernels.Backend.RMSNormForward on device buffers: out
// [N,C], rstd [N], inp [N,C], weight [C]; C ≥ 1.
func (o *Ops) RMSNormForward(out, rstd, inp, weight *Buffer, N, C int, eps float32) error {
	if err := o.rmsNormForwardCheck("RMSNormForward", out, rstd, inp, weight, N, C, false); err != nil {
		return err
	}
	return o.run("RMSNormForward", planRMSNormForward(out, rstd, inp, weight, N, C, eps))
}

// RMSNormForwardBF16 is RMSNormForward that also writes out rounded to
// bfloat16 into outBF (bfloat16 pairs, bf16Len(N·C) elements):
// rmsnorm_forward_bf16, one block a row as rmsnorm_forward, whose copy
// LinearForwardBF16Rounded multiplies. out may be nil: then only outBF
// and rstd are written (kernels.NormInputRounder's RMSNormForwardBF16),
// the bits they have with it.
func (o *Ops) RMSNormForwardBF16(out, rstd, outBF, inp, weight *Buffer, N, C int, eps float32) error {
	const op = "RMSNormForwardBF16"
	if err := o.rmsNormForwardCheck(op, out, rstd, inp, weight, N, C, true); err != nil {
		return err
	}
	c := check{op: op}
	c.buf(o.d, "outBF", outBF, bf16Len(N*C))
	if c.err != nil {
		return c.err
	}
	if N == 0 {
		return nil
	}
	return o.run(op, []step{{Kernel: "rmsnorm_forward_bf16", Grid: Dim3{N, 1, 1}, Block: Dim3{rowThreads(C), 1, 1}, Args: []any{out, rstd, outBF, inp, weight, C, eps}}})
}

// RMSNormForwardAdd is a residual add and RMSNormForward of the sum in one
// launch (rmsnorm_forward_add, one block a row as rmsnorm_forward): sum =
// inp + res, then out, rstd and, when outBF is not nil, out's bfloat16
// rounding (as RMSNormForwardBF16) of sum, the bits of Add followed by
// RMSNormForward or RMSNormForwardBF16 in either precision. sum may be inp
// or res (a residual stream updated in place); out, rstd and outBF must
// not overlap them.
func (o *Ops) RMSNormForwardAdd(sum, out, rstd, outBF, inp, res, weight *Buffer, N, C int, eps float32) error {
	const op = "RMSNormForwardAdd"
	if err := o.rmsNormForwardCheck(op, out, rstd, inp, weight, N, C, false); err != nil {
		return err
	}
	c := check{op: op}
	c.buf(o.d, "sum", sum, N*C)
	c.buf(o.d, "res", res, N*C)
	if outBF != nil {
		c.buf(o.d, "outBF", outBF, bf16Len(N*C))
	}
	if c.err != nil {
		return c.err
	}
	if N == 0 {
		return nil
	}
	return o.run(op, []step{{Kernel: "rmsnorm_forward_add", Grid: Dim3{N, 1, 1}, Block: Dim3{rowThreads(C), 1, 1},
		Args: []any{sum, out, rstd, outBF, inp, res, weight, C, eps}}})
}

// rmsNormForwardCheck is an RMSNorm forward's size and buffer check;
// with outOptional, out may be nil.
func (o *Ops) rmsNormForwardCheck(op string, out, rstd, inp, weight *Buffer, N, C int, outOptional bool) error {
	c := check{op: op}
	c.sizes("N, C", N, C)
	if C < 1 {
		c.fail("C = %d: want at least 1", C)
	}
	if out != nil || !outOptional {
		c.buf(o.d, "out", out, N*C)
	}
	c.buf(o.d, "rstd", rstd, N)
	c.buf(o.d, "inp", inp, N*C)
	c.buf(o.d, "weight", weight, C)
	return c.err
}

// RMSNormBackward is kernels.Backend.RMSNormBackward on device buffers: it
// accumulates dinp [N,C] and dweight [C] (nil: skipped); dout, inp [N,C],
// rstd [N], weight [C]; C ≥ 1. dweight's sum over rows is deterministic.
func (o *Ops) RMSNormBackward(dinp, dweight, dout, rstd, inp, weight *Buffer, N, C int) error {
	return o.rmsNormBackward("RMSNormBackward", dinp, dweight, nil, dout, rstd, inp, weight, N, C)
}

// RMSNormBackwardBF16 is RMSNormBackward that also writes dinp's new
// values rounded to bfloat16 into dinpBF (bfloat16 pairs, bf16Len(N·C)
// elements; rmsnorm_backward_bf16), whose copy LinearBackwardBF16Rounded
// multiplies: the bits of rounding dinp afterwards.
func (o *Ops) RMSNormBackwardBF16(dinp, dweight, dinpBF, dout, rstd, inp, weight *Buffer, N, C int) error {
	return o.rmsNormBackward("RMSNormBackwardBF16", dinp, dweight, dinpBF, dout, rstd, inp, weight, N, C)
}

// rmsNormBackward is RMSNormBackward, and with dinpBF RMSNormBackwardBF16.
func (o *Ops) rmsNormBackward(op string, dinp, dweight, dinpBF, dout, rstd, inp, weight *Buffer, N, C int) error {
	c := check{op: op}
	c.sizes("N, C", N, C)
	if C < 1 {
		c.fail("C = %d: want at least 1", C)
	}
	c.buf(o.d, "dinp", dinp, N*C)
	if dweight != nil {
		c.buf(o.d, "dweight", dweight, C)
	}
	c.buf(o.d, "dout", dout, N*C)
	c.buf(o.d, "rstd", rstd, N)
	c.buf(o.d, "inp", inp, N*C)
	c.buf(o.d, "weight", weight, C)
	var bf any
	if dinpBF != nil {
		c.buf(o.d, "dinpBF", dinpBF, bf16Len(N*C))
		bf = dinpBF
	}
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planRMSNormBackward(dinp, dweight, bf, dout, rstd, inp, weight, dweight != nil, N, C))
}

// flatThreads is the block of the kernels that take their work items in a
// grid-stride loop; flatGrid their grid: one item a thread, up to
// maxFlatBlocks blocks (each thread then takes several).
const (
	flatThreads   = 256
	maxFlatBlocks = 4096
)

func flatGrid(items int) Dim3 {
	return Dim3{min(maxFlatBlocks, (items+flatThreads-1)/flatThreads), 1, 1}
}

// planRoPE: one thread per rotated pair or unrotated dim.
func planRoPE(kernel string, out, inp, pos, invFreq any, N, H, D, half int) []step {
	items := N * H * (D - half)
	if items == 0 {
		return nil
	}
	return []step{{Kernel: kernel, Grid: flatGrid(items), Block: Dim3{flatThreads, 1, 1}, Args: []any{out, inp, pos, invFreq, N, H, D, half}}}
}

func (o *Ops) ropeCheck(op string, out, inp, pos, invFreq *Buffer, N, H, D, half int) error {
	c := check{op: op}
	c.sizes("N, H, D", N, H, D)
	if half < 0 || 2*half > D {
		c.fail("rotary dims 2·%d outside [0, head dim %d]", half, D)
	}
	c.buf(o.d, "out", out, N*H*D)
	c.buf(o.d, "inp", inp, N*H*D)
	c.buf(o.d, "pos", pos, N)
	if half > 0 || invFreq != nil {
		c.buf(o.d, "invFreq", invFreq, half)
	}
	return c.err
}

// RoPEForward is kernels.Backend.RoPEForward on device buffers, with
// half = len(invFreq) given: out, inp [N,H,D] (out may be inp); pos [N]
// int32 (UploadInt32); invFreq [half] (nil when half is 0).
func (o *Ops) RoPEForward(out, inp, pos, invFreq *Buffer, N, H, D, half int) error {
	if err := o.ropeCheck("RoPEForward", out, inp, pos, invFreq, N, H, D, half); err != nil {
		return err
	}
	return o.run("RoPEForward", planRoPE("rope_forward", out, inp, pos, invFreq, N, H, D, half))
}

// RoPEBackward is kernels.Backend.RoPEBackward on device buffers: it
// accumulates dinp [N,H,D] += the rotation by −θ of dout [N,H,D].
func (o *Ops) RoPEBackward(dinp, dout, pos, invFreq *Buffer, N, H, D, half int) error {
	if err := o.ropeCheck("RoPEBackward", dinp, dout, pos, invFreq, N, H, D, half); err != nil {
		return err
	}
	return o.run("RoPEBackward", planRoPE("rope_backward", dinp, dout, pos, invFreq, N, H, D, half))
}

// RoPEBackwardSet is kernels.RoPESetter's RoPEBackwardSet on device
// buffers: it writes dinp [N,H,D] = the rotation by −θ of dout
// (rope_backward_set).
func (o *Ops) RoPEBackwardSet(dinp, dout, pos, invFreq *Buffer, N, H, D, half int) error {
	if err := o.ropeCheck("RoPEBackwardSet", dinp, dout, pos, invFreq, N, H, D, half); err != nil {
		return err
	}
	return o.run("RoPEBackwardSet", planRoPE("rope_backward_set", dinp, dout, pos, invFreq, N, H, D, half))
}

// planFlat: one thread per element of n, in a grid-stride loop.
func planFlat(kernel string, n int, args ...any) []step {
	if n == 0 {
		return nil
	}
	return []step{{Kernel: kernel, Grid: flatGrid(n), Block: Dim3{flatThreads, 1, 1}, Args: args}}
}

// SwiGLUForward is kernels.Backend.SwiGLUForward on device buffers: out =
// silu(gate)·up over n values.
func (o *Ops) SwiGLUForward(out, gate, up *Buffer, n int) error {
	return o.gatedForward("SwiGLUForward", "swiglu_forward", out, gate, up, n)
}

// SwiGLUForwardBF16 is SwiGLUForward that also writes out rounded to
// bfloat16 into outBF (bfloat16 pairs, bf16Len(n) elements):
// swiglu_forward_bf16, whose copy LinearForwardBF16Rounded multiplies.
func (o *Ops) SwiGLUForwardBF16(out, outBF, gate, up *Buffer, n int) error {
	return o.gatedForwardBF16("SwiGLUForwardBF16", "swiglu_forward_bf16", out, outBF, gate, up, n)
}

// GeGLUForwardBF16 is SwiGLUForwardBF16 for GeGLU (geglu_forward_bf16).
func (o *Ops) GeGLUForwardBF16(out, outBF, gate, up *Buffer, n int) error {
	return o.gatedForwardBF16("GeGLUForwardBF16", "geglu_forward_bf16", out, outBF, gate, up, n)
}

// gatedForwardBF16 launches a gated unit's forward_bf16 kernel:
// gatedForward's output and its bf16 copy.
func (o *Ops) gatedForwardBF16(op, kernel string, out, outBF, gate, up *Buffer, n int) error {
	c := check{op: op}
	c.sizes("n", n)
	c.buf(o.d, "out", out, n)
	c.buf(o.d, "outBF", outBF, bf16Len(n))
	c.buf(o.d, "gate", gate, n)
	c.buf(o.d, "up", up, n)
	if c.err != nil {
		return c.err
	}
	return o.run(op, planFlat(kernel, n, out, outBF, gate, up, n))
}

// SwiGLUBackward is kernels.Backend.SwiGLUBackward on device buffers: it
// accumulates dgate and dup over n values.
func (o *Ops) SwiGLUBackward(dgate, dup, dout, gate, up *Buffer, n int) error {
	return o.gatedBackward("SwiGLUBackward", "swiglu_backward", dgate, dup, dout, gate, up, n)
}

// SwiGLUBackwardSet is kernels.GatedSetter's SwiGLUBackwardSet on device
// buffers: it writes dgate and dup over n values and, unless act is nil,
// SwiGLUForward's output into act (swiglu_backward_set).
func (o *Ops) SwiGLUBackwardSet(dgate, dup, act, dout, gate, up *Buffer, n int) error {
	return o.gatedBackwardSet("SwiGLUBackwardSet", "swiglu_backward_set", dgate, dup, act, dout, gate, up, n)
}

// SwiGLUBackwardSetBF16 is SwiGLUBackwardSet that also writes dgate and
// dup rounded to bfloat16 into dgateBF and dupBF (bfloat16 pairs,
// (n+1)/2 elements each): swiglu_backward_set_bf16, whose copies
// LinearBackwardBF16Rounded (and LoRABackwardManyBF16) multiplies. dgate
// and dup may both be nil: then only the copies (and act) are written;
// actBF, when not nil, receives act's copy (MatmulBF16 takes it). Exactly
// one of dout and doutBF is not nil: doutBF holds dout as bfloat16 pairs
// (LinearBackwardBF16To and MatmulBF16To write it), widened on the read.
func (o *Ops) SwiGLUBackwardSetBF16(dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up *Buffer, n int) error {
	return o.gatedBackwardSetBF16("SwiGLUBackwardSetBF16", "swiglu_backward_set_bf16", dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up, n)
}

// GeGLUBackwardSetBF16 is SwiGLUBackwardSetBF16 for GeGLU
// (geglu_backward_set_bf16).
func (o *Ops) GeGLUBackwardSetBF16(dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up *Buffer, n int) error {
	return o.gatedBackwardSetBF16("GeGLUBackwardSetBF16", "geglu_backward_set_bf16", dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up, n)
}

// gatedBackwardSetBF16 launches a gated unit's _set_bf16 backward kernel:
// gatedBackwardSet's outputs and the bf16 copies of dgate and dup; with
// dgate and dup both nil, the copies (and act) only; with actBF, act's
// copy too (act may then be nil); with doutBF (dout nil), dout read as
// bfloat16.
func (o *Ops) gatedBackwardSetBF16(op, kernel string, dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up *Buffer, n int) error {
	c := check{op: op}
	c.sizes("n", n)
	c.buf(o.d, "dgateBF", dgateBF, bf16Len(n))
	c.buf(o.d, "dupBF", dupBF, bf16Len(n))
	if actBF != nil {
		c.buf(o.d, "actBF", actBF, bf16Len(n))
	}
	if (dout == nil) == (doutBF == nil) {
		c.fail("want exactly one of dout and doutBF (given: %v, %v)", dout != nil, doutBF != nil)
	} else if doutBF != nil {
		c.buf(o.d, "doutBF", doutBF, bf16Len(n))
	}
	if c.err != nil {
		return c.err
	}
	if err := o.gatedSetCheck(op, dgate, dup, act, dout, gate, up, n, true); err != nil {
		return err
	}
	return o.run(op, planFlat(kernel, n, dgate, dup, act, actBF, dgateBF, dupBF, dout, doutBF, gate, up, n))
}

// gatedBackwardSet launches a gated unit's _set backward kernel: dgate,
// dup and (unless nil) act written over n values, one thread a value.
func (o *Ops) gatedBackwardSet(op, kernel string, dgate, dup, act, dout, gate, up *Buffer, n int) error {
	if err := o.gatedSetCheck(op, dgate, dup, act, dout, gate, up, n, false); err != nil {
		return err
	}
	return o.run(op, planFlat(kernel, n, dgate, dup, act, dout, gate, up, n))
}

// gatedSetCheck is a gated _set backward's size and buffer check; with
// optionalGrads (the _set_bf16 kernels) dgate and dup may both be nil,
// and so may dout (given as bfloat16 instead; gatedBackwardSetBF16
// checks that).
func (o *Ops) gatedSetCheck(op string, dgate, dup, act, dout, gate, up *Buffer, n int, optionalGrads bool) error {
	c := check{op: op}
	c.sizes("n", n)
	if !optionalGrads || dgate != nil || dup != nil {
		c.buf(o.d, "dgate", dgate, n)
		c.buf(o.d, "dup", dup, n)
	}
	if act != nil {
		c.buf(o.d, "act", act, n)
	}
	if dout != nil || !optionalGrads {
		c.buf(o.d, "dout", dout, n)
	}
	c.buf(o.d, "gate", gate, n)
	c.buf(o.d, "up", up, n)
	return c.err
}

// gatedForward launches a gated unit's forward kernel (SwiGLU, GeGLU):
// out = act(gate)·up over n values, one thread a value.
func (o *Ops) gatedForward(op, kernel string, out, gate, up *Buffer, n int) error {
	c := check{op: op}
	c.sizes("n", n)
	c.buf(o.d, "out", out, n)
	c.buf(o.d, "gate", gate, n)
	c.buf(o.d, "up", up, n)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planFlat(kernel, n, out, gate, up, n))
}

// gatedBackward launches a gated unit's backward kernel, which accumulates
// dgate and dup over n values.
func (o *Ops) gatedBackward(op, kernel string, dgate, dup, dout, gate, up *Buffer, n int) error {
	c := check{op: op}
	c.sizes("n", n)
	c.buf(o.d, "dgate", dgate, n)
	c.buf(o.d, "dup", dup, n)
	c.buf(o.d, "dout", dout, n)
	c.buf(o.d, "gate", gate, n)
	c.buf(o.d, "up", up, n)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planFlat(kernel, n, dgate, dup, dout, gate, up, n))
}

// planRows: one block per row of C values.
func planRows(kernel string, N, C int, args ...any) []step {
	if N == 0 || C == 0 {
		return nil
	}
	return []step{{Kernel: kernel, Grid: Dim3{N, 1, 1}, Block: Dim3{rowThreads(C), 1, 1}, Args: args}}
}

func (o *Ops) embeddingCheck(op string, out, ids, table *Buffer, tableLen, N, C, V int) error {
	c := check{op: op}
	c.sizes("N, C", N, C)
	c.sizes("V, C", V, C)
	c.buf(o.d, "out", out, N*C)
	c.buf(o.d, "ids", ids, N)
	c.buf(o.d, "table", table, tableLen)
	return c.err
}

// EmbeddingForward is kernels.Backend.EmbeddingForward on device buffers:
// out [N,C] gathers the rows ids [N] (int32, UploadInt32) of table [V,C].
// The ids are not checked on the host: a row with an id outside [0, V)
// comes out NaN.
func (o *Ops) EmbeddingForward(out, ids, table *Buffer, N, C, V int) error {
	if err := o.embeddingCheck("EmbeddingForward", out, ids, table, V*C, N, C, V); err != nil {
		return err
	}
	return o.run("EmbeddingForward", planRows("embedding_forward", N, C, out, ids, table, C, V))
}

// EmbeddingForwardBF16 is EmbeddingForward from a bfloat16 table [V,C]
// (UploadBF16: (V·C+1)/2 elements).
func (o *Ops) EmbeddingForwardBF16(out, ids, table *Buffer, N, C, V int) error {
	if err := o.embeddingCheck("EmbeddingForwardBF16", out, ids, table, (V*C+1)/2, N, C, V); err != nil {
		return err
	}
	return o.run("EmbeddingForwardBF16", planRows("embedding_forward_bf16", N, C, out, ids, table, C, V))
}

// EmbeddingBackward is kernels.Backend.EmbeddingBackward on device
// buffers: dtable [V,C] += dout [N,C] scattered to the rows ids [N],
// deterministically (planEmbeddingBackward: no atomics, each table
// element's sum in kernels/ref's order). Rows with an id outside [0, V)
// add nothing. Its work array (2N ints) is Ops' scratch.
func (o *Ops) EmbeddingBackward(dtable, dout, ids *Buffer, N, C, V int) error {
	c := check{op: "EmbeddingBackward"}
	c.sizes("N, C", N, C)
	c.sizes("V, C", V, C)
	c.buf(o.d, "dtable", dtable, V*C)
	c.buf(o.d, "dout", dout, N*C)
	c.buf(o.d, "ids", ids, N)
	if c.err != nil {
		return c.err
	}
	if N == 0 || C == 0 {
		return nil
	}
	l := o.lockScratch()
	defer l.unlock()
	work, err := l.get(c.op, "embedding.sort", 2*N)
	if err != nil {
		return err
	}
	return o.run(c.op, planEmbeddingBackward(dtable, dout, ids, work, N, C, V))
}

// embSortThreads is embedding.cu's EMB_SORT_THREADS.
const embSortThreads = 128

// planEmbeddingBackward: embedding_sort sorts the (id, n) keys into work
// (2N ints: the order, then the sorted ids), grid ⌈N/128⌉ of 128 threads;
// embedding_backward sums each id's run of rows into its table row, grid
// N × ⌈C/threads⌉ (threads = rowThreads(C)), one block per sorted position
// and column chunk (embedding.cu).
func planEmbeddingBackward(dtable, dout, ids, work any, N, C, V int) []step {
	if N == 0 || C == 0 {
		return nil
	}
	threads := rowThreads(C)
	return []step{
		{Kernel: "embedding_sort", Grid: Dim3{(N + embSortThreads - 1) / embSortThreads, 1, 1}, Block: Dim3{embSortThreads, 1, 1}, Args: []any{work, ids, N}},
		{Kernel: "embedding_backward", Grid: Dim3{N, (C + threads - 1) / threads, 1}, Block: Dim3{threads, 1, 1}, Args: []any{dtable, dout, work, N, C, V}},
	}
}

// planAdamW: one thread per parameter; the step's constants formed here in
// float64 (as kernels/ref forms them) and rounded once.
func planAdamW(param, grad, m, v any, n, step int, h kernels.AdamWParams) []step {
	lr, b1, b2 := float64(h.LR), float64(h.Beta1), float64(h.Beta2)
	bc1 := 1 - math.Pow(b1, float64(step))
	bc2 := 1 - math.Pow(b2, float64(step))
	return planFlat("adamw", n, param, grad, m, v, n,
		float32(1-lr*float64(h.WeightDecay)), h.Beta1, float32(1-b1), h.Beta2, float32(1-b2),
		float32(lr/bc1), float32(1/math.Sqrt(bc2)), h.Eps)
}

// AdamW is kernels.Backend.AdamW on device buffers: one step on n
// parameters; step is the 1-based step number after this update.
func (o *Ops) AdamW(param, grad, m, v *Buffer, n, step int, h kernels.AdamWParams) error {
	c := check{op: "AdamW"}
	c.sizes("n", n)
	if step < 1 {
		c.fail("step %d: want ≥ 1", step)
	}
	c.buf(o.d, "param", param, n)
	c.buf(o.d, "grad", grad, n)
	c.buf(o.d, "m", m, n)
	c.buf(o.d, "v", v, n)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planAdamW(param, grad, m, v, n, step, h))
}

// Add is kernels.Backend.Add on device buffers: out = a + b over n values
// (out may be a or b).
func (o *Ops) Add(out, a, b *Buffer, n int) error {
	c := check{op: "Add"}
	c.sizes("n", n)
	c.buf(o.d, "out", out, n)
	c.buf(o.d, "a", a, n)
	c.buf(o.d, "b", b, n)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planFlat("add", n, out, a, b, n))
}

// Scale is kernels.Backend.Scale on device buffers: out = s·a over n
// values (out may be a).
func (o *Ops) Scale(out, a *Buffer, s float32, n int) error {
	return o.scalarOp("Scale", "scale", out, a, s, n)
}

// AXPY is kernels.Backend.AXPY on device buffers: out += s·a over n
// values.
func (o *Ops) AXPY(out, a *Buffer, s float32, n int) error {
	return o.scalarOp("AXPY", "axpy", out, a, s, n)
}

// scalarOp launches an elementwise kernel of one buffer and a scalar
// (scale, axpy, add_scalar): out and a hold n values, one thread a value.
func (o *Ops) scalarOp(op, kernel string, out, a *Buffer, s float32, n int) error {
	c := check{op: op}
	c.sizes("n", n)
	c.buf(o.d, "out", out, n)
	c.buf(o.d, "a", a, n)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planFlat(kernel, n, out, a, s, n))
}

// softmaxCheck checks the sizes and buffers of a softmax-family op: rows
// of V ≥ 1 values.
func (o *Ops) softmaxCheck(op string, N, V int, bufs ...any) error {
	c := check{op: op}
	c.sizes("N, V", N, V)
	if V < 1 {
		c.fail("V = %d: want at least 1", V)
	}
	for i := 0; i < len(bufs); i += 3 {
		c.buf(o.d, bufs[i].(string), bufs[i+1].(*Buffer), bufs[i+2].(int))
	}
	return c.err
}

// LogSoftmaxForward is kernels.Backend.LogSoftmaxForward on device
// buffers: out [N,V] = inp [N,V] − the logsumexp of its row.
func (o *Ops) LogSoftmaxForward(out, inp *Buffer, N, V int) error {
	if err := o.softmaxCheck("LogSoftmaxForward", N, V, "out", out, N*V, "inp", inp, N*V); err != nil {
		return err
	}
	return o.run("LogSoftmaxForward", planRows("logsoftmax_forward", N, V, out, inp, V))
}

// LogSoftmaxBackward is kernels.Backend.LogSoftmaxBackward on device
// buffers: dinp [N,V] += dout − exp(out)·Σ_row dout.
func (o *Ops) LogSoftmaxBackward(dinp, dout, out *Buffer, N, V int) error {
	if err := o.softmaxCheck("LogSoftmaxBackward", N, V, "dinp", dinp, N*V, "dout", dout, N*V, "out", out, N*V); err != nil {
		return err
	}
	return o.run("LogSoftmaxBackward", planRows("logsoftmax_backward", N, V, dinp, dout, out, V))
}

// EntropyForward is kernels.Backend.EntropyForward on device buffers: ent
// [N] = the entropy of softmax(inp [N,V]) per row.
func (o *Ops) EntropyForward(ent, inp *Buffer, N, V int) error {
	if err := o.softmaxCheck("EntropyForward", N, V, "ent", ent, N, "inp", inp, N*V); err != nil {
		return err
	}
	return o.run("EntropyForward", planRows("entropy_forward", N, V, ent, inp, V))
}

// EntropyBackward is kernels.Backend.EntropyBackward on device buffers:
// dinp [N,V] += −dent[n]·p·(log p + ent[n]), recomputing p and ent.
func (o *Ops) EntropyBackward(dinp, dent, inp *Buffer, N, V int) error {
	if err := o.softmaxCheck("EntropyBackward", N, V, "dinp", dinp, N*V, "dent", dent, N, "inp", inp, N*V); err != nil {
		return err
	}
	return o.run("EntropyBackward", planRows("entropy_backward", N, V, dinp, dent, inp, V))
}

// DefaultLogprobChunk is the vocabulary block the device takes when the
// caller leaves it to the backend (chunk ≤ 0): four times the CPU's
// kernels.DefaultLogprobChunk. Every block passes once more over the rows'
// hidden states, state and expect, which at 4096 were a third of the 7B
// step's logprob traffic; the block's logits [N, chunk] (512 MB at 8192
// rows, and their bfloat16 copy) live on the device either way.
const DefaultLogprobChunk = 4 * kernels.DefaultLogprobChunk

// logprobChunk is the vocabulary block of LogprobForward: chunk, or
// DefaultLogprobChunk when chunk ≤ 0, at most V.
func logprobChunk(chunk, V int) int {
	if chunk <= 0 {
		chunk = DefaultLogprobChunk
	}
	return max(1, min(chunk, V))
}

// planLogprob: per chunk of vocabulary columns, the GEMM of its logits
// into z and logprob_chunk (one block per row) folding them into state;
// with expect (withExpect), then expect's rows rescaled (expect_scale) and
// the chunk's e^(z−M)·weight rows added (a GEMM); at the end
// logprob_finish, and logprob_expect. view(b, off, n) is n elements of b
// from off on. z holds N·logprobChunk(chunk, V) values, state 5·N.
func planLogprob(view func(b any, off, n int) any, logprob, entropy, lse, expect, hidden, weight, targets, z, state any, withExpect bool, N, C, V, chunk int) []step {
	if N == 0 {
		return nil
	}
	keep := 0
	if withExpect {
		keep = 1
	}
	cl := logprobChunk(chunk, V)
	var s []step
	for j0 := 0; j0 < V; j0 += cl {
		l := min(cl, V-j0)
		zc, wc := view(z, 0, N*l), view(weight, j0*C, l*C)
		s = append(s,
			step{Gemm: &gemmStep{C: zc, A: hidden, B: wc, M: N, N: l, K: C, TransB: true}},
			step{Kernel: "logprob_chunk", Grid: Dim3{N, 1, 1}, Block: Dim3{rowThreads(l), 1, 1}, Args: []any{state, zc, targets, l, j0, keep}})
		if withExpect {
			var beta float32
			if j0 > 0 {
				beta = 1
				s = append(s, planRows("expect_scale", N, C, expect, state, C)...)
			}
			s = append(s, step{Gemm: &gemmStep{C: expect, A: zc, B: wc, M: N, N: C, K: l, Beta: beta}})
		}
	}
	s = append(s, planFlat("logprob_finish", N, logprob, entropy, lse, state, targets, N)...)
	if withExpect {
		s = append(s, planRows("logprob_expect", N, C, expect, state, C)...)
	}
	return s
}

// LogprobForward is kernels.Backend.LogprobForward on device buffers:
// logprob, entropy, lse [N] of the logits hidden [N,C] · weight [V,C]ᵀ,
// computed chunk vocabulary columns at a time (≤ 0: the default) by a
// cuBLAS GEMM into a [N, chunk] scratch buffer and an online logsumexp;
// expect [N,C] (nil: skipped) gets Σ_j softmax(z)_j·weight[j], one more
// GEMM a chunk. targets [N] int32 in [−1, V) (not checked on the host;
// −1: logprob 0). Its scratch is Ops' own, kept between calls (scratch.go).
func (o *Ops) LogprobForward(logprob, entropy, lse, expect, hidden, weight, targets *Buffer, N, C, V, chunk int) error {
	c := check{op: "LogprobForward"}
	c.sizes("N, C", N, C)
	c.sizes("V, C", V, C)
	if V < 1 || C < 1 {
		c.fail("V = %d, C = %d: want at least 1", V, C)
	}
	c.buf(o.d, "logprob", logprob, N)
	c.buf(o.d, "entropy", entropy, N)
	c.buf(o.d, "lse", lse, N)
	if expect != nil {
		c.buf(o.d, "expect", expect, N*C)
	}
	c.buf(o.d, "hidden", hidden, N*C)
	c.buf(o.d, "weight", weight, V*C)
	c.buf(o.d, "targets", targets, N)
	if c.err != nil || N == 0 {
		return c.err
	}
	c.sizes("N, chunk", N, logprobChunk(chunk, V))
	if c.err != nil {
		return c.err
	}
	sc := o.lockScratch()
	defer sc.unlock()
	z, err := sc.get(c.op, "logprob.z", N*logprobChunk(chunk, V))
	if err != nil {
		return err
	}
	state, err := sc.get(c.op, "logprob.state", 5*N)
	if err != nil {
		return err
	}
	view := func(b any, off, n int) any { return b.(*Buffer).view(off, n) }
	return o.run(c.op, planLogprob(view, logprob, entropy, lse, expect, hidden, weight, targets, z, state, expect != nil, N, C, V, chunk))
}

// LogprobBackwardExpect is kernels.Backend.LogprobBackwardExpect on device
// buffers: dhidden [N,C] += dlogprob[n]·(weight[t] − expect[n]) for the
// rows whose target t = targets[n] is ≥ 0 (t ≥ V, which the host cannot
// check on the device, adds nothing). dlogprob [N], expect [N,C] (from
// LogprobForward), weight [V,C].
func (o *Ops) LogprobBackwardExpect(dhidden, dlogprob, expect, weight, targets *Buffer, N, C, V int) error {
	c := check{op: "LogprobBackwardExpect"}
	c.sizes("N, C", N, C)
	c.sizes("V, C", V, C)
	c.buf(o.d, "dhidden", dhidden, N*C)
	c.buf(o.d, "dlogprob", dlogprob, N)
	c.buf(o.d, "expect", expect, N*C)
	c.buf(o.d, "weight", weight, V*C)
	c.buf(o.d, "targets", targets, N)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planRows("logprob_backward_expect", N, C, dhidden, dlogprob, expect, weight, targets, C, V))
}
