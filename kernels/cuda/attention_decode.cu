// A decode step of many sequences at once (kernels.Backend.
// AttentionDecodeBatch's contract): each sequence's new keys and values
// appended to its own KV cache, then its new queries attending to that
// cache, causal, grouped-query, optionally within a sliding window of W
// keys.
//
// The caches are separate allocations, one per sequence (and one for keys,
// one for values). The kernels take a base pointer for the keys' caches and
// one for the values', and a table tab of 8 ints per sequence s:
//
//	tab[8s+0] q0   first row of the sequence's new tokens in q, k, v, out
//	tab[8s+1] Tq   its new tokens
//	tab[8s+2] Tk   its cache rows, the new ones included (Tq ≤ Tk)
//	tab[8s+4..5]   the offset of its key cache from kbase, in floats, a
//	               signed 64-bit value as (low, high) 32-bit halves
//	tab[8s+6..7]   the same for its value cache from vbase
//
// (a device backend passes the address of one cache as the base and the
// others relative to it; a test on the CPU shim packs them into one array).
// A cache is [Tk, KVH, D]; q and out are [N, H, D], k and v [N, KVH, D].
// The table is read on the device and not checked there: the host checks
// every cache before it builds it.
//
// attention_decode_append copies the new rows, one block of 256 threads per
// 256 values of a sequence's new rows. attention_decode_batch is then a
// grid of (row blocks, KVH, S): a block takes DEC_ROWS (query, head) rows
// of one KV head of one sequence — row f is new token f/G, head kvh·G +
// f%G, G = H/KVH, so that a decode step's G heads share the staged keys —
// and walks the keys those rows see in tiles staged in __shared__ (keys
// with row stride D+1, so that threads reading one dim of different keys
// hit different banks). Per tile: every thread forms scores of (row, key)
// pairs (a dot product over D, in order); one thread a row takes the row's
// tile max and the online softmax's rescale factor; every thread turns its
// scores into e^(s−m); then the 32 threads of a row (a warp) each add
// Σ_j e_j·v_j to their dims and the row's sum, in registers. No warp
// shuffles and no atomics: five __syncthreads a tile, reached by the whole
// block (the loop bounds are the block's; masking is per row inside).
// f32 on CUDA cores.
#include "common.cuh"

#define DEC_ROWS 8                        // (query, head) rows per block
#define DEC_THREADS 256                   // the block
#define DEC_TPR (DEC_THREADS / DEC_ROWS)  // threads a row in the P·V sum: 32, a warp
#define DEC_DMAX 256                      // largest head dim
#define DEC_DPT (DEC_DMAX / DEC_TPR)      // dims per thread in the P·V sum, at most
#define DEC_SMEM 12032                    // floats of __shared__ per block (47 KiB)
#define DEC_TMAX 64                       // most keys a tile holds
#define DEC_APPEND 256                    // threads (and values) per append block

#ifdef __CUDACC__
#define DEC_UNROLL _Pragma("unroll")
#else
#define DEC_UNROLL
#endif

__device__ __forceinline__ int decMin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int decMax(int a, int b) { return a > b ? a : b; }

// decOff is the signed 64-bit offset stored as (low, high) halves at t.
__device__ __forceinline__ long long decOff(const int *__restrict__ t) {
	return (long long)(((unsigned long long)(unsigned)t[1] << 32) | (unsigned long long)(unsigned)t[0]);
}

// attention_decode_append: the Tq new rows of sequence blockIdx.y, k and v
// [N,KVH,D] rows q0 …, into its caches' rows Tk−Tq …; kvd = KVH·D. Grid
// (⌈max Tq·kvd / 256⌉, S), block 256.
extern "C" __global__ void attention_decode_append(float *__restrict__ kbase, float *__restrict__ vbase,
                                                   const float *__restrict__ k, const float *__restrict__ v,
                                                   const int *__restrict__ tab, int kvd) {
	const int *t = tab + 8 * blockIdx.y;
	const int q0 = t[0], tq = t[1], tk = t[2];
	const long long e = (long long)blockIdx.x * DEC_APPEND + threadIdx.x;
	if (e >= (long long)tq * kvd) return;
	const long long dst = (long long)(tk - tq) * kvd + e, src = (long long)q0 * kvd + e;
	kbase[decOff(t + 4) + dst] = k[src];
	vbase[decOff(t + 6) + dst] = v[src];
}

