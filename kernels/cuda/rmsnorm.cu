// RMSNorm forward (kernels.Backend.RMSNormForward's contract):
//
//	rstd[n]  = 1 / sqrt(mean_c(inp[n,c]²) + eps)
//	out[n,c] = inp[n,c] · rstd[n] · weight[c]
//
// out [N,C], rstd [N], inp [N,C], weight [C]. Launch: grid N (one block per
// row), block of any multiple of 32 threads up to 1024. The sum of squares
// is reduced in f32: per thread over a strided slice of the row, then in
// each warp by shuffles, then across warps through shared memory. Every
// barrier and shuffle is reached by the whole block or by a whole warp
// (warp 0's branch), as kernels/cuda/cpushim requires and CUDA expects.
// Compiled to PTX (ptx/, `make ptx`) but not yet run on a GPU: tested on
// the CPU through cpushim/cuda_cpu.h against kernels/ref.

__device__ __forceinline__ float warpSum(float v) {
	for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
	return v;
}

extern "C" __global__ void rmsnorm_forward(float *__restrict__ out, float *__restrict__ rstd,
                                           const float *__restrict__ inp, const float *__restrict__ weight,
                                           int C, float eps) {
	__shared__ float partial[32];  // one sum per warp
	const int n = blockIdx.x;
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
	const float *x = inp + (long long)n * C;

	float ss = 0.0f;
	for (int c = threadIdx.x; c < C; c += blockDim.x) ss += x[c] * x[c];
	ss = warpSum(ss);
	if (lane == 0) partial[warp] = ss;
	__syncthreads();
	if (warp == 0) {
		ss = warpSum(lane < warps ? partial[lane] : 0.0f);
		if (lane == 0) partial[0] = ss;
	}
	__syncthreads();
	const float r = rsqrtf(partial[0] / (float)C + eps);
	if (threadIdx.x == 0) rstd[n] = r;
	for (int c = threadIdx.x; c < C; c += blockDim.x) out[(long long)n * C + c] = x[c] * r * weight[c];
}
