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

// wmmaA, wmmaB and wmmaC are the operands of wmma_product in block b,
// before rounding to bfloat16 (shim_test.go forms the same values).
__device__ float wmmaA(int b, int r, int k) { return (float)((r * 7 + k * 13 + b * 5) % 23 - 11) / 7.0f; }
__device__ float wmmaB(int b, int k, int c) { return (float)((k * 11 + c * 3 + b) % 19 - 9) / 5.0f; }
__device__ float wmmaC(int r, int c) { return (float)(r - c) / 3.0f; }

// wmma_product: warp 0 of block b forms one 16×16×16 product on bfloat16
// operands with a float accumulator into out[256·b + …]. Block 0: A
// row_major, B col_major, the accumulator loaded row-major from C, stored
// row-major. Block 1: A col_major, B row_major, the accumulator filled
// with 0.25, stored column-major (out[256 + 16·c + r]).
extern "C" __global__ void wmma_product(float *out) {
	namespace wmma = nvcuda::wmma;
	__shared__ __align__(32) __nv_bfloat16 a[16 * 24], bm[16 * 24];
	__shared__ __align__(32) float c[16 * 20];
	const int b = blockIdx.x;
	for (int e = threadIdx.x; e < 256; e += blockDim.x) {
		const int i = e / 16, j = e % 16;  // A (i, j), B (i, j), C (i, j)
		if (b == 0) {
			a[i * 24 + j] = __float2bfloat16_rn(wmmaA(b, i, j));
			bm[j * 24 + i] = __float2bfloat16_rn(wmmaB(b, i, j));  // col_major: (k, n) at n·ld + k
		} else {
			a[j * 24 + i] = __float2bfloat16_rn(wmmaA(b, i, j));  // col_major: (m, k) at k·ld + m
			bm[i * 24 + j] = __float2bfloat16_rn(wmmaB(b, i, j));
		}
		c[i * 20 + j] = wmmaC(i, j);
	}
	__syncthreads();
	if (threadIdx.x / 32 != 0) return;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
	if (b == 0) {
		wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
		wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
		wmma::load_matrix_sync(fa, a, 24);
		wmma::load_matrix_sync(fb, bm, 24);
		wmma::load_matrix_sync(acc, c, 20, wmma::mem_row_major);
		wmma::mma_sync(acc, fa, fb, acc);
		wmma::store_matrix_sync(out, acc, 16, wmma::mem_row_major);
	} else {
		wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::col_major> fa;
		wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
		wmma::load_matrix_sync(fa, a, 24);
		wmma::load_matrix_sync(fb, bm, 24);
		wmma::fill_fragment(acc, 0.25f);
		wmma::mma_sync(acc, fa, fb, acc);
		wmma::store_matrix_sync(out + 256, acc, 16, wmma::mem_col_major);
	}
}

// bf16_round: out[i] = x rounded to bfloat16 and widened, for x = 1 +
// i·2⁻¹⁰ (negated for odd i): the low half of x's bits steps by 0x2000, so
// ties (0x8000) with an even and an odd upper half are among them.
extern "C" __global__ void bf16_round(float *out) {
	for (int p = 0; p < 4; p++) {
		const int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4 + p;
		const float x = __uint_as_float(0x3f800000u + (unsigned)i * 0x2000u) * (i % 2 ? -1.0f : 1.0f);
		out[i] = __bfloat162float(__float2bfloat16_rn(x));
	}
}

// wmma_in_branch: an mma_sync that half of a warp reaches.
extern "C" __global__ void wmma_in_branch(float *out) {
	namespace wmma = nvcuda::wmma;
	wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
	wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
	wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
	wmma::fill_fragment(fa, __float2bfloat16_rn(1.0f));
	wmma::fill_fragment(fb, __float2bfloat16_rn(1.0f));
	wmma::fill_fragment(acc, 0.0f);
	if (threadIdx.x % 32 < 16) wmma::mma_sync(acc, fa, fb, acc);
	out[threadIdx.x] = acc.x[0];
}

// mmaA, mmaB and mmaC are the operands of mma_product in warp w of block
// b, before rounding to bfloat16 (shim_test.go forms the same values).
__device__ float mmaA(int b, int w, int m, int k) { return (float)((m * 5 + k * 11 + b * 3 + w * 7) % 29 - 14) / 9.0f; }
__device__ float mmaB(int b, int w, int k, int n) { return (float)((k * 13 + n * 7 + b + w * 5) % 17 - 8) / 3.0f; }
__device__ float mmaC(int b, int w, int m, int n) { return (float)(m * 8 + n - 60 + b + w) / 4.0f; }

