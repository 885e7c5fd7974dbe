package kernels

import "fmt"

// GatedLoRAForwarder is implemented by a backend that computes the MLP's
// gated unit together with the down projection's LoRA A product
// (kernels/cuda in PrecisionBF16). There the down projection's base
// product multiplies the gated unit's output act rounded to bfloat16
// (InputRounder), and act is written as float32 only for the LoRA
// product u = Scale·act·Aᵀ to read it back: on the 7B shape 0.62 GB
// written and 0.62 GB read a layer that the fused op does not move. Host
// backends do not implement it; the model then runs the gated unit, the
// LoRA product and Scale apart.
type GatedLoRAForwarder interface {
	// FusesGatedLoRA reports whether GatedLoRAForwardRounded may be used
	// for a LoRA update of rank R (false: it must not be; a backend may
	// fuse only small ranks).
	FusesGatedLoRA(R int) bool
	// GatedLoRAForwardRounded writes, for gate and up [N, I] and a [R, I]:
	//
	//	actBF [N, I] = act rounded to bfloat16, act = silu(gate)·up
	//	               (GeGLU's gelu(gate)·up when gelu): the bits
	//	               InputRounder's SwiGLUForwardRounded (GeGLUForwardRounded)
	//	               writes into its outBF
	//	u     [N, R] = scale·(act·aᵀ), act in float32, an exact float32
	//	               product as LinearForward followed by Scale computes
	//	               it (the backend says in what order its sums run)
	//
	// act itself is not written anywhere. The outputs must not overlap
	// each other or the inputs.
	GatedLoRAForwardRounded(actBF []uint16, u []float32, gate, up, a []float32, N, I, R int, scale float32, gelu bool)
}

// NeedGatedLoRAForward panics unless GatedLoRAForwardRounded's (or
// GateUpRounder's GatedLoRAForwardBF16's) sizes are not negative, R is
// at least 1 and every buffer holds its shape.
func NeedGatedLoRAForward[In float32 | uint16](op string, actBF []uint16, u []float32, gate, up []In, a []float32, N, I, R int) {
	NeedSizes(op, N, I, R)
	if R < 1 {
		panic(fmt.Sprintf("kernels.%s: rank %d (want at least 1)", op, R))
	}
	Need(op, "actBF", len(actBF), N*I)
	Need(op, "u", len(u), N*R)
	Need(op, "gate", len(gate), N*I)
	Need(op, "up", len(up), N*I)
	Need(op, "A", len(a), R*I)
}

// GatedLoRABackwarder is implemented by a backend that computes the MLP's
// gated backward together with the down projection's LoRA DA product
// (kernels/cuda in PrecisionBF16). There the gated backward writes act's
// bfloat16 rounding (LoRAInputRounder) only for the DA product
// DA += gᵀ·act on bfloat16 operands to read it back: on the 7B shape
// 0.62 GB a layer that the fused op does not move. Host backends do not
// implement it.
type GatedLoRABackwarder interface {
	// FusesGatedLoRABackward reports whether GatedLoRABackwardRounded may
	// be used for a LoRA update of rank R (false: it must not be).
	FusesGatedLoRABackward(R int) bool
	// GatedLoRABackwardRounded writes dgateBF and dupBF [N, I], the
	// bits DoutRounder's SwiGLUBackwardSetRounded (GeGLUBackwardSetRounded
	// when gelu) writes there with dgate and dup nil, from dact (or
	// dactBF, as that op takes it; exactly one is not nil), and adds to
	// da [R, I] the product gᵀ·act for g [N, R], act = a(gate)·up: on
	// bfloat16 operands (g and act rounded as ToBF16 rounds) with float32
	// sums, LoRAInputRounder.MatmulBF16's product at beta 1 (the backend
	// says in what order its sums run). act is not written anywhere. The
	// outputs must not overlap each other or the inputs.
	GatedLoRABackwardRounded(dgateBF, dupBF []uint16, da, g, dact []float32, dactBF []uint16, gate, up []float32, N, I, R int, gelu bool)
}

