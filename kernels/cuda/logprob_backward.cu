// The row part of the chunked logprob backward (kernels.Backend.
// LogprobBackward and LogprobBackwardBF16's contracts): the host
// recomputes a chunk's logits z [N,len] (vocabulary columns j0 … j0+len−1)
// with a GEMM, logprob_dz turns them into their gradient in place, and two
// more GEMMs add dz·weight into dhidden and dzᵀ·hidden into dweight. With
// p = e^(z − lse[n]), H = entropy[n], t = targets[n]:
//
//	dz_j = dlogprob[n]·([j0+j = t] − p) − dentropy[n]·p·(z_j − lse[n] + H)
//
// dlogprob and dentropy may be null (zero); rows with t < 0 get no logprob
// term. Launch: any 1-D geometry (a grid-stride loop over N·len, 64-bit
// index). Never run on a GPU: tested on the CPU through
// cpushim/cuda_cpu.h, with the GEMMs from kernels/ref, against
// kernels/ref.
extern "C" __global__ void logprob_dz(float *__restrict__ z, const float *__restrict__ dlogprob,
                                      const float *__restrict__ dentropy, const float *__restrict__ lse,
                                      const float *__restrict__ entropy, const int *__restrict__ targets,
                                      int N, int len, int j0) {
	const long long total = (long long)N * len;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
		const int n = (int)(i / len), j = (int)(i % len), t = targets[n];
		const float l = lse[n], y = z[i] - l, p = expf(y);
		float g = 0.0f;
		if (dlogprob && t >= 0) g = dlogprob[n] * ((j0 + j == t ? 1.0f : 0.0f) - p);
		if (dentropy) g -= dentropy[n] * p * (y + entropy[n]);
		z[i] = g;
	}
}

// logprob_bwd_expect_bf16 is logprob.cu's logprob_backward_expect
// (kernels.Backend.LogprobBackwardExpectBF16) with a bfloat16 weight [V,C]
// widened exactly: dhidden[n] += dlogprob[n]·(weight[t] − expect[n]) for
// rows with t = targets[n] in [0, V). Launch: grid N (one block per row),
// block of any size.
extern "C" __global__ void logprob_bwd_expect_bf16(float *__restrict__ dhidden, const float *__restrict__ dlogprob,
                                                        const float *__restrict__ expect,
                                                        const unsigned short *__restrict__ weight,
                                                        const int *__restrict__ targets, int C, int V) {
	const int n = blockIdx.x, t = targets[n];
	if (t < 0 || t >= V) return;  // the whole block: no barrier follows
	const float d = dlogprob[n];
	const long long row = (long long)n * C;
	const unsigned short *w = weight + (long long)t * C;
	for (int c = threadIdx.x; c < C; c += blockDim.x)
		dhidden[row + c] += d * (__uint_as_float((unsigned)w[c] << 16) - expect[row + c]);
}
