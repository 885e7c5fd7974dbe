// Kernels that test cpushim/cuda_cpu.h itself (not Hone's kernels): warp
// shuffles and per-block shared memory with known results, and barriers and
// shuffles in divergent code, which the shim must refuse. Launched with
// blocks of 64 threads (two full warps); out holds 4 values per thread.

extern "C" __global__ void shuffles(float *out) {
	const int t = threadIdx.x, n = blockDim.x;
	const float v = (float)(blockIdx.x * 1000 + t);
	float *o = out + blockIdx.x * 4 * n;
	o[t] = __shfl_down_sync(0xffffffffu, v, 3);
	o[n + t] = __shfl_up_sync(0xffffffffu, v, 2);
	o[2 * n + t] = __shfl_xor_sync(0xffffffffu, v, 5);
	o[3 * n + t] = __shfl_sync(0xffffffffu, v, 7, 16);
}

extern "C" __global__ void shared_per_block(float *out) {
	__shared__ float s[1024];
	const int t = threadIdx.x, n = blockDim.x;
	s[t] = (float)(blockIdx.x * 1000 + t);
	__syncthreads();
	out[blockIdx.x * 4 * n + t] = s[n - 1 - t];
}

extern "C" __global__ void barrier_in_branch(float *out) {
	if (threadIdx.x < 16) __syncthreads();
	out[threadIdx.x] = 1;
}

extern "C" __global__ void barrier_two_places(float *out) {
	if (threadIdx.x < 32) {
		__syncthreads();
	} else {
		__syncthreads();
	}
	out[threadIdx.x] = 1;
}

extern "C" __global__ void shuffle_in_branch(float *out) {
	float v = (float)threadIdx.x;
	if (threadIdx.x % 32 < 16) v = __shfl_down_sync(0xffffffffu, v, 1);
	out[threadIdx.x] = v;
}

extern "C" __global__ void shuffle_then_barrier(float *out) {
	float v = (float)threadIdx.x;
	if (threadIdx.x % 32 < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
	__syncthreads();
	out[threadIdx.x] = v;
}

// atomic_add: every thread of both blocks adds 1 to out[0] and keeps the
// value it saw at out[1 + 64·block + thread]: a permutation of 0…127.
extern "C" __global__ void atomic_add(float *out) {
	out[1 + blockIdx.x * blockDim.x + threadIdx.x] = atomicAdd(&out[0], 1.0f);
}
