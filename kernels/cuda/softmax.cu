// The softmax family over a full row (kernels.Backend.LogSoftmaxForward,
// LogSoftmaxBackward, EntropyForward and EntropyBackward's contracts), with
// p = softmax(inp[n,:]):
//
//	logsoftmax_forward:  out[n,j]   = inp[n,j] − log Σ_k exp(inp[n,k])
//	logsoftmax_backward: dinp[n,j] += dout[n,j] − exp(out[n,j])·Σ_k dout[n,k]
//	entropy_forward:     ent[n]     = −Σ_j p_j·log p_j
//	entropy_backward:    dinp[n,j] += −dent[n]·p_j·(log p_j + ent[n])
//
// inp, out, dinp, dout [N,V]; ent, dent [N]. Launch: grid N (one block per
// row), block of any multiple of 32 threads up to 1024. Each row is read
// in passes (max, then the sums of exp(x − max), then the outputs), the
// sums reduced in f32 by blockSum/blockMax (common.cuh); the entropy is
// formed as log s − Σ e^y·y / s with y = x − max, s = Σ e^y, so it never
// subtracts two large numbers; a term with p = 0 (a masked, −Inf logit)
// adds nothing to either op, as 0·log 0 = 0. Never run on a GPU: tested on the CPU
// through cpushim/cuda_cpu.h against kernels/ref.
#include "common.cuh"

extern "C" __global__ void logsoftmax_forward(float *__restrict__ out, const float *__restrict__ inp, int V) {
	__shared__ float scratch[32];
	const long long row = (long long)blockIdx.x * V;
	const float *x = inp + row;
	float m = -INFINITY;
	for (int j = threadIdx.x; j < V; j += blockDim.x) m = fmaxf(m, x[j]);
	m = blockMax(m, scratch);
	float s = 0.0f;
	for (int j = threadIdx.x; j < V; j += blockDim.x) s += expf(x[j] - m);
	const float lse = m + logf(blockSum(s, scratch));
	for (int j = threadIdx.x; j < V; j += blockDim.x) out[row + j] = x[j] - lse;
}

extern "C" __global__ void logsoftmax_backward(float *__restrict__ dinp, const float *__restrict__ dout,
                                               const float *__restrict__ out, int V) {
	__shared__ float scratch[32];
	const long long row = (long long)blockIdx.x * V;
	float s = 0.0f;
	for (int j = threadIdx.x; j < V; j += blockDim.x) s += dout[row + j];
	s = blockSum(s, scratch);
	for (int j = threadIdx.x; j < V; j += blockDim.x) dinp[row + j] += dout[row + j] - expf(out[row + j]) * s;
}

// rowEntropy returns, to every thread, log s and the entropy of row x,
// with m its max.
__device__ __forceinline__ void rowEntropy(const float *x, int V, float *scratch, float &m, float &logS, float &ent) {
	m = -INFINITY;
	for (int j = threadIdx.x; j < V; j += blockDim.x) m = fmaxf(m, x[j]);
	m = blockMax(m, scratch);
	float s = 0.0f, t = 0.0f;  // Σ e^y, Σ e^y·y
	for (int j = threadIdx.x; j < V; j += blockDim.x) {
		const float y = x[j] - m, e = expf(y);
		s += e;
		if (e != 0.0f) t += e * y;  // 0·log 0 = 0: a masked (−Inf) logit's e·y is 0·(−Inf) = NaN
	}
	s = blockSum(s, scratch);
	t = blockSum(t, scratch);
	logS = logf(s);
	ent = logS - t / s;
}

extern "C" __global__ void entropy_forward(float *__restrict__ ent, const float *__restrict__ inp, int V) {
	__shared__ float scratch[32];
	float m, logS, e;
	rowEntropy(inp + (long long)blockIdx.x * V, V, scratch, m, logS, e);
	if (threadIdx.x == 0) ent[blockIdx.x] = e;
}

extern "C" __global__ void entropy_backward(float *__restrict__ dinp, const float *__restrict__ dent,
                                            const float *__restrict__ inp, int V) {
	__shared__ float scratch[32];
	const long long row = (long long)blockIdx.x * V;
	float m, logS, e;
	rowEntropy(inp + row, V, scratch, m, logS, e);
	const float d = dent[blockIdx.x];
	for (int j = threadIdx.x; j < V; j += blockDim.x) {
		const float logp = inp[row + j] - m - logS, p = expf(logp);
		if (p != 0.0f) dinp[row + j] += -d * p * (logp + e);  // a masked logit has no gradient
	}
}
