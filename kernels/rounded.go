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
	// dgateBF and dupBF, n values each.
	SwiGLUBackwardSetRounded(dgate, dup, act []float32, dgateBF, dupBF []uint16, dout, gate, up []float32, n int)
	// GeGLUBackwardSetRounded is SwiGLUBackwardSetRounded for GeGLU.
	GeGLUBackwardSetRounded(dgate, dup, act []float32, dgateBF, dupBF []uint16, dout, gate, up []float32, n int)
	// LinearBackwardBF16Rounded is LinearBackwardBF16 with dout [N, OC]
	// already rounded to bfloat16: the same bits as LinearBackwardBF16 on
	// the float32 values it rounds from.
	LinearBackwardBF16Rounded(dinp []float32, dout, weight []uint16, N, C, OC int)
}
