// kernels.RowChooser.ChooseRows: the next token of many sequences chosen on
// the device from their logits rows, so that a few values a row cross to
// the host instead of the whole row (serve/engine's decode step; issue #28
// measured the host's read of [32, 151936] logits at 44% of a decode step
// on an H200). Row rows[b] of logits [R, V] gives choice b:
//
//	max, argmax: the largest entry and the lowest id holding it, NaN
//	    entries passed over (counted as −Inf), as the host's scan finds
//	    them.
//	lse: log Σ_j e^(row[j] − max) + max, each exponential as ExpShift forms
//	    it (the argument (row[j] − max)·1 in float, 0 below −87 and for
//	    NaN) and the sum in double.
//	id: with inv[b] = 0 the argmax (greedy); otherwise a draw from
//	    softmax(row·inv[b]) by the inverse of its CDF in id order at the
//	    uniform u[b] ∈ [0, 1): with e_j = e^((row[j] − max)·inv[b]) (as
//	    ExpShift, in float) and S = Σ e_j, the lowest j with e_j ≠ 0 and
//	    Σ_{k≤j} e_k > u·S, the sums in double (the host's sampleAll, up to
//	    the order of the additions).
//
// Rows that are not finite follow kernels.RowChooser's rule: a row whose
// max is +Inf gives its argmax (the lowest id holding +Inf), greedy or
// drawn, with lse +Inf; a row whose max is −Inf (every entry NaN or −Inf)
// gives id −1, logit −Inf and lse 0: no candidate.
//
// One block a row would leave most of the device idle at a decode batch
// (32 rows on an H200's 132 SMs), so each row is cut into B chunks of L
// consecutive entries (the last one shorter; Ops picks L and B from V and
// the number of choices, choose.go) and three launches of the same block
// size (any multiple of 32 threads up to 1024; Ops launches 1024) do the
// work, with the partials in scratch memory between them:
//
//	choose_rows_max: B blocks a choice (block b·B + c: choice b, chunk c),
//	    the chunk's max and argmax (pmax, parg).
//	choose_rows_sum: B blocks a choice; each combines the B maxima into
//	    the row's (the same for every chunk), and sums the chunk's
//	    e^(x − max) (sum1) and e^((x − max)·inv) by the same terms e_j as
//	    above, over one contiguous segment a warp whose lanes read it 128
//	    consecutive entries at a time (four loads in flight a lane): each
//	    segment's sum (segT) and the chunk's (sumT).
//	choose_rows: one block a choice combines the partials, the chunks in
//	    order: max, argmax, lse; for a draw the chunk the draw falls in by
//	    the chunk sums, its segment by the segment sums, and only that
//	    segment's warp scans it again, by warp prefix sums, for the token.
//
// The terms e_j are the single-block kernel's (the row's max, not a
// chunk's: no rescaling), so only the order of the double additions
// differs from the host's. Every reduction is a fixed tree or a fixed
// sequence (no atomics), so a choice depends only on its row, inv and u
// and on the block size and L. Barriers are reached by the whole block
// and shuffles by whole warps: the scan's warp-uniform branch holds
// shuffles only. Not run on a GPU yet: tested on the CPU through
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

// chooseSegment is the length of each warp's segment of a chunk of n
// entries: n split over the block's warps, rounded up to whole steps of
// CHOOSE_UNROLL·32 entries.
__device__ __forceinline__ int chooseSegment(int n, int warps) {
	const int step = CHOOSE_UNROLL * 32;
	const int per = (n + warps - 1) / warps;
	return (per + step - 1) / step * step;
}

// chooseRowMax is the row's max from its B chunk maxima (pm).
__device__ __forceinline__ float chooseRowMax(const float *pm, int B) {
	float m = pm[0];
	for (int c = 1; c < B; c++) m = pm[c] > m ? pm[c] : m;
	return m;
}

