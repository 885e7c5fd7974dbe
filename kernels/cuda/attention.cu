// Causal grouped-query attention over packed variable-length sequences
// (kernels.Backend.AttentionForward, AttentionWindowForward,
// AttentionDecode, AttentionBackward and AttentionWindowBackward's
// contracts). With S_ij = scale·q_i·k_j, query head h reading key/value
// head h/(H/KVH), and query i seeing the keys j of its own sequence with
// i − W < j ≤ i:
//
//	lse[i,h]  = log Σ_j exp(S_ij),  out[i,h] = Σ_j exp(S_ij − lse)·v_j
//	P_ij = exp(S_ij − lse_i),  δ_i = dout_i·out_i,  dS_ij = P_ij·(dout_i·v_j − δ_i)
//	dq_i += scale·Σ_j dS_ij·k_j,  dk_j += scale·Σ_i dS_ij·q_i,  dv_j += Σ_i P_ij·dout_i
//
// q, out, dq, dout [N,H,D]; k, v, dk, dv [N,KVH,D]; lse [N,H]; seqOff
// [S+1] (int32). One kernel serves the three forward ops: no window is
// W = N, and decode (Tq new tokens over a KV cache of Tk rows) is qoff =
// Tk − Tq with no seqOff (S = 0, one sequence) and no lse.
//
// The scheme is flash attention's, on CUDA cores in f32 (no tensor
// cores): a block takes 16 rows, 8 threads a row — (query, head) pairs of
// one KV head in the forward and dq, so that a GQA group's heads share the
// staged keys; key rows of one KV head in dkdv — and stages those rows in
// __shared__ (row stride D+1, so that threads reading one dim of different
// rows hit different banks; the [16][tile] score arrays likewise, stride
// tile+1). It walks the rows' key (dkdv: query) range in tiles staged in
// __shared__ too, as many rows as fit in ATT_SMEM (D = 128: 64 keys a
// forward tile; D = 256: 28, and 7 in dq, 6 in dkdv), up to 64. Per tile,
// thread (r, sub) forms the scores of row r with tile rows sub, sub+8, …
// (a dot product over D, in order), writes them to __shared__, and after a
// barrier each thread of row r combines the whole tile into the dims it
// owns (sub, sub+8, …), in registers: the forward keeps an online softmax
// (running max m and sum l, the accumulator rescaled when the tile raises
// m); the backward recomputes P from lse and is deterministic, without
// atomics: attention_backward_dq sums over keys per query row, and
// attention_backward_dkdv over the H/KVH query heads of a key row's KV head
// and, in each, its queries, each in a fixed order. δ_i is recomputed where
// it is needed (once per query row in dq, once per staged query tile in
// dkdv) instead of in a scratch buffer. No warp shuffles: three or four
// __syncthreads a tile.
//
// What it costs: no tensor cores (the score and P·V products are f32 FMAs
// from shared memory), and each exp of the forward is formed by all 8
// threads of the row; decode (Tq = 1) runs one block per KV head with
// H/KVH of its 16 rows live (7 for Qwen2.5) and no split over the cache;
// a block of the forward or dq whose rows span several queries stages the
// keys of the earliest query's first to the last query's own; a tile
// straddling sequences is staged whole and masked per row. Its speed is
// unmeasured.
//
// seqOff is read on the device and not checked by the host: every key
// range is clamped to [0, the query's own row], and every query range to
// [the key's row, N), so a bad seqOff gives wrong values, never an
// out-of-bounds access. Every barrier is reached by the whole block (the
// loops around them have the same bounds in all its threads; masking is
// per row inside), as kernels/cuda/cpushim requires and CUDA expects. Never
// run on a GPU: tested on the CPU through cpushim/cuda_cpu.h against
// kernels/ref.
#include "common.cuh"
#include "attention.cuh"

#define ATT_ROWS 16                         // rows (query or key) per block
#define ATT_LANES 8                         // threads per row
#define ATT_THREADS (ATT_ROWS * ATT_LANES)  // the block: 128 threads
#define ATT_DMAX 256                        // largest head dim
#define ATT_DPT (ATT_DMAX / ATT_LANES)      // dims per thread, at most
#define ATT_SMEM 12032                      // floats of __shared__ per block (47 KiB)
#define ATT_TMAX 64                         // most rows a streamed tile holds

