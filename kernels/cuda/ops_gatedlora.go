package cuda

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// GatedLoRAMaxRank is the largest LoRA rank Backend fuses into the gated
// unit (kernels.GatedLoRAForwarder's FusesGatedLoRA): gated_lora.cu takes
// 16 ranks a pass over gate and up, so rank 32 reads them twice, still
// less than the unfused gated unit and product move (1.5 reads of the
// [N, I] pair and act's float32 write), and more passes would read more.
const GatedLoRAMaxRank = 32

// gatedLoRARows and gatedLoRAThreads are gated_lora.cu's GL_ROWS and
// GL_THREADS: a block's rows and threads.
const gatedLoRARows, gatedLoRAThreads = 32, 256

// gatedLoRAKernel names gated_lora.cu's kernel of direction dir
// ("forward", "backward") for the activation, its gate and up bfloat16
// where bf16In.
func gatedLoRAKernel(dir string, gelu, bf16In bool) string {
	k := "gated_lora_" + dir + "_swiglu"
	if gelu {
		k = "gated_lora_" + dir + "_geglu"
	}
	if bf16In {
		k += "_bf16in"
	}
	return k
}

// planGatedLoRAForwardOf is GatedLoRAForward's launch (the _bf16in
// kernel where bf16In): one block of gatedLoRAThreads a gatedLoRARows
// rows.
func planGatedLoRAForwardOf(bf16In bool, actBF, u, gate, up, a any, N, I, R int, scale float32, gelu bool) []step {
	if N == 0 {
		return nil
	}
	return []step{{Kernel: gatedLoRAKernel("forward", gelu, bf16In), Grid: Dim3{(N + gatedLoRARows - 1) / gatedLoRARows, 1, 1}, Block: Dim3{gatedLoRAThreads, 1, 1},
		Args: []any{actBF, u, gate, up, a, N, I, R, scale}}}
}

// GatedLoRAForward is kernels.GatedLoRAForwarder's
// GatedLoRAForwardRounded on device buffers (gated_lora.cu): actBF [N, I]
// (bfloat16 pairs, bf16Len(N·I) elements) = the gated unit's output
// rounded to bfloat16, the bits of SwiGLUForwardBF16 (GeGLUForwardBF16
// when gelu), and u [N, R] = scale·(act·aᵀ) in exact float32, act never
// stored (with I 0, u is zeros).
func (o *Ops) GatedLoRAForward(actBF, u, gate, up, a *Buffer, N, I, R int, scale float32, gelu bool) error {
	return o.gatedLoRAForward("GatedLoRAForward", false, actBF, u, gate, up, a, N, I, R, scale, gelu)
}

// gatedLoRAForward is GatedLoRAForward as op, gate and up bfloat16 where
// bf16In.
func (o *Ops) gatedLoRAForward(op string, bf16In bool, actBF, u, gate, up, a *Buffer, N, I, R int, scale float32, gelu bool) error {
	c := check{op: op}
	c.sizes("N, I, R", N, I, R)
	if R < 1 {
		c.fail("rank %d (want at least 1)", R)
	}
	c.buf(o.d, "actBF", actBF, bf16Len(N*I))
	c.buf(o.d, "u", u, N*R)
	c.buf(o.d, "gate", gate, gateUpLen(N*I, bf16In))
	c.buf(o.d, "up", up, gateUpLen(N*I, bf16In))
	c.buf(o.d, "A", a, R*I)
	if c.err != nil {
		return c.err
	}
	return o.run(op, planGatedLoRAForwardOf(bf16In, actBF, u, gate, up, a, N, I, R, scale, gelu))
}

// gateUpLen is the number of buffer elements n gate or up values take:
// bfloat16 pairs where bf16In.
func gateUpLen(n int, bf16In bool) int {
	if bf16In {
		return bf16Len(n)
	}
	return n
}

var _ kernels.GatedLoRAForwarder = (*Backend)(nil)

// FusesGatedLoRA implements kernels.GatedLoRAForwarder: in the bf16
// precision (where the down projection's product takes act's rounding,
// kernels.InputRounder) for ranks 1 to GatedLoRAMaxRank.
func (b *Backend) FusesGatedLoRA(R int) bool {
	return b.RoundsLinearInput() && R >= 1 && R <= GatedLoRAMaxRank
}

// GatedLoRAForwardRounded implements kernels.GatedLoRAForwarder
// (Ops.GatedLoRAForward) after kernels.NeedGatedLoRAForward's checks. u's
// sums run in gated_lora.cu's order (its header), not cuBLAS's, so its
// last bits may differ from LinearForward then Scale; act_bf's are
// SwiGLUForwardRounded's.
func (b *Backend) GatedLoRAForwardRounded(actBF []uint16, u []float32, gate, up, a []float32, N, I, R int, scale float32, gelu bool) {
	gatedLoRAForward(b, "GatedLoRAForwardRounded", b.FusesGatedLoRA(R), "FusesGatedLoRA", actBF, u, gate, up, a, N, I, R, scale, gelu)
}

