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

// sum_squares_segments: out[g] = Σ x[seg[2g] + i]² over i < seg[2g+1],
// for segment g = blockIdx.x, with the bits sum_squares_partial and
// sum_squares_final give for that segment alone: the block plays the
// partial's grid of m = min(256, ⌈n/256⌉) blocks one after another (its
// thread t summing exactly what thread t of block b would, the same tree
// into partial[b], kept in shared memory), then the final's reduction of
// the m partial sums. One launch for many tensors (train/trainer's gradient
// norm and weight check over a flat adapter) where the pair a tensor
// launches twice each. The price is parallelism: one block a segment, each
// reading its whole segment. Launch: one block of 256 threads a segment.
// The loop over the m virtual blocks is uniform across the block (m is the
// segment's), so its barriers are.
extern "C" __global__ void sum_squares_segments(double *__restrict__ out, const float *__restrict__ x, const int *__restrict__ seg) {
	__shared__ double s[SUMSQ_THREADS];
	__shared__ double partial[SUMSQ_THREADS];  // Ops caps m at 256 = SUMSQ_THREADS
	const int t = threadIdx.x;
	const int g = blockIdx.x;
	const float *xs = x + seg[2 * g];
	const int n = seg[2 * g + 1];
	const int blocks = (n + SUMSQ_THREADS - 1) / SUMSQ_THREADS;
	const int m = blocks < SUMSQ_THREADS ? blocks : SUMSQ_THREADS;
	for (int b = 0; b < m; b++) {
		// sum_squares_partial's block b of a grid of m.
		double acc = 0.0;
		for (long long i = b * (long long)SUMSQ_THREADS + t; i < n; i += (long long)m * SUMSQ_THREADS) {
			const double v = (double)xs[i];
			acc += v * v;
		}
		s[t] = acc;  // after the last tree's closing barrier: thread 0 alone reads s[0] after it, and only thread 0 writes s[0]
		sumsq_block_tree(s, t);
		if (t == 0) partial[b] = s[0];
	}
	__syncthreads();  // partial[] written by thread 0, read by all below
	// sum_squares_final over partial[0..m).
	double acc = 0.0;
	for (int i = t; i < m; i += SUMSQ_THREADS) acc += partial[i];
	s[t] = acc;
	sumsq_block_tree(s, t);
	if (t == 0) out[g] = s[0];
}
