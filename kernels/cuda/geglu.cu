// GeGLU forward and backward (kernels.Backend.GeGLUForward and
// GeGLUBackward's contracts), elementwise over n values, with the tanh
// approximation gelu(x) = x/2·(1 + t), t = tanh(√(2/π)·(x + 0.044715x³)):
//
//	out    = gelu(gate)·up
//	dgate += dout·up·(½(1 + t) + ½gate·(1 − t²)·√(2/π)·(1 + 3·0.044715gate²))
//	dup   += dout·gelu(gate)
//
// geglu_backward_set writes the two instead (kernels.GatedSetter): the
// same expressions, so the values a zeroed dgate and dup would get; and,
// when act is not null, act = geglu_forward's out (the same expression).
// geglu_backward_set_bf16 also writes dgate and dup rounded to bfloat16,
// as swiglu_backward_set_bf16 does (swiglu.cu; with dgate null, only
// those; with act_bf, act's too; with dout_bf, dout read as bfloat16),
// and geglu_forward_bf16 out's rounding into out_bf, as
// swiglu_forward_bf16 does.
//
// Launch: any 1-D geometry (a grid-stride loop, 64-bit index). tanhf is
// the accurate one (no fast-math). Never run on a GPU: tested on the CPU
// through cpushim/cuda_cpu.h against kernels/ref.

#include "bf16round.cuh"
#include "gated.cuh"

// gegluAt is geglu_forward's value i, and its bf16 copy unless out_bf is
// null.
__device__ __forceinline__ void gegluAt(long long i, float *__restrict__ out, unsigned short *__restrict__ out_bf,
                                        const float *__restrict__ gate, const float *__restrict__ up) {
	const float v = gegluValue(gate[i], up[i]);
	out[i] = v;
	if (out_bf != nullptr) out_bf[i] = bf16Round(v);
}

extern "C" __global__ void geglu_forward(float *__restrict__ out, const float *__restrict__ gate,
                                         const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		gegluAt(i, out, nullptr, gate, up);
}

extern "C" __global__ void geglu_forward_bf16(float *__restrict__ out, unsigned short *__restrict__ out_bf,
                                              const float *__restrict__ gate, const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		gegluAt(i, out, out_bf, gate, up);
}

extern "C" __global__ void geglu_backward(float *__restrict__ dgate, float *__restrict__ dup,
                                          const float *__restrict__ dout, const float *__restrict__ gate,
                                          const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		const float x = gate[i], t = geluTanh(x), d = dout[i];
		const float dg = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_C * x * x);
		dgate[i] += d * up[i] * dg;
		dup[i] += d * 0.5f * x * (1.0f + t);
	}
}

// gegluSetAt is geglu_backward_set's value i (dgate and dup unless dgate
// is null, act unless act is), act's bf16 copy unless act_bf is null, and
// dgate's and dup's unless dgate_bf is.
__device__ __forceinline__ void gegluSetAt(long long i, float *__restrict__ dgate, float *__restrict__ dup,
                                           float *__restrict__ act, unsigned short *__restrict__ act_bf,
                                           unsigned short *__restrict__ dgate_bf,
                                           unsigned short *__restrict__ dup_bf, const float *__restrict__ dout,
                                           const unsigned short *__restrict__ dout_bf,
                                           const float *__restrict__ gate, const float *__restrict__ up) {
	const float d = dout_bf != nullptr ? bf16Widen(dout_bf[i]) : dout[i];
	float vg, vu, a;
	gegluGrads(gate[i], up[i], d, vg, vu, a);
	if (dgate != nullptr) {
		dgate[i] = vg;
		dup[i] = vu;
	}
	if (act != nullptr || act_bf != nullptr) {
		if (act != nullptr) act[i] = a;
		if (act_bf != nullptr) act_bf[i] = bf16Round(a);
	}
	if (dgate_bf != nullptr) {
		dgate_bf[i] = bf16Round(vg);
		dup_bf[i] = bf16Round(vu);
	}
}

extern "C" __global__ void geglu_backward_set(float *__restrict__ dgate, float *__restrict__ dup,
                                              float *__restrict__ act, const float *__restrict__ dout,
                                              const float *__restrict__ gate, const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		gegluSetAt(i, dgate, dup, act, nullptr, nullptr, nullptr, dout, nullptr, gate, up);
}

extern "C" __global__ void geglu_backward_set_bf16(float *__restrict__ dgate, float *__restrict__ dup,
                                                   float *__restrict__ act, unsigned short *__restrict__ act_bf,
                                                   unsigned short *__restrict__ dgate_bf,
                                                   unsigned short *__restrict__ dup_bf, const float *__restrict__ dout,
                                                   const unsigned short *__restrict__ dout_bf,
                                                   const float *__restrict__ gate, const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		gegluSetAt(i, dgate, dup, act, act_bf, dgate_bf, dup_bf, dout, dout_bf, gate, up);
}