#ifdef __CUDACC__
#define ATT_UNROLL _Pragma("unroll")
#else
#define ATT_UNROLL
#endif

// attTile is how many rows a streamed tile holds: what fits in ATT_SMEM
// after fixed floats when each row takes per, at most ATT_TMAX.
__device__ __forceinline__ int attTile(int fixed, int per) {
	return attMin(ATT_TMAX, (ATT_SMEM - fixed) / per);
}

// attDot is Σ_d a[d]·b[d] over D dims, in order.
__device__ __forceinline__ float attDot(const float *a, const float *b, int D) {
	float s = 0.0f;
	for (int d = 0; d < D; d++) s += a[d] * b[d];
	return s;
}

// attStage copies rows row0 … row0+n−1 of head h of x [·,heads,D] into
// dst (row stride ld), times mul; rows at or past rows are zeros.
__device__ __forceinline__ void attStage(float *dst, int ld, const float *__restrict__ x, int row0, int n, int rows,
                                         int heads, int h, int D, float mul) {
	for (int e = threadIdx.x; e < n * D; e += blockDim.x) {
		const int t = e / D, d = e - t * D, i = row0 + t;
		dst[t * ld + d] = i < rows ? mul * x[((long long)i * heads + h) * D + d] : 0.0f;
	}
}

// attStageGroup copies the query rows f0 … f0+15 of a block of
// (query, head) rows into dst (row stride ld), times mul: row f is query
// f/G, head kvh·G + f%G of x [·,H,D] (the G heads of a query that share KV
// head kvh lie side by side); rows at or past total are zeros.
__device__ __forceinline__ void attStageGroup(float *dst, int ld, const float *__restrict__ x, int f0, int total, int G,
                                              int H, int kvh, int D, float mul) {
	for (int e = threadIdx.x; e < ATT_ROWS * D; e += blockDim.x) {
		const int t = e / D, d = e - t * D, f = f0 + t;
		dst[t * ld + d] = f < total ? mul * x[((long long)(f / G) * H + kvh * G + f % G) * D + d] : 0.0f;
	}
}