// NeedGatedLoRABackward panics unless GatedLoRABackwardRounded's (or
// GateUpRounder's GatedLoRABackwardBF16's) sizes are not negative, R is
// at least 1, exactly one of dact and dactBF is given and every buffer
// holds its shape.
func NeedGatedLoRABackward[In float32 | uint16](op string, dgateBF, dupBF []uint16, da, g, dact []float32, dactBF []uint16, gate, up []In, N, I, R int) {
	NeedSizes(op, N, I, R)
	if R < 1 {
		panic(fmt.Sprintf("kernels.%s: rank %d (want at least 1)", op, R))
	}
	if (dact == nil) == (dactBF == nil) {
		panic(fmt.Sprintf("kernels.%s: want exactly one of dact and dactBF (given: %v, %v)", op, dact != nil, dactBF != nil))
	}
	Need(op, "dgateBF", len(dgateBF), N*I)
	Need(op, "dupBF", len(dupBF), N*I)
	Need(op, "DA", len(da), R*I)
	Need(op, "g", len(g), N*R)
	Need(op, "dact", len(dact)+len(dactBF), N*I)
	Need(op, "gate", len(gate), N*I)
	Need(op, "up", len(up), N*I)
}

// GateUpRounder is implemented by a backend on which the MLP may hold the
// gate and up projections' outputs as bfloat16 only (kernels/cuda in
// PrecisionBF16): their products store the float32 sums rounded, and the
// fused gated unit and gated backward (GatedLoRAForwarder,
// GatedLoRABackwarder) read the roundings, widened exactly. On the 7B shape
// that is 1.24 GB written and 1.86 GB read a layer less, and half the
// memory of the two [N, I] activations every layer keeps for its backward
// (17 GB a step at 8×1024 tokens). It moves bits: gate and up are rounded
// once more, as a bfloat16 model's linear layers round their outputs
// (PyTorch's bf16 Linear), and the LoRA term of each is rounded before the
// base product adds onto it. Host backends do not implement it.
type GateUpRounder interface {
	// HoldsGateUpBF16 reports whether the ops below may be used where the
	// down projection's LoRA update has rank R (false: they must not be;
	// the gated kernels fuse only small ranks).
	HoldsGateUpBF16(R int) bool
	// LinearForwardBF16RoundedTo is InputRounder's LinearForwardBF16Rounded
	// without biases storing its products rounded: outBFs[i] [N, OCs[i]] =
	// the bfloat16 rounding of inp·weights[i]ᵀ (plus outBFs[i]'s values,
	// widened, where add[i]; add nil: none), float32 sums, for inp [N, C]
	// bfloat16.
	LinearForwardBF16RoundedTo(outBFs [][]uint16, inp []uint16, weights [][]uint16, N, C int, OCs []int, add []bool)
	// LoRAForwardManyTo is LoRAManyForwarder's LoRAForwardMany storing the
	// rank-r products rounded: us[i] as LoRAForwardMany writes them, and
	// outBFs[i] [N, Outs[i]] = the bfloat16 rounding of
	// round(us[i])·round(bs[i])ᵀ, float32 sums (LoRAInputRounder's
	// MatmulBF16 storing its result rounded).
	LoRAForwardManyTo(outBFs [][]uint16, us [][]float32, x []float32, as, bs [][]float32, N, In, R int, Outs []int, scale float32)
	// GatedLoRAForwardBF16 is GatedLoRAForwardRounded with gate and up
	// given as bfloat16: the bits it writes for their widened values.
	GatedLoRAForwardBF16(actBF []uint16, u []float32, gateBF, upBF []uint16, a []float32, N, I, R int, scale float32, gelu bool)
	// GatedLoRABackwardBF16 is GatedLoRABackwardRounded with gate and up
	// given as bfloat16: the bits it writes for their widened values.
	GatedLoRABackwardBF16(dgateBF, dupBF []uint16, da, g, dact []float32, dactBF []uint16, gateBF, upBF []uint16, N, I, R int, gelu bool)
}

// NeedLinearRoundedTo panics unless LinearForwardBF16RoundedTo's lists
// agree, its sizes are not negative and every buffer holds its shape.
func NeedLinearRoundedTo(op string, outBFs [][]uint16, inp []uint16, weights [][]uint16, N, C int, OCs []int, add []bool) {
	if len(weights) != len(outBFs) || len(OCs) != len(outBFs) || (add != nil && len(add) != len(outBFs)) {
		panic(fmt.Sprintf("kernels.%s: %d outputs, %d weights, %d output sizes, %d add flags", op, len(outBFs), len(weights), len(OCs), len(add)))
	}
	NeedSizes(op, N, C)
	Need(op, "inp", len(inp), N*C)
	for i := range outBFs {
		NeedSizes(op, OCs[i])
		Need(op, "out", len(outBFs[i]), N*OCs[i])
		Need(op, "weight", len(weights[i]), OCs[i]*C)
	}
}
