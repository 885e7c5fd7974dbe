// RMSNorm forward and backward (kernels.Backend.RMSNormForward and
// RMSNormBackward's contracts):
//
//	rstd[n]  = 1 / sqrt(mean_c(inp[n,c]²) + eps)
//	out[n,c] = inp[n,c] · rstd[n] · weight[c]
//
// and, with x̂ = inp·rstd and g = dout·weight,
//
//	dinp[n,c]  += rstd[n]·(g − x̂·mean_c(g·x̂))
//	dweight[c] += Σ_n dout[n,c]·x̂[n,c]
//
// out, inp, dinp, dout [N,C]; rstd [N]; weight, dweight [C]. Sums are
// reduced in f32: per thread over a strided slice of the row, then in each
// warp by shuffles, then across warps through shared memory (blockSum).
// Every barrier and shuffle is reached by the whole block or by a whole
// warp, as kernels/cuda/cpushim requires and CUDA expects. Compiled to PTX
// (ptx/, `make ptx`) but never run on a GPU: tested on the CPU through
// cpushim/cuda_cpu.h against kernels/ref.
#include "bf16round.cuh"
#include "common.cuh"

// rmsnormRow is rmsnorm_forward's row n, and its bf16 copy unless out_bf
// is null; out null: the bf16 copy and rstd only. With res not null the row normalised is inp + res, written to
// sum first (rmsnorm_forward_add; sum may be inp or res, so neither is
// __restrict__): each thread adds, stores and squares its own columns in
// the order rmsnorm_forward squares them, then reads back only what it
// stored, so the sum, rstd and out are the bits of add followed by
// rmsnorm_forward.
__device__ __forceinline__ void rmsnormRow(int n, float *__restrict__ out, float *__restrict__ rstd,
                                           unsigned short *__restrict__ out_bf, float *sum, const float *inp,
                                           const float *res, const float *__restrict__ weight, int C, float eps,
                                           float *scratch) {
	const long long row = (long long)n * C;
	const float *x = inp + row;

	float ss = 0.0f;
	if (res == nullptr) {
		for (int c = threadIdx.x; c < C; c += blockDim.x) ss += x[c] * x[c];
	} else {
		for (int c = threadIdx.x; c < C; c += blockDim.x) {
			const float v = x[c] + res[row + c];
			sum[row + c] = v;
			ss += v * v;
		}
		x = sum + row;
	}
	ss = blockSum(ss, scratch);
	const float r = rsqrtf(ss / (float)C + eps);
	if (threadIdx.x == 0) rstd[n] = r;
	for (int c = threadIdx.x; c < C; c += blockDim.x) {
		const float v = x[c] * r * weight[c];
		if (out != nullptr) out[row + c] = v;
		if (out_bf != nullptr) out_bf[row + c] = bf16Round(v);
	}
}

// rmsnorm_forward: grid N (one block per row), block of any multiple of 32
// threads up to 1024.
extern "C" __global__ void rmsnorm_forward(float *__restrict__ out, float *__restrict__ rstd,
                                           const float *__restrict__ inp, const float *__restrict__ weight,
                                           int C, float eps) {
	__shared__ float scratch[32];
	rmsnormRow(blockIdx.x, out, rstd, nullptr, nullptr, inp, nullptr, weight, C, eps, scratch);
}

// rmsnorm_forward_bf16 is rmsnorm_forward (the same code, rmsnormRow) that
// also writes out rounded to bfloat16 into out_bf (f32_to_bf16's rounding,
// bf16round.cuh): the bf16 precision's products of the normed input (q, k,
// v; gate, up) then multiply that copy (LinearForwardBF16Rounded) instead
// of reading out again to round it. out may be null: then only out_bf and
// rstd are written, the bits they have with it (the backward's recompute
// of the normed input as bfloat16 only, kernels.NormInputRounder; 2 bytes
// a value written where out_bf and out wrote 6). Same geometry.
extern "C" __global__ void rmsnorm_forward_bf16(float *__restrict__ out, float *__restrict__ rstd,
                                                unsigned short *__restrict__ out_bf, const float *__restrict__ inp,
                                                const float *__restrict__ weight, int C, float eps) {
	__shared__ float scratch[32];
	rmsnormRow(blockIdx.x, out, rstd, out_bf, nullptr, inp, nullptr, weight, C, eps, scratch);
}