// attention_forward: out [Nq,H,D] and (lse not null) lse [Nq,H] of the Nq
// queries q [Nq,H,D]; query i is at key position p = i + qoff and sees the
// keys j of k, v [·,KVH,D] with attFirstKey(p) ≤ j ≤ p. Grid
// (⌈Nq·G/16⌉, KVH), G = H/KVH, block 128: a block's 16 rows are (query,
// head) pairs f = 16·blockIdx.x … of KV head blockIdx.y, query f/G and
// head kvh·G + f%G, so the G heads reading the same keys share the staged
// tiles (and a decode step's G heads fill G rows of one block). W ≤ the
// key count (no window: W = it).
//
// Shared: the block's queries qs [16][D+1] (times scale), one tile of tk
// keys, then of their values, kv [tk][D+1], and the scores sc [16][tk+1].
// Per tile: thread (r, sub) forms the scores of row r with keys sub,
// sub+8, …; then every thread of row r takes the row's tile max, rescales
// its accumulator and adds e^(s−m)·v over the tile's keys to its dims.
extern "C" __global__ void attention_forward(float *__restrict__ out, float *__restrict__ lse,
                                             const float *__restrict__ q, const float *__restrict__ k,
                                             const float *__restrict__ v, const int *__restrict__ seqOff,
                                             int S, int Nq, int H, int KVH, int D, int W, int qoff, float scale) {
	__shared__ float sm[ATT_SMEM];
	const int ld = D + 1, tk = attTile(ATT_ROWS * ld + ATT_ROWS, ld + ATT_ROWS), ts = tk + 1;
	float *qs = sm, *kv = qs + ATT_ROWS * ld, *sc = kv + tk * ld;
	const int r = threadIdx.x / ATT_LANES, sub = threadIdx.x % ATT_LANES;
	const int kvh = blockIdx.y, G = H / KVH, total = Nq * G;
	const int f0 = blockIdx.x * ATT_ROWS, f = f0 + r;
	const bool live = f < total;
	const int i = live ? f / G : 0, h = kvh * G + (live ? f % G : 0);
	const int p = i + qoff;
	const int first = live ? attFirstKey(seqOff, S, p, W) : 0;
	// The block's keys: from its first query's first key to its last query.
	const int jlo = attFirstKey(seqOff, S, f0 / G + qoff, W), jhi = (attMin(f0 + ATT_ROWS, total) - 1) / G + qoff;
	const int nc = (D + ATT_LANES - 1) / ATT_LANES;

	attStageGroup(qs, ld, q, f0, total, G, H, kvh, D, scale);
	float acc[ATT_DPT];
	ATT_UNROLL for (int c = 0; c < ATT_DPT; c++) acc[c] = 0.0f;
	float m = -INFINITY, l = 0.0f;
	for (int j0 = jlo; j0 <= jhi; j0 += tk) {
		const int nk = attMin(tk, jhi - j0 + 1);
		__syncthreads();  // qs is staged; the tile before is consumed
		attStage(kv, ld, k, j0, nk, jhi + 1, KVH, kvh, D, 1.0f);
		__syncthreads();
		for (int jj = sub; jj < nk; jj += ATT_LANES) {
			const int j = j0 + jj;
			sc[r * ts + jj] = live && j >= first && j <= p ? attDot(qs + r * ld, kv + jj * ld, D) : -INFINITY;
		}
		__syncthreads();
		attStage(kv, ld, v, j0, nk, jhi + 1, KVH, kvh, D, 1.0f);
		__syncthreads();
		float mt = -INFINITY;
		for (int jj = 0; jj < nk; jj++) mt = fmaxf(mt, sc[r * ts + jj]);
		if (mt > m) {  // a new max: rescale what is summed so far
			const float a = expf(m - mt);
			l *= a;
			ATT_UNROLL for (int c = 0; c < ATT_DPT; c++) acc[c] *= a;
			m = mt;
		}
		if (mt == -INFINITY) continue;  // no key of this tile is seen by row r
		for (int jj = 0; jj < nk; jj++) {
			const float e = expf(sc[r * ts + jj] - m);
			const float *vj = kv + jj * ld;
			l += e;
			ATT_UNROLL for (int c = 0; c < ATT_DPT; c++) {
				const int d = sub + c * ATT_LANES;
				if (c < nc && d < D) acc[c] += e * vj[d];
			}
		}
	}
	if (!live) return;
	const float inv = 1.0f / l;
	ATT_UNROLL for (int c = 0; c < ATT_DPT; c++) {
		const int d = sub + c * ATT_LANES;
		if (c < nc && d < D) out[((long long)i * H + h) * D + d] = acc[c] * inv;
	}
	if (lse != nullptr && sub == 0) lse[(long long)i * H + h] = m + logf(l);
}