// attention_decode_batch: out [N,H,D] of the new tokens q [N,H,D] of the
// S sequences of tab over their caches (after attention_decode_append).
// Grid (⌈max Tq·G / 8⌉, KVH, S), block 256; W = 0: no window.
//
// Shared: the block's queries qs [8][D+1] (times scale), one tile of tk
// keys ks [tk][D+1] and values vs [tk][D], the scores sc [8][tk+1], and
// each row's running max mx [8] and rescale factor al [8].
extern "C" __global__ void attention_decode_batch(float *__restrict__ out, const float *__restrict__ q,
                                                  const float *__restrict__ kbase, const float *__restrict__ vbase,
                                                  const int *__restrict__ tab, int H, int KVH, int D, int W,
                                                  float scale) {
	__shared__ float sm[DEC_SMEM];
	const int *t = tab + 8 * blockIdx.z;
	const int q0 = t[0], Tq = t[1], Tk = t[2];
	const int kvh = blockIdx.y, G = H / KVH, total = Tq * G, f0 = blockIdx.x * DEC_ROWS;
	if (f0 >= total) return;  // the whole block: this sequence has fewer rows
	const float *kc = kbase + decOff(t + 4), *vc = vbase + decOff(t + 6);
	const int ld = D + 1;
	const int tkeys = decMin(DEC_TMAX, (DEC_SMEM - DEC_ROWS * ld - 3 * DEC_ROWS) / (ld + D + DEC_ROWS)),
	          ts = tkeys + 1;
	float *qs = sm, *ks = qs + DEC_ROWS * ld, *vs = ks + tkeys * ld, *sc = vs + tkeys * D, *mx = sc + DEC_ROWS * ts,
	      *al = mx + DEC_ROWS;
	const int past = Tk - Tq;  // cache rows before the new tokens
	// The block's keys: from its first row's first key to its last row's own.
	const int flast = decMin(f0 + DEC_ROWS, total) - 1;
	const int plo = past + f0 / G, phi = past + flast / G;
	const int jlo = W > 0 ? decMax(0, plo - W + 1) : 0, jhi = phi;

	for (int e = threadIdx.x; e < DEC_ROWS * D; e += DEC_THREADS) {
		const int r = e / D, d = e - r * D, f = f0 + r;
		qs[r * ld + d] = f < total ? scale * q[((long long)(q0 + f / G) * H + kvh * G + f % G) * D + d] : 0.0f;
	}
	if (threadIdx.x < DEC_ROWS) mx[threadIdx.x] = -INFINITY;
	// Thread (r, lane) of the P·V sum: row r's dims lane, lane+32, …
	const int r = threadIdx.x / DEC_TPR, lane = threadIdx.x % DEC_TPR;
	const int nc = (D + DEC_TPR - 1) / DEC_TPR;
	float acc[DEC_DPT];
	DEC_UNROLL for (int c = 0; c < DEC_DPT; c++) acc[c] = 0.0f;
	float l = 0.0f;
	for (int j0 = jlo; j0 <= jhi; j0 += tkeys) {
		const int nk = decMin(tkeys, jhi - j0 + 1);
		__syncthreads();  // qs and mx are set; the tile before is consumed
		for (int e = threadIdx.x; e < nk * D; e += DEC_THREADS) {
			const int j = e / D, d = e - j * D;
			const long long g = ((long long)(j0 + j) * KVH + kvh) * D + d;
			ks[j * ld + d] = kc[g];
			vs[j * D + d] = vc[g];
		}
		__syncthreads();
		for (int e = threadIdx.x; e < DEC_ROWS * nk; e += DEC_THREADS) {
			const int rr = e / nk, jj = e - rr * nk, f = f0 + rr, j = j0 + jj;
			const int p = past + f / G;  // the row's own cache row
			float s = -INFINITY;
			if (f < total && j <= p && (W <= 0 || j > p - W)) {
				const float *a = qs + rr * ld, *b = ks + jj * ld;
				s = 0.0f;
				for (int d = 0; d < D; d++) s += a[d] * b[d];
			}
			sc[rr * ts + jj] = s;
		}
		__syncthreads();
		if (threadIdx.x < DEC_ROWS) {  // the row's new max and rescale factor
			const int rr = threadIdx.x;
			float m = mx[rr];
			for (int jj = 0; jj < nk; jj++) m = fmaxf(m, sc[rr * ts + jj]);
			al[rr] = m == -INFINITY ? 1.0f : expf(mx[rr] - m);
			mx[rr] = m;
		}
		__syncthreads();
		for (int e = threadIdx.x; e < DEC_ROWS * nk; e += DEC_THREADS) {
			const int rr = e / nk, jj = e - rr * nk;
			const float m = mx[rr];
			sc[rr * ts + jj] = m == -INFINITY ? 0.0f : expf(sc[rr * ts + jj] - m);
		}
		__syncthreads();
		const float a = al[r];
		l *= a;
		DEC_UNROLL for (int c = 0; c < DEC_DPT; c++) acc[c] *= a;
		for (int jj = 0; jj < nk; jj++) {
			const float e = sc[r * ts + jj];
			const float *vj = vs + jj * D;
			l += e;
			DEC_UNROLL for (int c = 0; c < DEC_DPT; c++) {
				const int d = lane + c * DEC_TPR;
				if (c < nc && d < D) acc[c] += e * vj[d];
			}
		}
	}
	const int f = f0 + r;
	if (f >= total) return;
	const float inv = 1.0f / l;
	const long long row = ((long long)(q0 + f / G) * H + kvh * G + f % G) * D;
	DEC_UNROLL for (int c = 0; c < DEC_DPT; c++) {
		const int d = lane + c * DEC_TPR;
		if (c < nc && d < D) out[row + d] = acc[c] * inv;
	}
}