// rmsnorm_forward_add is a residual add and the RMSNorm of its sum in one
// pass: sum = inp + res, then rmsnorm_forward_bf16 of sum (out_bf may be
// null: rmsnorm_forward's outputs only), the bits of add followed by that
// kernel (rmsnormRow). sum may be inp or res (the block's residual stream
// updated in place): the pair read and wrote the sum in two passes, this
// reads inp and res and writes sum once, [N, C] float32 less read and one
// launch less. Same geometry as rmsnorm_forward.
extern "C" __global__ void rmsnorm_forward_add(float *sum, float *__restrict__ out, float *__restrict__ rstd,
                                               unsigned short *__restrict__ out_bf, const float *inp,
                                               const float *res, const float *__restrict__ weight, int C,
                                               float eps) {
	__shared__ float scratch[32];
	rmsnormRow(blockIdx.x, out, rstd, out_bf, sum, inp, res, weight, C, eps, scratch);
}

// rmsnormBackwardRow accumulates row n of dinp, and writes its new values
// rounded to bfloat16 into dinp_bf unless that is null.
__device__ __forceinline__ void rmsnormBackwardRow(int n, float *__restrict__ dinp, unsigned short *__restrict__ dinp_bf,
                                                   const float *__restrict__ dout, const float *__restrict__ rstd,
                                                   const float *__restrict__ inp, const float *__restrict__ weight,
                                                   int C, float *scratch) {
	const long long row = (long long)n * C;
	const float *x = inp + row, *dy = dout + row;
	const float r = rstd[n];

	float dot = 0.0f;  // Σ_c g·x̂
	for (int c = threadIdx.x; c < C; c += blockDim.x) dot += dy[c] * weight[c] * (x[c] * r);
	const float mean = blockSum(dot, scratch) / (float)C;
	for (int c = threadIdx.x; c < C; c += blockDim.x) {
		const float xh = x[c] * r;
		const float v = dinp[row + c] + r * (dy[c] * weight[c] - xh * mean);
		dinp[row + c] = v;
		if (dinp_bf != nullptr) dinp_bf[row + c] = bf16Round(v);
	}
}

// rmsnorm_backward accumulates dinp: grid N (one block per row), block of
// any multiple of 32 threads up to 1024.
extern "C" __global__ void rmsnorm_backward(float *__restrict__ dinp, const float *__restrict__ dout,
                                            const float *__restrict__ rstd, const float *__restrict__ inp,
                                            const float *__restrict__ weight, int C) {
	__shared__ float scratch[32];
	rmsnormBackwardRow(blockIdx.x, dinp, nullptr, dout, rstd, inp, weight, C, scratch);
}

// rmsnorm_backward_bf16 is rmsnorm_backward (the same code,
// rmsnormBackwardRow) that also writes dinp's new values rounded to
// bfloat16 into dinp_bf (f32_to_bf16's rounding): in a pre-norm block the
// gradient the post-attention norm's backward leaves is the o projection's
// dout, whose base product then takes that copy
// (LinearBackwardBF16Rounded) instead of reading the float32 gradient
// again to round it. Same geometry.
extern "C" __global__ void rmsnorm_backward_bf16(float *__restrict__ dinp, unsigned short *__restrict__ dinp_bf,
                                                 const float *__restrict__ dout, const float *__restrict__ rstd,
                                                 const float *__restrict__ inp, const float *__restrict__ weight,
                                                 int C) {
	__shared__ float scratch[32];
	rmsnormBackwardRow(blockIdx.x, dinp, dinp_bf, dout, rstd, inp, weight, C, scratch);
}

// rmsnorm_backward_dweight accumulates dweight, deterministically (no
// atomics): grid ceil(C/32), block (32, 8). Thread (tx, ty) of block b sums
// column 32·b + tx over rows ty, ty+8, …; the 8 partial sums are then added
// in a fixed order through shared memory.
extern "C" __global__ void rmsnorm_backward_dweight(float *__restrict__ dweight, const float *__restrict__ dout,
                                                    const float *__restrict__ rstd, const float *__restrict__ inp,
                                                    int N, int C) {
	__shared__ float partial[8][32];
	const int c = blockIdx.x * 32 + threadIdx.x;
	float s = 0.0f;
	if (c < C)
		for (int n = threadIdx.y; n < N; n += 8) {
			const long long i = (long long)n * C + c;
			s += dout[i] * (inp[i] * rstd[n]);
		}
	partial[threadIdx.y][threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.y == 0 && c < C) {
		float sum = 0.0f;
		for (int y = 0; y < 8; y++) sum += partial[y][threadIdx.x];
		dweight[c] += sum;
	}
}