// attention_backward_dq accumulates dq [N,H,D] += scale·Σ_j dS_ij·k_j,
// summed over j in order. Grid (⌈N·G/16⌉, KVH), block 128: the rows of
// attention_forward. W ≤ N.
//
// Shared: the block's queries qs (times scale) and douts dos [16][D+1],
// their δ [16], a tile of tk keys ks and values vs [tk][D+1], and dS
// [16][tk+1]. Per tile: thread (r, sub) forms dS of row r with keys sub,
// sub+8, …; then every thread of row r adds Σ_j dS·k_j to its dims.
extern "C" __global__ void attention_backward_dq(float *__restrict__ dq, const float *__restrict__ dout,
                                                 const float *__restrict__ out, const float *__restrict__ lse,
                                                 const float *__restrict__ q, const float *__restrict__ k,
                                                 const float *__restrict__ v, const int *__restrict__ seqOff,
                                                 int S, int N, int H, int KVH, int D, int W, float scale) {
	__shared__ float sm[ATT_SMEM];
	const int ld = D + 1, tk = attTile(2 * ATT_ROWS * ld + 2 * ATT_ROWS, 2 * ld + ATT_ROWS), ts = tk + 1;
	float *qs = sm, *dos = qs + ATT_ROWS * ld, *dl = dos + ATT_ROWS * ld, *ks = dl + ATT_ROWS, *vs = ks + tk * ld,
	      *ds = vs + tk * ld;
	const int r = threadIdx.x / ATT_LANES, sub = threadIdx.x % ATT_LANES;
	const int kvh = blockIdx.y, G = H / KVH, total = N * G;
	const int f0 = blockIdx.x * ATT_ROWS, f = f0 + r;
	const bool live = f < total;
	const int i = live ? f / G : 0, h = kvh * G + (live ? f % G : 0);
	const int first = live ? attFirstKey(seqOff, S, i, W) : 0;
	const int jlo = attFirstKey(seqOff, S, f0 / G, W), jhi = (attMin(f0 + ATT_ROWS, total) - 1) / G;
	const int nc = (D + ATT_LANES - 1) / ATT_LANES;
	const long long row = ((long long)i * H + h) * D;

	attStageGroup(qs, ld, q, f0, total, G, H, kvh, D, scale);  // as the forward formed S
	attStageGroup(dos, ld, dout, f0, total, G, H, kvh, D, 1.0f);
	if (live && sub == 0) {  // δ_i = dout_i·out_i, from global memory
		float delta = 0.0f;
		for (int d = 0; d < D; d++) delta += dout[row + d] * out[row + d];
		dl[r] = delta;
	}
	const float L = live ? lse[(long long)i * H + h] : 0.0f;
	float acc[ATT_DPT];
	ATT_UNROLL for (int c = 0; c < ATT_DPT; c++) acc[c] = 0.0f;
	for (int j0 = jlo; j0 <= jhi; j0 += tk) {
		const int nk = attMin(tk, jhi - j0 + 1);
		__syncthreads();  // qs, dos, δ are staged; the tile before is consumed
		attStage(ks, ld, k, j0, nk, jhi + 1, KVH, kvh, D, 1.0f);
		attStage(vs, ld, v, j0, nk, jhi + 1, KVH, kvh, D, 1.0f);
		__syncthreads();
		for (int jj = sub; jj < nk; jj += ATT_LANES) {
			const int j = j0 + jj;
			float g = 0.0f;
			if (live && j >= first && j <= i) {
				const float pr = expf(attDot(qs + r * ld, ks + jj * ld, D) - L);
				g = pr * (attDot(dos + r * ld, vs + jj * ld, D) - dl[r]);
			}
			ds[r * ts + jj] = g;
		}
		__syncthreads();
		for (int jj = 0; jj < nk; jj++) {
			const float g = ds[r * ts + jj];
			const float *kj = ks + jj * ld;
			ATT_UNROLL for (int c = 0; c < ATT_DPT; c++) {
				const int d = sub + c * ATT_LANES;
				if (c < nc && d < D) acc[c] += g * kj[d];
			}
		}
	}
	if (!live) return;
	ATT_UNROLL for (int c = 0; c < ATT_DPT; c++) {
		const int d = sub + c * ATT_LANES;
		if (c < nc && d < D) dq[row + d] += scale * acc[c];
	}
}