// gatedLoRAForward is GatedLoRAForwardRounded (gate and up float32) or
// GateUpRounder's GatedLoRAForwardBF16 (bfloat16) as op: the checks, a
// panic unless fuses (the rank's condition, named by cond), then the
// kernel on device buffers.
func gatedLoRAForward[In float32 | uint16](b *Backend, op string, fuses bool, cond string, actBF []uint16, u []float32, gate, up []In, a []float32, N, I, R int, scale float32, gelu bool) {
	kernels.NeedGatedLoRAForward(op, actBF, u, gate, up, a, N, I, R)
	if !fuses {
		panic(fmt.Sprintf("cuda.%s: rank %d in precision %s (%s is false)", op, R, b.Precision(), cond))
	}
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return opCost{2 * int64(N) * int64(I) * int64(R), dims("", N, I) + dims(" r", R)} }, func() error {
		gb, ub, bf16In := gateUpBuffers(b, op, gate, up)
		return b.ops.gatedLoRAForward(op, bf16In, b.bf16(op, "actBF", actBF), b.f32(op, "u", u), gb, ub, b.f32(op, "A", a), N, I, R, scale, gelu)
	})
}

// gateUpBuffers is the device buffers of gate and up, and whether they
// hold bfloat16 values.
func gateUpBuffers[In float32 | uint16](b *Backend, op string, gate, up []In) (gb, ub *Buffer, bf16In bool) {
	switch g := any(gate).(type) {
	case []uint16:
		return b.bf16(op, "gateBF", g), b.bf16(op, "upBF", any(up).([]uint16)), true
	default:
		return b.f32(op, "gate", any(gate).([]float32)), b.f32(op, "up", any(up).([]float32)), false
	}
}

// GatedLoRABackwardMaxRank is the largest LoRA rank Backend fuses into the
// gated backward (kernels.GatedLoRABackwarder): gated_lora.cu's GB_RT,
// the ranks a block sums for its columns in one walk over the rows.
const GatedLoRABackwardMaxRank = 16

// gatedLoRACols and gatedLoRABackThreads are gated_lora.cu's GB_COLS and
// GB_THREADS: a backward block's columns and threads.
const gatedLoRACols, gatedLoRABackThreads = 64, 256

// planGatedLoRABackwardOf is GatedLoRABackward's launch (the _bf16in
// kernel where bf16In): one block of gatedLoRABackThreads a gatedLoRACols
// columns.
func planGatedLoRABackwardOf(bf16In bool, dgateBF, dupBF, da, g, dact, dactBF any, gate, up any, N, I, R int, gelu bool) []step {
	if N == 0 || I == 0 {
		return nil
	}
	return []step{{Kernel: gatedLoRAKernel("backward", gelu, bf16In), Grid: Dim3{(I + gatedLoRACols - 1) / gatedLoRACols, 1, 1}, Block: Dim3{gatedLoRABackThreads, 1, 1},
		Args: []any{dgateBF, dupBF, da, g, dact, dactBF, gate, up, N, I, R}}}
}

// GatedLoRABackward is kernels.GatedLoRABackwarder's
// GatedLoRABackwardRounded on device buffers (gated_lora.cu): dgateBF and
// dupBF (bfloat16 pairs, bf16Len(N·I) elements) the bits of
// SwiGLUBackwardSetBF16's (GeGLU's when gelu) with dgate and dup nil, from
// dact [N, I] float32 or dactBF (bfloat16; exactly one not nil), and da
// [R, I] += round(g)ᵀ·round(act), float32 sums, for ranks 1 to
// GatedLoRABackwardMaxRank; act is never stored. N or I 0 leaves
// everything as it is (an empty sum adds 0).
func (o *Ops) GatedLoRABackward(dgateBF, dupBF, da, g, dact, dactBF, gate, up *Buffer, N, I, R int, gelu bool) error {
	return o.gatedLoRABackward("GatedLoRABackward", false, dgateBF, dupBF, da, g, dact, dactBF, gate, up, N, I, R, gelu)
}

// gatedLoRABackward is GatedLoRABackward as op, gate and up bfloat16
// where bf16In.
func (o *Ops) gatedLoRABackward(op string, bf16In bool, dgateBF, dupBF, da, g, dact, dactBF, gate, up *Buffer, N, I, R int, gelu bool) error {
	c := check{op: op}
	c.sizes("N, I, R", N, I, R)
	if R < 1 || R > GatedLoRABackwardMaxRank {
		c.fail("rank %d (want 1 to %d)", R, GatedLoRABackwardMaxRank)
	}
	if (dact == nil) == (dactBF == nil) {
		c.fail("want exactly one of dact and dactBF (given: %v, %v)", dact != nil, dactBF != nil)
	}
	c.buf(o.d, "dgateBF", dgateBF, bf16Len(N*I))
	c.buf(o.d, "dupBF", dupBF, bf16Len(N*I))
	c.buf(o.d, "DA", da, R*I)
	c.buf(o.d, "g", g, N*R)
	if dact != nil {
		c.buf(o.d, "dact", dact, N*I)
	} else {
		c.buf(o.d, "dactBF", dactBF, bf16Len(N*I))
	}
	c.buf(o.d, "gate", gate, gateUpLen(N*I, bf16In))
	c.buf(o.d, "up", up, gateUpLen(N*I, bf16In))
	if c.err != nil {
		return c.err
	}
	return o.run(op, planGatedLoRABackwardOf(bf16In, dgateBF, dupBF, da, g, dact, dactBF, gate, up, N, I, R, gelu))
}

