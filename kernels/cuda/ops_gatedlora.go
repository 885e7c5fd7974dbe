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

// planGatedLoRAForward is GatedLoRAForward's launch: one block of
// gatedLoRAThreads a gatedLoRARows rows.
func planGatedLoRAForward(actBF, u, gate, up, a any, N, I, R int, scale float32, gelu bool) []step {
	return planGatedLoRAForwardOf(false, actBF, u, gate, up, a, N, I, R, scale, gelu)
}

// planGatedLoRAForwardBF16 is GatedLoRAForwardBF16's launch: the
// _bf16in kernel, gate and up bfloat16, on planGatedLoRAForward's grid.
func planGatedLoRAForwardBF16(actBF, u, gateBF, upBF, a any, N, I, R int, scale float32, gelu bool) []step {
	return planGatedLoRAForwardOf(true, actBF, u, gateBF, upBF, a, N, I, R, scale, gelu)
}

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

// GatedLoRAForwardBF16 is kernels.GateUpRounder's GatedLoRAForwardBF16 on
// device buffers: GatedLoRAForward with gateBF and upBF bfloat16 pairs
// (bf16Len(N·I) elements), widened exactly: the bits GatedLoRAForward
// writes for the widened values.
func (o *Ops) GatedLoRAForwardBF16(actBF, u, gateBF, upBF, a *Buffer, N, I, R int, scale float32, gelu bool) error {
	return o.gatedLoRAForward("GatedLoRAForwardBF16", true, actBF, u, gateBF, upBF, a, N, I, R, scale, gelu)
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
	const op = "GatedLoRAForwardRounded"
	kernels.NeedGatedLoRAForward(op, actBF, u, gate, up, a, N, I, R)
	if !b.FusesGatedLoRA(R) {
		panic(fmt.Sprintf("cuda.%s: rank %d in precision %s (FusesGatedLoRA is false)", op, R, b.Precision()))
	}
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return opCost{2 * int64(N) * int64(I) * int64(R), dims("", N, I) + dims(" r", R)} }, func() error {
		return b.ops.GatedLoRAForward(b.bf16(op, "actBF", actBF), b.f32(op, "u", u), b.f32(op, "gate", gate), b.f32(op, "up", up), b.f32(op, "A", a),
			N, I, R, scale, gelu)
	})
}

// GatedLoRABackwardMaxRank is the largest LoRA rank Backend fuses into the
// gated backward (kernels.GatedLoRABackwarder): gated_lora.cu's GB_RT,
// the ranks a block sums for its columns in one walk over the rows.
const GatedLoRABackwardMaxRank = 16

// gatedLoRACols and gatedLoRABackThreads are gated_lora.cu's GB_COLS and
// GB_THREADS: a backward block's columns and threads.
const gatedLoRACols, gatedLoRABackThreads = 64, 256

// planGatedLoRABackward is GatedLoRABackward's launch: one block of
// gatedLoRABackThreads a gatedLoRACols columns.
func planGatedLoRABackward(dgateBF, dupBF, da, g, dact, dactBF any, gate, up any, N, I, R int, gelu bool) []step {
	return planGatedLoRABackwardOf(false, dgateBF, dupBF, da, g, dact, dactBF, gate, up, N, I, R, gelu)
}

// planGatedLoRABackwardBF16 is GatedLoRABackwardBF16's launch: the
// _bf16in kernel, gate and up bfloat16, on planGatedLoRABackward's grid.
func planGatedLoRABackwardBF16(dgateBF, dupBF, da, g, dact, dactBF any, gateBF, upBF any, N, I, R int, gelu bool) []step {
	return planGatedLoRABackwardOf(true, dgateBF, dupBF, da, g, dact, dactBF, gateBF, upBF, N, I, R, gelu)
}

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

