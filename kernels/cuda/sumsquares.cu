// kernels.Backend.SumSquares: Σ x[i]² over n float32 values, each square
// and every sum in double (a float32 square is exact in double), in a
// fixed order for a given n, so the result is deterministic:
//
//	sum_squares_partial: block b's threads take x[i] for i = b·256 + t,
//	    then every gridDim·256 further, each summing in index order; the
//	    block then adds its 256 sums by a fixed binary tree in shared
//	    memory into partial[b].
//	sum_squares_final: one block of 256 threads adds partial[0..m) the
//	    same way (thread t takes t, t+256, …; then the tree) into out[0].
//
// A NaN or ±Inf value makes its square NaN or +Inf, and every sum after it
// NaN or +Inf (squares are ≥ 0, so +Inf never meets −Inf). Launch:
// partial with 256 threads and any grid (Ops: up to 256 blocks), final
// with one block of 256. Barriers are uniform across the block. Never run
// on a GPU: tested on the CPU through cpushim/cuda_cpu.h against
// kernels/ref.

#define SUMSQ_THREADS 256

__device__ static void sumsq_block_tree(double *s, int t) {
	for (int w = SUMSQ_THREADS / 2; w > 0; w /= 2) {
		__syncthreads();
		if (t < w) s[t] += s[t + w];
	}
	__syncthreads();
}

extern "C" __global__ void sum_squares_partial(double *__restrict__ partial, const float *__restrict__ x, int n) {
	__shared__ double s[SUMSQ_THREADS];
	const int t = threadIdx.x;
	double acc = 0.0;
	for (long long i = blockIdx.x * (long long)SUMSQ_THREADS + t; i < n; i += (long long)gridDim.x * SUMSQ_THREADS) {
		const double v = (double)x[i];
		acc += v * v;
	}
	s[t] = acc;
	sumsq_block_tree(s, t);
	if (t == 0) partial[blockIdx.x] = s[0];
}

extern "C" __global__ void sum_squares_final(double *__restrict__ out, const double *__restrict__ partial, int m) {
	__shared__ double s[SUMSQ_THREADS];
	const int t = threadIdx.x;
	double acc = 0.0;
	for (int i = t; i < m; i += SUMSQ_THREADS) acc += partial[i];
	s[t] = acc;
	sumsq_block_tree(s, t);
	if (t == 0) out[0] = s[0];
}
