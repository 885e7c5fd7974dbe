// kernels.RowChooser.ChooseRows: the next token of many sequences chosen on
// the device from their logits rows, so that a few values a row cross to
// the host instead of the whole row (serve/engine's decode step; issue #28
// measured the host's read of [32, 151936] logits at 44% of a decode step
// on an H200). One block per choice, any multiple of 32 threads up to 1024
// (Ops launches 1024); row rows[b] of logits [R, V] gives choice b:
//
//	max, argmax: the largest entry and the lowest id holding it, as the
//	    host's scan `if v > row[best] { best = i }` from best = 0 finds it:
//	    NaN entries are passed over, and a row whose entry 0 is NaN gives 0.
//	lse: log Σ_j e^(row[j] − max) + max, each exponential as ExpShift forms
//	    it (the argument (row[j] − max)·1 in float, 0 below −87) and the
//	    sum in double; 0 when max is −Inf (the sampler's logSumExp).
//	id: with inv[b] = 0 the argmax (greedy); otherwise a draw from
//	    softmax(row·inv[b]) by the inverse of its CDF in id order at the
//	    uniform u[b] ∈ [0, 1): with e_j = e^((row[j] − max)·inv[b]) (as
//	    ExpShift, in float) and S = Σ e_j, the lowest j with e_j ≠ 0 and
//	    Σ_{k≤j} e_k > u·S, the sums in double (the host's sampleAll, up to
//	    the order of the additions). A row whose max is −Inf gives 0.
//
// The row is cut into one contiguous segment a warp, whose lanes read it
// 128 consecutive entries at a time (four loads in flight a lane): the
// segment sums locate the segment the draw falls in, and only its warp
// scans it again, by warp prefix sums, for the token. Every reduction is a
// fixed tree or a fixed sequence (no atomics), so a choice depends only on
// its row, inv and u and on the block size. Barriers are reached by the
// whole block and shuffles by whole warps: the scan's warp-uniform branch
// holds shuffles only. Not run on a GPU yet: tested on the CPU through
// cpushim/cuda_cpu.h (the emulated device of cudafake) against a float64
// host computation.
#include "common.cuh"

#define CHOOSE_UNROLL 4  // entries a lane reads per step of a segment: CHOOSE_UNROLL·32 consecutive

// chooseExp is ExpShift's exponential: e^((x − m)·inv), the argument formed
// in float, 0 below −87 (−Inf included).
__device__ __forceinline__ float chooseExp(float x, float m, float inv) {
	const float a = (x - m) * inv;
	return a >= -87.0f ? expf(a) : 0.0f;
}

// imin and imax: the shim has no min and max of int.
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }

// better reports whether (v, i) ranks above (w, j): larger value, then
// lower id. A total order, so the reduction's tree does not matter.
__device__ __forceinline__ bool chooseBetter(float v, int i, float w, int j) {
	return v > w || (v == w && i < j);
}

// chooseSegment is the length of each warp's segment: V split over the
// block's warps, rounded up to whole steps of CHOOSE_UNROLL·32 entries.
__device__ __forceinline__ int chooseSegment(int V, int warps) {
	const int step = CHOOSE_UNROLL * 32;
	const int per = (V + warps - 1) / warps;
	return (per + step - 1) / step * step;
}