// GatedLoRABackwardBF16 is kernels.GateUpRounder's GatedLoRABackwardBF16
// on device buffers: GatedLoRABackward with gateBF and upBF bfloat16
// pairs (bf16Len(N·I) elements), widened exactly: the bits
// GatedLoRABackward writes for the widened values.
func (o *Ops) GatedLoRABackwardBF16(dgateBF, dupBF, da, g, dact, dactBF, gateBF, upBF *Buffer, N, I, R int, gelu bool) error {
	return o.gatedLoRABackward("GatedLoRABackwardBF16", true, dgateBF, dupBF, da, g, dact, dactBF, gateBF, upBF, N, I, R, gelu)
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
	const op = "GatedLoRABackwardRounded"
	kernels.NeedGatedLoRABackward(op, dgateBF, dupBF, da, g, dact, dactBF, gate, up, N, I, R)
	if !b.FusesGatedLoRABackward(R) {
		panic(fmt.Sprintf("cuda.%s: rank %d in precision %s (FusesGatedLoRABackward is false)", op, R, b.Precision()))
	}
	if N == 0 || I == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return opCost{2 * int64(N) * int64(I) * int64(R), dims("", N, I) + dims(" r", R)} }, func() error {
		return b.ops.GatedLoRABackward(b.bf16(op, "dgateBF", dgateBF), b.bf16(op, "dupBF", dupBF), b.f32(op, "DA", da), b.f32(op, "g", g),
			b.f32(op, "dact", dact), b.bf16(op, "dactBF", dactBF), b.f32(op, "gate", gate), b.f32(op, "up", up), N, I, R, gelu)
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
// (Ops.GatedLoRAForwardBF16) after kernels.NeedGatedLoRAForward's checks:
// GatedLoRAForwardRounded's bits for gate and up widened.
func (b *Backend) GatedLoRAForwardBF16(actBF []uint16, u []float32, gateBF, upBF []uint16, a []float32, N, I, R int, scale float32, gelu bool) {
	const op = "GatedLoRAForwardBF16"
	kernels.NeedGatedLoRAForward(op, actBF, u, gateBF, upBF, a, N, I, R)
	if !b.HoldsGateUpBF16(R) {
		panic(fmt.Sprintf("cuda.%s: rank %d in precision %s (HoldsGateUpBF16 is false)", op, R, b.Precision()))
	}
	if N == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return opCost{2 * int64(N) * int64(I) * int64(R), dims("", N, I) + dims(" r", R)} }, func() error {
		return b.ops.GatedLoRAForwardBF16(b.bf16(op, "actBF", actBF), b.f32(op, "u", u), b.bf16(op, "gateBF", gateBF), b.bf16(op, "upBF", upBF),
			b.f32(op, "A", a), N, I, R, scale, gelu)
	})
}

// GatedLoRABackwardBF16 implements kernels.GateUpRounder
// (Ops.GatedLoRABackwardBF16) after kernels.NeedGatedLoRABackward's
// checks: GatedLoRABackwardRounded's bits for gate and up widened.
func (b *Backend) GatedLoRABackwardBF16(dgateBF, dupBF []uint16, da, g, dact []float32, dactBF []uint16, gateBF, upBF []uint16, N, I, R int, gelu bool) {
	const op = "GatedLoRABackwardBF16"
	kernels.NeedGatedLoRABackward(op, dgateBF, dupBF, da, g, dact, dactBF, gateBF, upBF, N, I, R)
	if !b.HoldsGateUpBF16(R) {
		panic(fmt.Sprintf("cuda.%s: rank %d in precision %s (HoldsGateUpBF16 is false)", op, R, b.Precision()))
	}
	if N == 0 || I == 0 {
		return
	}
	b.onDeviceCost(op, func() opCost { return opCost{2 * int64(N) * int64(I) * int64(R), dims("", N, I) + dims(" r", R)} }, func() error {
		return b.ops.GatedLoRABackwardBF16(b.bf16(op, "dgateBF", dgateBF), b.bf16(op, "dupBF", dupBF), b.f32(op, "DA", da), b.f32(op, "g", g),
			b.f32(op, "dact", dact), b.bf16(op, "dactBF", dactBF), b.bf16(op, "gateBF", gateBF), b.bf16(op, "upBF", upBF), N, I, R, gelu)
	})
}
