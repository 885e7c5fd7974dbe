// SwiGLU forward and backward (kernels.Backend.SwiGLUForward and
// SwiGLUBackward's contracts), elementwise over n values, with
// σ(x) = 1/(1 + e^−x) and silu(x) = x·σ(x):
//
//	out    = silu(gate)·up
//	dgate += dout·up·σ(gate)·(1 + gate·(1 − σ(gate)))
//	dup   += dout·silu(gate)
//
// swiglu_backward_set writes the two instead (kernels.GatedSetter): the
// same expressions, so the values a zeroed dgate and dup would get; and,
// when act is not null, act = swiglu_forward's out (the same expression).
// swiglu_backward_set_bf16 is swiglu_backward_set (the same code,
// swigluSetAt) that also writes dgate and dup rounded to bfloat16 into
// dgate_bf and dup_bf (f32_to_bf16's rounding, bf16round.cuh): the bf16
// precision's LinearBackwardBF16 of the gate and up projections then
// multiplies those (LinearBackwardBF16Rounded) instead of reading the two
// float32 gradients again to round them; with dgate (and dup) null it
// writes only the copies (and act), for a model whose LoRA backward takes
// the copies too (kernels.LoRARoundedBackwarder); with act_bf not null it
// writes act's rounding there (act itself may be null), which the down
// projection's DA product takes (kernels.LoRAInputRounder); with dout_bf
// not null it reads dout as bfloat16 from there (dout itself null), the
// down projection's input gradient as its backward wrote it
// (kernels.DinpRounder), widened exactly.
// swiglu_forward_bf16, likewise, is swiglu_forward (swigluAt) that also
// writes out rounded into out_bf, which the down projection's product
// multiplies (LinearForwardBF16Rounded) instead of reading out again to
// round it.
//
// Launch: any 1-D geometry (a grid-stride loop, 64-bit index). expf is
// the accurate one (no fast-math). Never run on a GPU: tested on the CPU through
// cpushim/cuda_cpu.h against kernels/ref.

#include "bf16round.cuh"
#include "gated.cuh"

// swigluAt is swiglu_forward's value i, and its bf16 copy unless out_bf
// is null.
__device__ __forceinline__ void swigluAt(long long i, float *__restrict__ out, unsigned short *__restrict__ out_bf,
                                         const float *__restrict__ gate, const float *__restrict__ up) {
	const float v = swigluValue(gate[i], up[i]);
	out[i] = v;
	if (out_bf != nullptr) out_bf[i] = bf16Round(v);
}

extern "C" __global__ void swiglu_forward(float *__restrict__ out, const float *__restrict__ gate,
                                          const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		swigluAt(i, out, nullptr, gate, up);
}

extern "C" __global__ void swiglu_forward_bf16(float *__restrict__ out, unsigned short *__restrict__ out_bf,
                                               const float *__restrict__ gate, const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		swigluAt(i, out, out_bf, gate, up);
}

extern "C" __global__ void swiglu_backward(float *__restrict__ dgate, float *__restrict__ dup,
                                           const float *__restrict__ dout, const float *__restrict__ gate,
                                           const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		const float g = gate[i], d = dout[i], s = sigmoid(g);
		dgate[i] += d * up[i] * s * (1.0f + g * (1.0f - s));
		dup[i] += d * g * s;
	}
}

// swigluSetAt is swiglu_backward_set's value i (dgate and dup unless
// dgate is null, act unless act is), act's bf16 copy unless act_bf is
// null, and dgate's and dup's unless dgate_bf is.
__device__ __forceinline__ void swigluSetAt(long long i, float *__restrict__ dgate, float *__restrict__ dup,
                                            float *__restrict__ act, unsigned short *__restrict__ act_bf,
                                            unsigned short *__restrict__ dgate_bf,
                                            unsigned short *__restrict__ dup_bf, const float *__restrict__ dout,
                                            const unsigned short *__restrict__ dout_bf,
                                            const float *__restrict__ gate, const float *__restrict__ up) {
	const float d = dout_bf != nullptr ? bf16Widen(dout_bf[i]) : dout[i];
	float dg, du, a;
	swigluGrads(gate[i], up[i], d, dg, du, a);
	if (dgate != nullptr) {
		dgate[i] = dg;
		dup[i] = du;
	}
	if (act != nullptr || act_bf != nullptr) {
		if (act != nullptr) act[i] = a;
		if (act_bf != nullptr) act_bf[i] = bf16Round(a);
	}
	if (dgate_bf != nullptr) {
		dgate_bf[i] = bf16Round(dg);
		dup_bf[i] = bf16Round(du);
	}
}

extern "C" __global__ void swiglu_backward_set(float *__restrict__ dgate, float *__restrict__ dup,
                                               float *__restrict__ act, const float *__restrict__ dout,
                                               const float *__restrict__ gate, const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		swigluSetAt(i, dgate, dup, act, nullptr, nullptr, nullptr, dout, nullptr, gate, up);
}

extern "C" __global__ void swiglu_backward_set_bf16(float *__restrict__ dgate, float *__restrict__ dup,
                                                    float *__restrict__ act, unsigned short *__restrict__ act_bf,
                                                    unsigned short *__restrict__ dgate_bf,
                                                    unsigned short *__restrict__ dup_bf, const float *__restrict__ dout,
                                                    const unsigned short *__restrict__ dout_bf,
                                                    const float *__restrict__ gate, const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		swigluSetAt(i, dgate, dup, act, act_bf, dgate_bf, dup_bf, dout, dout_bf, gate, up);
}