// mma_product: warp w of block b forms one m16n8k16 product D = A·B + C
// with mmaBf16 from fragments each lane builds by the layout mma.cuh
// documents, and writes D (m, n) to out[256·b + 128·w + 8·m + n].
extern "C" __global__ void mma_product(float *out) {
	const int b = blockIdx.x, w = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
	unsigned a[4], bb[2];
	float c[4], d[4];
	for (int r = 0; r < 4; r++) {
		const int m = g + 8 * (r % 2), k = 2 * t + 8 * (r / 2);
		a[r] = mmaPack(mmaA(b, w, m, k), mmaA(b, w, m, k + 1));
	}
	for (int r = 0; r < 2; r++) {
		const int k = 2 * t + 8 * r;
		bb[r] = mmaPack(mmaB(b, w, k, g), mmaB(b, w, k + 1, g));
	}
	for (int e = 0; e < 4; e++) c[e] = mmaC(b, w, g + 8 * (e / 2), 2 * t + e % 2);
	mmaBf16(d, a, bb, c);
	for (int e = 0; e < 4; e++) out[256 * b + 128 * w + 8 * (g + 8 * (e / 2)) + 2 * t + e % 2] = d[e];
}

// ldmatrixRow is the tile row of row rr of matrix i that warp w points
// its lanes at in ldmatrix_layout, and ldmatrixCol that matrix's first
// column: warp 0 the four 8×8 quarters in column-major order (an A
// fragment's), warp 1 the quarters in row-major order with each matrix's
// rows reversed.
__device__ int ldmatrixRow(int w, int i, int rr) { return w == 0 ? 8 * (i % 2) + rr : 8 * (i / 2) + 7 - rr; }
__device__ int ldmatrixCol(int w, int i) { return w == 0 ? 8 * (i / 2) : 8 * (i % 2); }

// ldmatrix_layout: a 16×16 bf16 tile (row stride 24) holding 16·r + c at
// (r, c), loaded by warp w of block b with ldmatrixX4 (block 0) or
// ldmatrixX4Trans (block 1), −1 in the padding; lane l writes register i
// as lo + 256·hi (its two halves) to out[256·b + 128·w + 4·l + i].
extern "C" __global__ void ldmatrix_layout(float *out) {
	__shared__ __align__(16) __nv_bfloat16 tile[16 * 24];
	const int b = blockIdx.x, w = threadIdx.x / 32, lane = threadIdx.x % 32;
	for (int e = threadIdx.x; e < 16 * 24; e += blockDim.x) tile[e] = __float2bfloat16_rn(e % 24 < 16 ? (float)(16 * (e / 24) + e % 24) : -1.0f);
	__syncthreads();
	const int i = lane / 8;
	const __nv_bfloat16 *row = tile + 24 * ldmatrixRow(w, i, lane % 8) + ldmatrixCol(w, i);
	unsigned r[4];
	if (b == 0) ldmatrixX4(r, row);
	else ldmatrixX4Trans(r, row);
	for (int x = 0; x < 4; x++) {
		const float lo = __bfloat162float(__nv_bfloat16{(unsigned short)(r[x] & 0xffffu)});
		const float hi = __bfloat162float(__nv_bfloat16{(unsigned short)(r[x] >> 16)});
		out[256 * b + 128 * w + 4 * lane + x] = lo + 256.0f * hi;
	}
}

// mma_in_branch: an mmaBf16 that half of a warp reaches.
extern "C" __global__ void mma_in_branch(float *out) {
	const unsigned a[4] = {0, 0, 0, 0}, bb[2] = {0, 0};
	float d[4] = {0, 0, 0, 0};
	if (threadIdx.x % 32 < 16) mmaBf16(d, a, bb, d);
	out[threadIdx.x] = d[0];
}

// dynamic_shared: the block's HONE_DYNAMIC_SHARED buffer (shim_main
// launches it with 64 floats, 256 bytes) is the block's own, holds 0xff
// bytes (NaN) before the block writes it, and is the launch's size,
// 16-byte aligned.
extern "C" __global__ void dynamic_shared(float *out) {
	HONE_DYNAMIC_SHARED(float, s);
	const int t = threadIdx.x, n = blockDim.x;
	float *o = out + blockIdx.x * 4 * n;
	const float before = s[t];
	__syncthreads();
	s[t] = (float)(blockIdx.x * 1000 + t);
	__syncthreads();
	o[t] = s[n - 1 - t];
	o[n + t] = before != before ? 1.0f : 0.0f;
	if (t == 0) {
		o[2 * n] = (float)hone_cuda::dynamicSharedBytes();
		o[2 * n + 1] = (float)(reinterpret_cast<uintptr_t>(s) % 16);
	}
}

