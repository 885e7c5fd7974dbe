// The chunked logprob and entropy forward (kernels.Backend.LogprobForward's
// contract) and the logprob's backward from expect (LogprobBackwardExpect).
// The logits z = hidden·weightᵀ come a chunk of vocabulary columns at a
// time (a GEMM, cuBLAS on the device), and these kernels keep, per row, an
// online logsumexp over the chunks seen:
//
//	state[n] = (M, s, t, zt, α):  M the largest logit so far,
//	                              s = Σ e^(z−M),  t = Σ e^(z−M)·(z−M),
//	                              zt the target's logit once its chunk came,
//	                              α = e^(M_before − M) of the last chunk
//
// and at the end
//
//	lse[n]     = M + log s
//	entropy[n] = lse − Σ softmax(z)·z = log s − t/s
//	logprob[n] = zt − lse   (0 when targets[n] < 0: ignored)
//
// When M grows to M' the sums rescale by α = e^(M−M'): s ← α·s,
// t ← α·(t + s·(M − M')). With expect, the chunk's logits are replaced by
// e^(z−M') and the host adds their product with the chunk's weight rows
// into expect after scaling its rows by α (expect_scale); logprob_expect
// divides by s at the end: expect[n] = Σ_j softmax(z)_j·weight[j].
//
// state [N,5]; z [N,len] the chunk's logits, columns j0 … j0+len−1;
// targets [N] in [−1, V); expect, hidden [N,C]. Never run on a GPU: tested
// on the CPU through cpushim/cuda_cpu.h, with the GEMMs from kernels/ref,
// against kernels/ref.
#include "common.cuh"

// logprob_chunk folds one chunk into state (the first chunk, j0 = 0,
// starts it); with keepP it overwrites the chunk's z with e^(z−M). Launch:
// grid N (one block per row), block of any multiple of 32 threads up to 1024.
extern "C" __global__ void logprob_chunk(float *__restrict__ state, float *__restrict__ z,
                                         const int *__restrict__ targets, int len, int j0, int keepP) {
	__shared__ float scratch[32];
	const int n = blockIdx.x;
	float *x = z + (long long)n * len;
	const int tg = targets[n];
	const bool hit = tg >= j0 && tg < j0 + len;
	const float zt = threadIdx.x == 0 && hit ? x[tg - j0] : 0.0f;  // read before keepP overwrites it
	float cm = -INFINITY;
	for (int j = threadIdx.x; j < len; j += blockDim.x) cm = fmaxf(cm, x[j]);
	cm = blockMax(cm, scratch);
	float *st = state + 5 * (long long)n;
	const float m = j0 == 0 ? cm : st[0];
	const float M = fmaxf(m, cm);
	float s = 0.0f, t = 0.0f;
	for (int j = threadIdx.x; j < len; j += blockDim.x) {
		const float y = x[j] - M, e = expf(y);
		s += e;
		t += e * y;
	}
	s = blockSum(s, scratch);  // ends in a barrier: every x[j] is read
	t = blockSum(t, scratch);
	if (keepP)
		for (int j = threadIdx.x; j < len; j += blockDim.x) x[j] = expf(x[j] - M);
	if (threadIdx.x == 0) {
		float a = 0.0f;
		if (j0 != 0) {
			const float s0 = st[1], t0 = st[2];
			a = expf(m - M);
			s += a * s0;
			t += a * (t0 + s0 * (m - M));
		}
		st[0] = M;
		st[1] = s;
		st[2] = t;
		if (j0 == 0) st[3] = 0.0f;
		if (hit) st[3] = zt;
		st[4] = a;
	}
}

// logprob_finish writes the row's results from its state. Launch: any
// 1-D geometry (a grid-stride loop, 64-bit index).
extern "C" __global__ void logprob_finish(float *__restrict__ logprob, float *__restrict__ entropy,
                                          float *__restrict__ lse, const float *__restrict__ state,
                                          const int *__restrict__ targets, int N) {
	for (long long n = blockIdx.x * (long long)blockDim.x + threadIdx.x; n < N; n += (long long)gridDim.x * blockDim.x) {
		const float *st = state + 5 * n;
		const float logS = logf(st[1]), l = st[0] + logS;
		lse[n] = l;
		entropy[n] = logS - st[2] / st[1];
		logprob[n] = targets[n] < 0 ? 0.0f : st[3] - l;
	}
}

// expect_scale multiplies row n of expect [N,C] by state[n]'s α (before a
// chunk's product is added); logprob_expect divides it by s (at the end).
// Launch: grid N (one block per row), block of any size.
extern "C" __global__ void expect_scale(float *__restrict__ expect, const float *__restrict__ state, int C) {
	const float a = state[5 * (long long)blockIdx.x + 4];
	float *e = expect + (long long)blockIdx.x * C;
	for (int c = threadIdx.x; c < C; c += blockDim.x) e[c] *= a;
}

extern "C" __global__ void logprob_expect(float *__restrict__ expect, const float *__restrict__ state, int C) {
	const float r = 1.0f / state[5 * (long long)blockIdx.x + 1];
	float *e = expect + (long long)blockIdx.x * C;
	for (int c = threadIdx.x; c < C; c += blockDim.x) e[c] *= r;
}

// logprob_backward_expect accumulates dhidden[n] += dlogprob[n]·(weight[t]
// − expect[n]) for rows with t = targets[n] ≥ 0 (t ≥ V: nothing; the host
// cannot check ids on the device). Launch: grid N (one block per row),
// block of any size.
extern "C" __global__ void logprob_backward_expect(float *__restrict__ dhidden, const float *__restrict__ dlogprob,
                                                   const float *__restrict__ expect, const float *__restrict__ weight,
                                                   const int *__restrict__ targets, int C, int V) {
	const int n = blockIdx.x, t = targets[n];
	if (t < 0 || t >= V) return;  // the whole block: no barrier follows
	const float d = dlogprob[n];
	const long long row = (long long)n * C;
	const float *w = weight + (long long)t * C;
	for (int c = threadIdx.x; c < C; c += blockDim.x) dhidden[row + c] += d * (w[c] - expect[row + c]);
}
