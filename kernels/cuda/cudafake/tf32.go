package cudafake

import "math"

// RoundTF32 rounds f to TF32 (TensorFloat-32: float32's sign and 8-bit
// exponent, 10 of its 23 mantissa bits), to nearest with ties to even, and
// returns it as a float32 whose low 13 mantissa bits are zero: what the
// fakes' GemmEx does to each float32 operand under
// CUBLAS_COMPUTE_32F_FAST_TF32. NaN and ±Inf pass unchanged; a value that
// rounds past float32's largest finite TF32 becomes ±Inf.
//
// cuBLAS documents only that this compute type "allows down-converting
// inputs to TF32" (cublas_api.h, cublasComputeType_t), not the rounding.
// The PTX ISA's conversions are cvt.rna.tf32.f32 (sm_80: nearest, ties
// away from zero) and cvt.rn.tf32.f32 (sm_90: nearest, ties to even), and
// PyTorch's numerical-accuracy note says the tensor cores read only the
// first 10 mantissa bits of an operand not converted (truncation). Nearest
// even is modelled here; ties away differs only on exact ties, and
// truncation's error is at most twice nearest's (2⁻¹⁰ against 2⁻¹¹
// relative), which the bounds of the tests that use this allow for.
func RoundTF32(f float32) float32 {
	u := math.Float32bits(f)
	if u&0x7f800000 == 0x7f800000 { // NaN or ±Inf
		return f
	}
	u += 0x0fff + (u>>13)&1
	return math.Float32frombits(u &^ 0x1fff)
}