extern "C" __global__ void choose_rows(int *__restrict__ ids, float *__restrict__ stats, const float *__restrict__ logits,
                                       const int *__restrict__ rows, const float *__restrict__ inv, const double *__restrict__ u,
                                       int V) {
	__shared__ float sv[32];
	__shared__ int si[32];
	__shared__ double sum1[32], sumT[32];
	__shared__ int chosen;
	const int t = threadIdx.x, lane = t % 32, warp = t / 32, warps = blockDim.x / 32;
	const float *x = logits + (long long)rows[blockIdx.x] * V;
	const float it = inv[blockIdx.x];

	// max and argmax: NaN counts as −Inf, and a thread's first entry is its
	// best so far, so that a row of −Inf gives its lowest id.
	float bv = -INFINITY;
	int bi = V;
	for (int i = t; i < V; i += blockDim.x) {
		float v = x[i];
		if (v != v) v = -INFINITY;
		if (v > bv || bi == V) {
			bv = v;
			bi = i;
		}
	}
	for (int off = 16; off > 0; off >>= 1) {
		const float ov = __shfl_xor_sync(0xffffffffu, bv, off);
		const int oi = __shfl_xor_sync(0xffffffffu, bi, off);
		if (chooseBetter(ov, oi, bv, bi)) {
			bv = ov;
			bi = oi;
		}
	}
	if (lane == 0) {
		sv[warp] = bv;
		si[warp] = bi;
	}
	__syncthreads();
	bv = sv[0];
	bi = si[0];
	for (int w = 1; w < warps; w++) {
		if (chooseBetter(sv[w], si[w], bv, bi)) {
			bv = sv[w];
			bi = si[w];
		}
	}
	const float m = bv;
	const int argmax = x[0] != x[0] ? 0 : bi;  // the host's scan never leaves a NaN at 0
	if (m == -INFINITY) {  // uniform: nothing has probability
		if (t == 0) {
			ids[blockIdx.x] = it == 0.0f ? argmax : 0;
			stats[3 * blockIdx.x] = x[ids[blockIdx.x]];
			stats[3 * blockIdx.x + 1] = m;
			stats[3 * blockIdx.x + 2] = 0.0f;
		}
		return;
	}

	// The sums of e^(x − m) (for lse) and e^((x − m)·inv) (for the draw)
	// over each warp's segment: lane-strided within steps of 128
	// consecutive entries, then a fixed shuffle tree.
	const int seg = chooseSegment(V, warps);
	const bool sampled = it != 0.0f, tempered = sampled && it != 1.0f;
	const int lo = imin(V, warp * seg), hi = imin(V, lo + seg);
	double a1 = 0.0, aT = 0.0;
	for (int base = lo; base < hi; base += CHOOSE_UNROLL * 32) {
		float v[CHOOSE_UNROLL];
		for (int k = 0; k < CHOOSE_UNROLL; k++) {
			const int i = base + 32 * k + lane;
			v[k] = i < hi ? x[i] : -INFINITY;
		}
		for (int k = 0; k < CHOOSE_UNROLL; k++) {
			a1 += (double)chooseExp(v[k], m, 1.0f);
			if (tempered) aT += (double)chooseExp(v[k], m, it);
		}
	}
	for (int off = 16; off > 0; off >>= 1) {
		a1 += __shfl_xor_sync(0xffffffffu, a1, off);
		aT += __shfl_xor_sync(0xffffffffu, aT, off);
	}
	if (lane == 0) {
		sum1[warp] = a1;
		sumT[warp] = tempered ? aT : a1;
	}
	__syncthreads();
	double total1 = 0.0, totalT = 0.0;
	for (int w = 0; w < warps; w++) {
		total1 += sum1[w];
		totalT += sumT[w];
	}
	// The segment the draw falls in, and the mass before it: every thread
	// finds the same (the same sums in the same order).
	const double target = sampled ? u[blockIdx.x] * totalT : 0.0;
	int c = -1;
	double before = 0.0;
	if (sampled) {
		double acc = 0.0;
		int lastNonzero = -1;
		double accLast = 0.0;
		for (int w = 0; w < warps; w++) {
			if (sumT[w] > 0.0) {
				lastNonzero = w;
				accLast = acc;
			}
			if (acc + sumT[w] > target && sumT[w] > 0.0) {
				c = w;
				before = acc;
				break;
			}
			acc += sumT[w];
		}
		if (c < 0) {  // rounding put the target past the last segment's end
			c = lastNonzero;
			before = accLast;
		}
	}
	if (t == 0) chosen = -1;
	__syncthreads();

	// The chosen segment's warp scans it: each step's inclusive prefix sums
	// by shuffles, the first lane past the target wins; a scan that ends
	// short of it (rounding between the two orders of addition) takes the
	// segment's last entry of nonzero probability.
	if (warp == c) {
		const int sLo = imin(V, c * seg), sHi = imin(V, sLo + seg);
		double run = before;
		int found = -1, last = -1;
		for (int base = sLo; base < sHi && found < 0; base += 32) {
			const int i = base + lane;
			const float e = i < sHi ? chooseExp(x[i], m, it) : 0.0f;
			if (e != 0.0f) last = i;
			double pre = (double)e;
			for (int off = 1; off < 32; off <<= 1) {
				const double o = __shfl_up_sync(0xffffffffu, pre, off);
				if (lane >= off) pre += o;
			}
			int hit = (e != 0.0f && run + pre > target) ? lane : 32;
			for (int off = 16; off > 0; off >>= 1) hit = imin(hit, __shfl_xor_sync(0xffffffffu, hit, off));
			if (hit < 32) found = base + hit;
			run += __shfl_sync(0xffffffffu, pre, 31);
		}
		for (int off = 16; off > 0; off >>= 1) last = imax(last, __shfl_xor_sync(0xffffffffu, last, off));
		if (lane == 0) chosen = found >= 0 ? found : last;
	}
	__syncthreads();
	if (t == 0) {
		// No segment with mass (NaN sums): the argmax, a valid id.
		const int id = sampled && chosen >= 0 ? chosen : argmax;
		ids[blockIdx.x] = id;
		stats[3 * blockIdx.x] = x[id];
		stats[3 * blockIdx.x + 1] = m;
		stats[3 * blockIdx.x + 2] = m + (float)log(total1);
	}
}
