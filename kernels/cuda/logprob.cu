// The chunked logprob and entropy forward (kernels.Backend.LogprobForward's
// contract, without expect): the logits z = hidden·weightᵀ come a chunk of
// vocabulary columns at a time (a GEMM, cuBLAS on the device), and these
// kernels keep, per row, an online logsumexp over the chunks seen:
//
//	state[n] = (M, s, t, zt):  M the largest logit so far,
//	                           s = Σ e^(z−M),  t = Σ e^(z−M)·(z−M),
//	                           zt the target's logit once its chunk came
//
// and at the end
//
//	lse[n]     = M + log s
//	entropy[n] = lse − Σ softmax(z)·z = log s − t/s
//	logprob[n] = zt − lse   (0 when targets[n] < 0: ignored)
//
// When M grows to M' the sums rescale by α = e^(M−M'): s ← α·s,
// t ← α·(t + s·(M − M')). state [N,4]; z [N,len] the chunk's logits,
// columns j0 … j0+len−1; targets [N]. Never run on a GPU: tested on the CPU
// through cpushim/cuda_cpu.h, with the GEMM from kernels/ref, against
// kernels/ref's LogprobForward.
#include "common.cuh"

// logprob_chunk folds one chunk into state (the first chunk, j0 = 0,
// starts it). Launch: grid N (one block per row), block of any multiple of
// 32 threads up to 1024.
extern "C" __global__ void logprob_chunk(float *__restrict__ state, const float *__restrict__ z,
                                         const int *__restrict__ targets, int len, int j0) {
	__shared__ float scratch[32];
	const int n = blockIdx.x;
	const float *x = z + (long long)n * len;
	float cm = -INFINITY;
	for (int j = threadIdx.x; j < len; j += blockDim.x) cm = fmaxf(cm, x[j]);
	cm = blockMax(cm, scratch);
	float *st = state + 4 * (long long)n;
	const float m = j0 == 0 ? cm : st[0];
	const float M = fmaxf(m, cm);
	float s = 0.0f, t = 0.0f;
	for (int j = threadIdx.x; j < len; j += blockDim.x) {
		const float y = x[j] - M, e = expf(y);
		s += e;
		t += e * y;
	}
	s = blockSum(s, scratch);
	t = blockSum(t, scratch);
	if (threadIdx.x == 0) {
		if (j0 != 0) {
			const float a = expf(m - M), s0 = st[1], t0 = st[2];
			s += a * s0;
			t += a * (t0 + s0 * (m - M));
		}
		st[0] = M;
		st[1] = s;
		st[2] = t;
		const int tg = targets[n];
		if (j0 == 0) st[3] = 0.0f;
		if (tg >= j0 && tg < j0 + len) st[3] = x[tg - j0];
	}
}

// logprob_finish writes the row's results from its state. Launch: any
// 1-D geometry (a grid-stride loop, 64-bit index).
extern "C" __global__ void logprob_finish(float *__restrict__ logprob, float *__restrict__ entropy,
                                          float *__restrict__ lse, const float *__restrict__ state,
                                          const int *__restrict__ targets, int N) {
	for (long long n = blockIdx.x * (long long)blockDim.x + threadIdx.x; n < N; n += (long long)gridDim.x * blockDim.x) {
		const float *st = state + 4 * (long long)n;
		const float logS = logf(st[1]), l = st[0] + logS;
		lse[n] = l;
		entropy[n] = logS - st[2] / st[1];
		logprob[n] = targets[n] < 0 ? 0.0f : st[3] - l;
	}
}