var _ kernels.GatedLoRABackwarder = (*Backend)(nil)

// FusesGatedLoRABackward implements kernels.GatedLoRABackwarder: in the
// bf16 precision (where the DA product takes act's and g's roundings,
// kernels.LoRAInputRounder) for ranks 1 to GatedLoRABackwardMaxRank.
func (b *Backend) FusesGatedLoRABackward(R int) bool {
	return b.RoundsLoRAInput() && R >= 1 && R <= GatedLoRABackwardMaxRank
}

// GatedLoRABackwardRounded implements kernels.GatedLoRABackwarder
// (Ops.GatedLoRABackward) after kernels.NeedGatedLoRABackward's checks.
// DA's sums run in gated_lora.cu's order (row after row), not the bf16
// GEMM's, so its last bits may differ from MatmulBF16's; the roundings of
// dgate and dup are SwiGLUBackwardSetRounded's.
func (b *Backend) GatedLoRABackwardRounded(dgateBF, dupBF []uint16, da, g, dact []float32, dactBF []uint16, gate, up []float32, N, I, R int, gelu bool) {
	gatedLoRABackward(b, "GatedLoRABackwardRounded", b.FusesGatedLoRABackward(R), "FusesGatedLoRABackward", dgateBF, dupBF, da, g, dact, dactBF, gate, up, N, I, R, gelu)
}

// gatedLoRABackward is GatedLoRABackwardRounded (gate and up float32) or
// GateUpRounder's GatedLoRABackwardBF16 (bfloat16) as op, as
// gatedLoRAForward is for the forward.
func gatedLoRABackward[In float32 | uint16](b *Backend, op string, fuses bool, cond string, dgateBF, dupBF []uint16, da, g, dact []float32, dactBF []uint16, gate, up []In, N, I, R int, gelu bool) {
	kernels.NeedGatedLoRABackward(op, dgateBF, dupBF, da, g, dact, dactBF, gate, up, N, I, R)
	if !fuses {
		panic(fmt.Sprintf("cuda.%s: rank %d in precision %s (%s is false)", op, R, b.Precision(), cond))
	}
	if N == 0 || I == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return opCost{2 * int64(N) * int64(I) * int64(R), dims("", N, I) + dims(" r", R)} }, func() error {
		gb, ub, bf16In := gateUpBuffers(b, op, gate, up)
		return b.ops.gatedLoRABackward(op, bf16In, b.bf16(op, "dgateBF", dgateBF), b.bf16(op, "dupBF", dupBF), b.f32(op, "DA", da), b.f32(op, "g", g),
			b.f32(op, "dact", dact), b.bf16(op, "dactBF", dactBF), gb, ub, N, I, R, gelu)
	})
}

var _ kernels.GateUpRounder = (*Backend)(nil)

// HoldsGateUpBF16 implements kernels.GateUpRounder: where the gated unit
// and its backward fuse the down projection's LoRA products of rank R
// (FusesGatedLoRA, FusesGatedLoRABackward: the bf16 precision, ranks 1 to
// GatedLoRABackwardMaxRank), whose _bf16in kernels read gate and up as
// bfloat16.
func (b *Backend) HoldsGateUpBF16(R int) bool {
	return b.FusesGatedLoRA(R) && b.FusesGatedLoRABackward(R)
}

// GatedLoRAForwardBF16 implements kernels.GateUpRounder
// (gated_lora.cu's _bf16in kernel) after kernels.NeedGatedLoRAForward's checks:
// GatedLoRAForwardRounded's bits for gate and up widened.
func (b *Backend) GatedLoRAForwardBF16(actBF []uint16, u []float32, gateBF, upBF []uint16, a []float32, N, I, R int, scale float32, gelu bool) {
	gatedLoRAForward(b, "GatedLoRAForwardBF16", b.HoldsGateUpBF16(R), "HoldsGateUpBF16", actBF, u, gateBF, upBF, a, N, I, R, scale, gelu)
}

// GatedLoRABackwardBF16 implements kernels.GateUpRounder
// (gated_lora.cu's _bf16in kernel) after kernels.NeedGatedLoRABackward's
// checks: GatedLoRABackwardRounded's bits for gate and up widened.
func (b *Backend) GatedLoRABackwardBF16(dgateBF, dupBF []uint16, da, g, dact []float32, dactBF []uint16, gateBF, upBF []uint16, N, I, R int, gelu bool) {
	gatedLoRABackward(b, "GatedLoRABackwardBF16", b.HoldsGateUpBF16(R), "HoldsGateUpBF16", dgateBF, dupBF, da, g, dact, dactBF, gateBF, upBF, N, I, R, gelu)
}