// dynamic_shared_overrun reads the float just past the launch's 256 bytes.
extern "C" __global__ void dynamic_shared_overrun(float *out) {
	HONE_DYNAMIC_SHARED(float, s);
	out[threadIdx.x] = s[blockDim.x];
}

// The race kernels leave out a barrier that a GPU needs, and their _synced
// twins have it: thread t writes its slot of shared memory, then reads
// another thread's. The shim runs a block's threads in order, so the racy
// ones mostly give the twins' values here; under ThreadSanitizer
// (shim_tsan_test.go) the racy ones must be reported and the twins not.
// o[t] is the value read: 1000·block + the thread that wrote it.

// raceBlock: threads 32…63 read what thread t−32, in the other warp, wrote
// (a __syncthreads is needed between).
__device__ void raceBlock(float *out, bool synced) {
	__shared__ float s[64];
	const int t = threadIdx.x;
	s[t] = (float)(blockIdx.x * 1000 + t);
	if (synced) __syncthreads();
	out[blockIdx.x * 4 * blockDim.x + t] = t >= 32 ? s[t - 32] : s[t];
}
extern "C" __global__ void race_block(float *out) { raceBlock(out, false); }
extern "C" __global__ void race_block_synced(float *out) { raceBlock(out, true); }

// raceWarp: lane l > 0 reads what lane l−1 of its warp wrote. Since Volta
// the lanes of a warp are not in lockstep (the CUDA C++ Programming Guide,
// "Independent Thread Scheduling"): the exchange needs a __syncwarp.
__device__ void raceWarp(float *out, bool synced) {
	__shared__ float s[64];
	const int t = threadIdx.x;
	s[t] = (float)(blockIdx.x * 1000 + t);
	if (synced) __syncwarp();
	out[blockIdx.x * 4 * blockDim.x + t] = t % 32 > 0 ? s[t - 1] : s[t];
}
extern "C" __global__ void race_warp(float *out) { raceWarp(out, false); }
extern "C" __global__ void race_warp_synced(float *out) { raceWarp(out, true); }

// raceAfterBarrier: the write comes after a barrier and the read of
// thread t^32's slot with no barrier between; the last thread to reach the
// first barrier runs on to the second before the others leave the first,
// which must not order its writes before their reads.
__device__ void raceAfterBarrier(float *out, bool synced) {
	__shared__ float s[64];
	const int t = threadIdx.x;
	s[t] = -1;
	__syncthreads();
	s[t] = (float)(blockIdx.x * 1000 + t);
	if (synced) __syncthreads();
	out[blockIdx.x * 4 * blockDim.x + t] = s[t ^ 32];
	__syncthreads();
}
extern "C" __global__ void race_after_barrier(float *out) { raceAfterBarrier(out, false); }
extern "C" __global__ void race_after_barrier_synced(float *out) { raceAfterBarrier(out, true); }

// raceAfterAtomic: an atomicAdd by both threads between the write and the
// read orders nothing (CUDA's atomicAdd is relaxed): thread t > 0 reads
// thread t−1's slot, which needs a __syncthreads.
__device__ void raceAfterAtomic(float *out, bool synced) {
	__shared__ float s[64];
	const int t = threadIdx.x, n = blockDim.x;
	float *o = out + blockIdx.x * 4 * n;
	s[t] = (float)(blockIdx.x * 1000 + t);
	atomicAdd(&o[3 * n], 1.0f);
	if (synced) __syncthreads();
	o[t] = t > 0 ? s[t - 1] : s[t];
}
extern "C" __global__ void race_after_atomic(float *out) { raceAfterAtomic(out, false); }
extern "C" __global__ void race_after_atomic_synced(float *out) { raceAfterAtomic(out, true); }

// raceAfterShuffle: a shuffle between the write and the read waits for the
// warp but orders no memory (the PTX ISA promises ordering of bar.warp.sync,
// __syncwarp, not of shfl.sync): lane l > 0 reads lane l−1's slot.
__device__ void raceAfterShuffle(float *out, bool synced) {
	__shared__ float s[64];
	const int t = threadIdx.x;
	s[t] = (float)(blockIdx.x * 1000 + t);
	const float x = __shfl_xor_sync(0xffffffffu, s[t], 1);
	if (synced) __syncwarp();
	float *o = out + blockIdx.x * 4 * blockDim.x;
	o[t] = t % 32 > 0 ? s[t - 1] : s[t];
	o[blockDim.x + t] = x;
}
extern "C" __global__ void race_after_shuffle(float *out) { raceAfterShuffle(out, false); }
extern "C" __global__ void race_after_shuffle_synced(float *out) { raceAfterShuffle(out, true); }