extern "C" __global__ void choose_rows_max(float *__restrict__ pmax, int *__restrict__ parg, const float *__restrict__ logits,
                                           const int *__restrict__ rows, int V, int L, int B) {
	__shared__ float sv[32];
	__shared__ int si[32];
	const int t = threadIdx.x, lane = t % 32, warp = t / 32, warps = blockDim.x / 32;
	const int b = blockIdx.x / B, c = blockIdx.x % B;
	const int lo = c * L, hi = imin(V, lo + L);
	const float *x = logits + (long long)rows[b] * V;

	// NaN counts as −Inf, and a thread's first entry is its best so far,
	// so that a chunk of −Inf gives its lowest id.
	float bv = -INFINITY;
	int bi = V;
	for (int i = lo + t; i < hi; i += blockDim.x) {
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
	if (t == 0) {
		bv = sv[0];
		bi = si[0];
		for (int w = 1; w < warps; w++) {
			if (chooseBetter(sv[w], si[w], bv, bi)) {
				bv = sv[w];
				bi = si[w];
			}
		}
		pmax[blockIdx.x] = bv;
		parg[blockIdx.x] = bi;
	}
}

extern "C" __global__ void choose_rows_sum(double *__restrict__ sum1, double *__restrict__ sumT, double *__restrict__ segT,
                                           const float *__restrict__ pmax, const float *__restrict__ logits,
                                           const int *__restrict__ rows, const float *__restrict__ inv, int V, int L, int B) {
	__shared__ double s1[32], sT[32];
	const int t = threadIdx.x, lane = t % 32, warp = t / 32, warps = blockDim.x / 32;
	const int b = blockIdx.x / B, c = blockIdx.x % B;
	const float *x = logits + (long long)rows[b] * V;
	const float it = inv[b];
	const float m = chooseRowMax(pmax + b * B, B);
	if (m == -INFINITY || m == INFINITY) {  // uniform: choose_rows reads no sum (never NaN: NaN counts as −Inf)
		return;
	}

	// The sums of e^(x − m) (for lse) and e^((x − m)·inv) (for the draw)
	// over each warp's segment of the chunk: lane-strided within steps of
	// 128 consecutive entries, then a fixed shuffle tree.
	const bool sampled = it != 0.0f, tempered = sampled && it != 1.0f;
	const int cLo = c * L, cHi = imin(V, cLo + L);
	const int seg = chooseSegment(cHi - cLo, warps);
	const int lo = imin(cHi, cLo + warp * seg), hi = imin(cHi, lo + seg);
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
		s1[warp] = a1;
		sT[warp] = tempered ? aT : a1;
		segT[(long long)blockIdx.x * warps + warp] = sT[warp];
	}
	__syncthreads();
	if (t == 0) {
		double total1 = 0.0, totalT = 0.0;
		for (int w = 0; w < warps; w++) {
			total1 += s1[w];
			totalT += sT[w];
		}
		sum1[blockIdx.x] = total1;
		sumT[blockIdx.x] = totalT;
	}
}

// choosePick finds, in the n sums s (in order) added to start, the first
// with mass that takes the running sum past target, and sets before to the
// running sum before it; when rounding put the target past the end, the
// last with mass. It returns −1 when none has mass (zero or NaN sums).
__device__ __forceinline__ int choosePick(const double *s, int n, double start, double target, double &before) {
	double acc = start, accLast = start;
	int last = -1;
	for (int k = 0; k < n; k++) {
		if (s[k] > 0.0) {
			last = k;
			accLast = acc;
			if (acc + s[k] > target) {
				before = acc;
				return k;
			}
		}
		acc += s[k];
	}
	before = accLast;
	return last;
}

extern "C" __global__ void choose_rows(int *__restrict__ ids, float *__restrict__ stats, const float *__restrict__ pmax,
                                       const int *__restrict__ parg, const double *__restrict__ sum1,
                                       const double *__restrict__ sumT, const double *__restrict__ segT,
                                       const float *__restrict__ logits, const int *__restrict__ rows, const float *__restrict__ inv,
                                       const double *__restrict__ u, int V, int L, int B) {
	__shared__ int chosen;
	const int t = threadIdx.x, lane = t % 32, warp = t / 32, warps = blockDim.x / 32;
	const int b = blockIdx.x;
	const float *x = logits + (long long)rows[b] * V;
	const float it = inv[b];

	// The chunks' max and argmax in order: every thread finds the same.
	float bv = pmax[b * B];
	int bi = parg[b * B];
	for (int c = 1; c < B; c++) {
		if (chooseBetter(pmax[b * B + c], parg[b * B + c], bv, bi)) {
			bv = pmax[b * B + c];
			bi = parg[b * B + c];
		}
	}
	const float m = bv;
	const int argmax = bi;
	if (m == -INFINITY || m == INFINITY) {  // uniform: no candidate, or the first +Inf whatever inv
		if (t == 0) {
			const bool none = m == -INFINITY;
			ids[b] = none ? -1 : argmax;
			stats[3 * b] = none ? m : x[argmax];
			stats[3 * b + 1] = m;
			stats[3 * b + 2] = none ? 0.0f : m;
		}
		return;
	}
	double total1 = 0.0, totalT = 0.0;
	for (int c = 0; c < B; c++) {
		total1 += sum1[b * B + c];
		totalT += sumT[b * B + c];
	}

	// The chunk the draw falls in, then its segment, and the mass before
	// it: every thread finds the same (the same sums in the same order).
	const bool sampled = it != 0.0f;
	const double target = sampled ? u[b] * totalT : 0.0;
	int cc = -1, w = -1;
	double before = 0.0;
	if (sampled) {
		double chunkBefore = 0.0;
		cc = choosePick(sumT + b * B, B, 0.0, target, chunkBefore);
		if (cc >= 0) w = choosePick(segT + ((long long)b * B + cc) * warps, warps, chunkBefore, target, before);
	}
	if (t == 0) chosen = -1;
	__syncthreads();

	// The chosen segment's warp scans it: each step's inclusive prefix sums
	// by shuffles, the first lane past the target wins; a scan that ends
	// short of it (rounding between the two orders of addition) takes the
	// segment's last entry of nonzero probability.
	if (warp == w) {
		const int cLo = cc * L, cHi = imin(V, cLo + L);
		const int seg = chooseSegment(cHi - cLo, warps);
		const int sLo = imin(cHi, cLo + w * seg), sHi = imin(cHi, sLo + seg);
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
		ids[b] = id;
		stats[3 * b] = x[id];
		stats[3 * b + 1] = m;
		stats[3 * b + 2] = m + (float)log(total1);
	}
}