// attention_backward_dkdv accumulates dk, dv [N,KVH,D] of key rows j:
// dv_j += Σ P_ij·dout_i and dk_j += scale·Σ dS_ij·q_i over the query heads
// of KV head kvh in order and, in each, the queries i that see j in order.
// Grid (⌈N/16⌉, KVH), block 128. W ≤ N.
//
// Shared: the block's keys ks and values vs [16][D+1], a tile of tq
// queries qs (times scale) and douts dos [tq][D+1], their lse and δ [tq],
// and P, dS [16][tq+1]. Per tile: thread (r, sub) forms P and dS of key row
// r with queries sub, sub+8, …; then every thread of row r adds Σ_i P·dout_i
// and Σ_i dS·q_i to its dims.
extern "C" __global__ void attention_backward_dkdv(float *__restrict__ dk, float *__restrict__ dv,
                                                   const float *__restrict__ dout, const float *__restrict__ out,
                                                   const float *__restrict__ lse, const float *__restrict__ q,
                                                   const float *__restrict__ k, const float *__restrict__ v,
                                                   const int *__restrict__ seqOff, int S, int N, int H, int KVH,
                                                   int D, int W, float scale) {
	__shared__ float sm[ATT_SMEM];
	const int ld = D + 1, tq = attTile(2 * ATT_ROWS * ld + 2 * ATT_ROWS, 2 * ld + 2 + 2 * ATT_ROWS), ts = tq + 1;
	float *ks = sm, *vs = ks + ATT_ROWS * ld, *qs = vs + ATT_ROWS * ld, *dos = qs + tq * ld, *ls = dos + tq * ld,
	      *dl = ls + tq, *ps = dl + tq, *ds = ps + ATT_ROWS * ts;
	const int r = threadIdx.x / ATT_LANES, sub = threadIdx.x % ATT_LANES;
	const int kvh = blockIdx.y, G = H / KVH;
	const int j0 = blockIdx.x * ATT_ROWS, j = j0 + r;
	const bool live = j < N;
	const int last = live ? attLastQuery(seqOff, S, j, W, N) : 0;
	// The block's queries: from its first key to the last query of its last key.
	const int ilo = j0, ihi = attLastQuery(seqOff, S, attMin(j0 + ATT_ROWS, N) - 1, W, N);
	const int nc = (D + ATT_LANES - 1) / ATT_LANES;

	attStage(ks, ld, k, j0, ATT_ROWS, N, KVH, kvh, D, 1.0f);
	attStage(vs, ld, v, j0, ATT_ROWS, N, KVH, kvh, D, 1.0f);
	float dka[ATT_DPT], dva[ATT_DPT];
	ATT_UNROLL for (int c = 0; c < ATT_DPT; c++) {
		dka[c] = 0.0f;
		dva[c] = 0.0f;
	}
	for (int g = 0; g < G; g++) {
		const int h = kvh * G + g;
		for (int t0 = ilo; t0 <= ihi; t0 += tq) {
			const int ni = attMin(tq, ihi - t0 + 1);
			__syncthreads();  // ks, vs are staged; the tile before is consumed
			attStage(qs, ld, q, t0, ni, N, H, h, D, scale);  // as the forward formed S
			attStage(dos, ld, dout, t0, ni, N, H, h, D, 1.0f);
			for (int t = threadIdx.x; t < ni; t += blockDim.x) {
				const long long gi = ((long long)(t0 + t) * H + h) * D;
				float delta = 0.0f;  // δ_i = dout_i·out_i, from global memory
				for (int d = 0; d < D; d++) delta += dout[gi + d] * out[gi + d];
				dl[t] = delta;
				ls[t] = lse[(long long)(t0 + t) * H + h];
			}
			__syncthreads();
			for (int tt = sub; tt < ni; tt += ATT_LANES) {
				const int i = t0 + tt;
				float pr = 0.0f, g2 = 0.0f;
				if (live && i >= j && i <= last) {
					pr = expf(attDot(qs + tt * ld, ks + r * ld, D) - ls[tt]);
					g2 = pr * (attDot(dos + tt * ld, vs + r * ld, D) - dl[tt]);
				}
				ps[r * ts + tt] = pr;
				ds[r * ts + tt] = g2;
			}
			__syncthreads();
			for (int tt = 0; tt < ni; tt++) {
				const float pr = ps[r * ts + tt], g2 = ds[r * ts + tt];
				const float *qi = qs + tt * ld, *doi = dos + tt * ld;
				ATT_UNROLL for (int c = 0; c < ATT_DPT; c++) {
					const int d = sub + c * ATT_LANES;
					if (c < nc && d < D) {
						dva[c] += pr * doi[d];
						dka[c] += g2 * qi[d];  // qi is scale·q: dka is scale·Σ dS·q
					}
				}
			}
		}
	}
	if (!live) return;
	const long long row = ((long long)j * KVH + kvh) * D;
	ATT_UNROLL for (int c = 0; c < ATT_DPT; c++) {
		const int d = sub + c * ATT_LANES;
		if (c < nc && d < D) {
			dk[row + d] += dka[c];
			dv[row + d] += dva[c];
		}
	}
}
