package kernels

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
	// then only the roundings are written (and act), for a caller whose
	// every consumer of the two gradients takes the roundings
	// (LoRARoundedBackwarder).
	SwiGLUBackwardSetRounded(dgate, dup, act []float32, dgateBF, dupBF []uint16, dout, gate, up []float32, n int)
	// GeGLUBackwardSetRounded is SwiGLUBackwardSetRounded for GeGLU.
	GeGLUBackwardSetRounded(dgate, dup, act []float32, dgateBF, dupBF []uint16, dout, gate, up []float32, n int)
	// LinearBackwardBF16Rounded is LinearBackwardBF16 with dout [N, OC]
	// already rounded to bfloat16: the same bits as LinearBackwardBF16 on
	// the float32 values it rounds from.
	LinearBackwardBF16Rounded(dinp []float32, dout, weight []uint16, N, C, OC int)
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
