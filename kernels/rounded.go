package kernels

import "fmt"

// DoutRounder is implemented by a backend whose LinearBackwardBF16 rounds
// its float32 dout to bfloat16 before the product (kernels/cuda in
// PrecisionBF16: f32_to_bf16, then a bf16 GEMM) and whose gated units'
// backward can write that rounding of dgate and dup on the way: the
// model's MLP backward then hands the gate and up projections' products
// the rounded copies, so that LinearBackwardBF16 does not read the two
// [N, I] float32 gradients again to round them (on the 7B shape about
// 1.2 GB a layer). Host backends (ref, cpu) do not implement it.
type DoutRounder interface {
	// RoundsLinearDout reports whether LinearBackwardBF16 multiplies dout
	// rounded as ToBF16 rounds, so that LinearBackwardBF16Rounded of that
	// rounding gives its bits (false: the methods below must not be used).
	RoundsLinearDout() bool
	// SwiGLUBackwardSetRounded is GatedSetter's SwiGLUBackwardSet that
	// also writes dgate and dup rounded to bfloat16 (ToBF16's bits) into
	// dgateBF and dupBF, n values each. dgate and dup may both be nil:
	// then only the roundings are written, for a caller whose every
	// consumer of the two gradients takes the roundings
	// (LoRARoundedBackwarder). actBF, when not nil, receives act's
	// rounding (act itself may then be nil), for a down projection whose
	// DA product takes it (LoRAInputRounder). Exactly one of dout and
	// doutBF is not nil: doutBF is dout given as bfloat16 only, widened
	// exactly before use, as the down projection's backward writes it
	// (DinpRounder).
	SwiGLUBackwardSetRounded(dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dout []float32, doutBF []uint16, gate, up []float32, n int)
	// GeGLUBackwardSetRounded is SwiGLUBackwardSetRounded for GeGLU.
	GeGLUBackwardSetRounded(dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dout []float32, doutBF []uint16, gate, up []float32, n int)
	// LinearBackwardBF16Rounded is LinearBackwardBF16 with dout [N, OC]
	// already rounded to bfloat16: the same bits as LinearBackwardBF16 on
	// the float32 values it rounds from.
	LinearBackwardBF16Rounded(dinp []float32, dout, weight []uint16, N, C, OC int)
}

// DinpRounder is implemented by a backend whose bfloat16 linear backward
// and LoRA products can write their result as bfloat16 only: kernels/cuda
// in PrecisionBF16, whose GEMMs then store a bfloat16 C (float32 sums,
// alpha and beta applied in float32, one rounding on store). The model's
// MLP backward then has the down projection's backward write dact [N, I]
// as bfloat16, and the gated backward read it so (DoutRounder's kernels
// with doutBF): dact moves 2 bytes a value where it moved 4, written by
// the first product, read and written by the second (with a LoRA on
// down) and read by the gated backward (on the 7B shape 1.24 GB a layer
// less, 0.62 GB of it in bandwidth-bound launches; TestStepTraffic7B).
// It moves bits: dact is rounded to bfloat16 after each product, and the
// LoRA dx product multiplies g's and A's roundings. Host backends (ref,
// cpu) do not implement it.
type DinpRounder interface {
	// RoundsLinearDinp reports whether the methods below may be used
	// (false: they must not be).
	RoundsLinearDinp() bool
	// LinearBackwardBF16To is LinearBackwardBF16 with a bfloat16 dinpBF
	// [N, C]: dinpBF = dout·W + beta·dinpBF, dout rounded as
	// LinearBackwardBF16 rounds it, the sum (beta·dinpBF's old values
	// widened) rounded to bfloat16 as ToBF16 rounds; beta 0 ignores
	// dinpBF's contents. N, C and OC are at least 1.
	LinearBackwardBF16To(dinpBF []uint16, dout []float32, weight []uint16, N, C, OC int, beta float32)
	// LinearBackwardBF16ToRounded is LinearBackwardBF16To with dout given
	// as its bfloat16 rounding doutBF (NormDoutRounder's copy): the same
	// bits as LinearBackwardBF16To on the float32 values it rounds from.
	LinearBackwardBF16ToRounded(dinpBF, doutBF, weight []uint16, N, C, OC int, beta float32)
	// MatmulBF16To is LoRAInputRounder's MatmulBF16 with a bfloat16 c,
	// rounded as LinearBackwardBF16To rounds dinpBF; M, N and K are at
	// least 1.
	MatmulBF16To(cBF []uint16, a []float32, aBF []uint16, b []float32, bBF []uint16, M, N, K int, transA, transB bool, beta float32)
}

// NormDoutRounder is implemented by a DoutRounder whose RMSNorm backward
// can write the bfloat16 rounding of the input gradient it accumulates
// (kernels/cuda): in a pre-norm block the gradient the post-attention
// norm's backward leaves is the o projection's dout, and the gradient the
// input norm's leaves the down projection's dout of the block below, and
// their base products then take that rounding (LinearBackwardBF16Rounded,
// DinpRounder's LinearBackwardBF16ToRounded) instead of reading the
// float32 gradient again to round it (on the 7B shape 117 MB and a launch
// each a layer). Use it only where RoundsLinearDout holds.
type NormDoutRounder interface {
	// RMSNormBackwardRounded is RMSNormBackward that also writes dinp's
	// new values rounded to bfloat16 (ToBF16's bits) into dinpBF, N·C
	// values.
	RMSNormBackwardRounded(dinp, dweight []float32, dinpBF []uint16, dout, rstd, inp, weight []float32, N, C int)
}

