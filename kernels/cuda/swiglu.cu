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
//
// Launch: any 1-D geometry (a grid-stride loop, 64-bit index). expf is
// the accurate one (no fast-math). Never run on a GPU: tested on the CPU through
// cpushim/cuda_cpu.h against kernels/ref.

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

extern "C" __global__ void swiglu_forward(float *__restrict__ out, const float *__restrict__ gate,
                                          const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		const float g = gate[i];
		out[i] = g * sigmoid(g) * up[i];
	}
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

extern "C" __global__ void swiglu_backward_set(float *__restrict__ dgate, float *__restrict__ dup,
                                               float *__restrict__ act, const float *__restrict__ dout,
                                               const float *__restrict__ gate, const float *__restrict__ up, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		const float g = gate[i], d = dout[i], s = sigmoid(g), u = up[i];
		dgate[i] = d * u * s * (1.0f + g * (1.0f - s));
		dup[i] = d * g * s;
		if (act != nullptr) {
			act[i] = g * s * u;
		}
	}
}
