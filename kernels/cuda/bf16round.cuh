// bf16Round: a float32 value rounded to bfloat16 bits exactly as
// linear.cu's f32_to_bf16 rounds (nearest, ties to even; a NaN keeps its
// sign and becomes a quiet NaN), kernels.BF16 bit for bit; for the
// kernels that write a bf16 copy of their output on the way (the gated
// units' backward_set_bf16, whose copy LinearBackwardBF16Rounded
// multiplies instead of rounding dout itself; the gated units' and
// RMSNorm's forward_bf16, whose copy LinearForwardBF16Rounded multiplies
// instead of rounding its input). bf16Widen is the exact way back (as
// linear.cu's bf16_to_f32), for the gated units' backward_set_bf16 reading
// dout as bfloat16 (dout_bf, which the down projection's backward wrote
// as bfloat16: kernels.DinpRounder).
#pragma once

__device__ __forceinline__ unsigned short bf16Round(float x) {
	unsigned b = __float_as_uint(x);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((b >> 16) | 0x40u);
	b += 0x7fffu + ((b >> 16) & 1u);
	return (unsigned short)(b >> 16);
}

__device__ __forceinline__ float bf16Widen(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