// InputRounder is the forward's counterpart of DoutRounder: implemented by
// a backend whose bfloat16 linear products round their float32 input to
// bfloat16 before the product (kernels/cuda in PrecisionBF16: f32_to_bf16,
// then a bf16 GEMM) and whose RMSNorm and gated units' forward can write
// that rounding of their output on the way. The model's training forward
// then hands the products of the normed input (q, k, v; gate, up) and of
// the gated unit's output (down) the rounded copies, so that the products
// do not read the float32 activation again to round it (on the 7B shape
// about 0.86 GB a layer). Host backends (ref, cpu) do not implement it.
type InputRounder interface {
	// RoundsLinearInput reports whether LinearForwardBF16,
	// LinearForwardBF16Many and LinearAdderBF16's LinearForwardBF16ManyAdd
	// multiply inp rounded as ToBF16 rounds, so that
	// LinearForwardBF16Rounded of that rounding gives their bits (false:
	// the methods below must not be used).
	RoundsLinearInput() bool
	// RMSNormForwardRounded is RMSNormForward that also writes out rounded
	// to bfloat16 (ToBF16's bits) into outBF, N·C values.
	RMSNormForwardRounded(out, rstd []float32, outBF []uint16, inp, weight []float32, N, C int, eps float32)
	// SwiGLUForwardRounded is SwiGLUForward that also writes out rounded
	// to bfloat16 (ToBF16's bits) into outBF, n values.
	SwiGLUForwardRounded(out []float32, outBF []uint16, gate, up []float32, n int)
	// GeGLUForwardRounded is SwiGLUForwardRounded for GeGLU.
	GeGLUForwardRounded(out []float32, outBF []uint16, gate, up []float32, n int)
	// LinearForwardBF16Rounded is LinearAdderBF16's
	// LinearForwardBF16ManyAdd (add nil: LinearForwardBF16Many's; with one
	// weight, LinearForwardBF16's) with inp [N, C] already rounded to
	// bfloat16: the same bits as those ops on the float32 values it rounds
	// from. The outputs must not overlap inp or each other.
	LinearForwardBF16Rounded(outs [][]float32, inp []uint16, weights [][]uint16, biases [][]float32, N, C int, OCs []int, add []bool)
}

// LoRAInputRounder is implemented by a backend whose LoRA products can
// multiply bfloat16 operands, an activation's rounding among them
// (kernels/cuda in PrecisionBF16). The model's training backward then has
// the gated unit's backward rewrite act (the down projection's input) as
// bfloat16 only (DoutRounder's kernels with actBF) and computes the down
// projection's adapter gradient DA += gᵀ·act from it: on the 7B shape
// 0.62 GB a layer less written and read (train/model's
// TestStepTraffic7B). The forward's LoRA updates u = x·Aᵀ keep float32
// operands: computed from x's rounding they moved the micro llama's
// logprobs past PyTorch autocast's error (TestBF16ComputeCUDAEmulated).
// Host backends do not implement it.
type LoRAInputRounder interface {
	// RoundsLoRAInput reports whether MatmulBF16 may be used (false: it
	// must not be).
	RoundsLoRAInput() bool
	// MatmulBF16 is Matmul (c [M, N] = op(A)·op(B) + beta·c) on bfloat16
	// operands with float32 sums: each operand is given either as float32
	// values (a, b), which it rounds as ToBF16 rounds before the product,
	// or as bfloat16 values (aBF, bBF); exactly one of a and aBF, and of b
	// and bBF, is not nil.
	MatmulBF16(c, a []float32, aBF []uint16, b []float32, bBF []uint16, M, N, K int, transA, transB bool, beta float32)
}

// NeedMatmulBF16 panics unless MatmulBF16's sizes are not negative, one
// of each operand pair is given and every buffer holds its shape.
func NeedMatmulBF16(op string, c, a []float32, aBF []uint16, b []float32, bBF []uint16, M, N, K int) {
	needMatmulBF16(op, len(c), a, aBF, b, bBF, M, N, K)
}

// NeedMatmulBF16To is NeedMatmulBF16 for DinpRounder's MatmulBF16To, whose
// c is bfloat16.
func NeedMatmulBF16To(op string, cBF []uint16, a []float32, aBF []uint16, b []float32, bBF []uint16, M, N, K int) {
	needMatmulBF16(op, len(cBF), a, aBF, b, bBF, M, N, K)
}

// needMatmulBF16 is NeedMatmulBF16 given c's length.
func needMatmulBF16(op string, c int, a []float32, aBF []uint16, b []float32, bBF []uint16, M, N, K int) {
	NeedSizes(op, M, N, K)
	Need(op, "c", c, M*N)
	if (a == nil) == (aBF == nil) || (b == nil) == (bBF == nil) {
		panic(fmt.Sprintf("kernels.%s: want exactly one of a and aBF (given: %v, %v), and of b and bBF (%v, %v)", op, a != nil, aBF != nil, b != nil, bBF != nil))
	}
	Need(op, "a", len(a)+len(aBF), M*K)
	Need(op, "b", len(b)+len(bBF), K*N)
}
