// A second tensor-core attention of the bf16 mode ("tc2", Ops.SetAttentionKernel),
// beside attention_tc.cu ("tc1", the default): the same contracts, masks
// and bf16 rounding points (see attention_tc.cu's header: q, k, v, dout
// rounded to bfloat16 as they are staged; S, softmax, lse, δ in float32; P
// and dS rounded to bfloat16 for their second product; l adds the
// unrounded P), arranged as FlashAttention-2 does. It has not run on a GPU
// yet: tc1 stays the default until the hardware test
// (TestAttentionTC2OnHardware) shows it correct and faster.
//
// Forward (attention_fa2_forward): a block takes 64 (query, head) rows of
// one KV head (row f is query f/G, head kvh·G + f%G, as attention_tc.cu),
// 4 warps of 16 rows. Each warp keeps its q fragments, its 16×D output
// accumulators, its running max and sum in registers for the whole key
// loop; its scores go through a per-warp f32 scratch (wmma's layout is
// opaque) for the row-wise softmax, which is warp-local (__syncwarp only),
// and P is written over that scratch as bf16. Key/value tiles of 32 rows
// are double-buffered in shared memory: the next tile's global loads are
// issued into registers before the current tile's math and stored
// (rounded to bf16) into the other buffer after it (the keys' after the
// scores, then the values' after P·V, so that only one tile's loads hold
// registers), so one __syncthreads a tile suffices.
//
// Backward, FA2's split, deterministic (fixed order, no atomics):
// attention_fa2_delta computes δ = rowsum(round(dout)∘out) once per call
// into a scratch [N,H]; attention_fa2_backward_dq takes 64 query rows a
// block and walks the key tiles, attention_fa2_backward_dkdv takes 64 keys
// a block and walks the query tiles of each query head of its KV head in
// turn. Both use 8 warps, two per 16 rows (one holding q's or k's
// fragments, the other dout's or v's: a warp holding both and the dK and
// dV accumulators would need more than the 255 registers a thread has), and
// 16-row tiles double-buffered as the forward's.
//
// Shared memory is static, under the 48 KiB a launch gets without opting
// in. Every barrier, shuffle and wmma call is reached by the whole block or
// warp (bounds block-uniform, branches around wmma warp-uniform), as
// cpushim requires. seqOff is read on the device, every range clamped as
// in attention.cuh.
#include "attention.cuh"

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <mma.h>
#define FA_UNROLL _Pragma("unroll")
#else
#define FA_UNROLL
#endif

#define FA_ROWS 64              // rows (query/head pairs, or keys) per block
#define FA_DMAX 128             // largest head dim
#define FA_NF (FA_DMAX / 16)    // 16-column blocks of a head, at most
#define FA_LD (FA_DMAX + 8)     // row stride of a staged bf16 tile, in elements
#define FA_FK 32                // keys of a forward tile
#define FA_FSLD (FA_FK + 4)     // row stride of a forward warp's f32 scratch
#define FA_BK 16                // rows of a backward tile (keys in dq, queries in dkdv)
#define FA_BSLD (FA_BK + 4)     // row stride of a backward f32 scratch

typedef __nv_bfloat16 fabf;
typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, fabf, nvcuda::wmma::row_major> faA;
typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, fabf, nvcuda::wmma::col_major> faBcol;
typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, fabf, nvcuda::wmma::row_major> faBrow;
typedef nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> faAcc;

// faF4 is four floats loaded (or held) together: one 16-byte load. Ops
// launches tc2 only on 16-byte aligned q, k, v, dout (attnTC2Aligned); rows
// of D floats, D a multiple of 16, keep every row's start aligned.
struct __align__(16) faF4 {
	float x, y, z, w;
};

// faRegs holds a thread's share of a ROWS×D tile of two sources in
// registers, in fours: four-float unit e = threadIdx.x + u·NT (row-major,
// D/4 units a row) at a[u], b[u].
template <int ROWS, int NT>
struct faRegs {
	faF4 a[ROWS * FA_DMAX / (4 * NT)], b[ROWS * FA_DMAX / (4 * NT)];
};

// faFetch loads the tile into r: row t of x1 (and x2, when not null) at
// rowOff(t), zeros where rowOff(t) < 0 or t ≥ ROWS. Rows and columns are
// walked by carry instead of dividing.
template <int ROWS, int NT, class RowOff>
__device__ __forceinline__ void faFetch(faRegs<ROWS, NT> &r, const float *__restrict__ x1, const float *__restrict__ x2,
                                        int D, RowOff rowOff) {
	const int D4 = D / 4, sq = NT / D4, sr = NT - sq * D4;
	int t = threadIdx.x / D4, d = threadIdx.x - t * D4;
	const faF4 zero = {0.0f, 0.0f, 0.0f, 0.0f};
	FA_UNROLL for (int u = 0; u < ROWS * FA_DMAX / (4 * NT); u++) {
		const long long o = t < ROWS ? rowOff(t) : -1LL;
		r.a[u] = o >= 0 ? *(const faF4 *)(x1 + o + 4 * d) : zero;
		r.b[u] = o >= 0 && x2 != nullptr ? *(const faF4 *)(x2 + o + 4 * d) : zero;
		d += sr;
		t += sq;
		if (d >= D4) {
			d -= D4;
			t++;
		}
	}
}

// faPut4 rounds four floats into dst[0 … 3] as bfloat16.
__device__ __forceinline__ void faPut4(fabf *dst, const faF4 &f) {
	dst[0] = __float2bfloat16_rn(f.x);
	dst[1] = __float2bfloat16_rn(f.y);
	dst[2] = __float2bfloat16_rn(f.z);
	dst[3] = __float2bfloat16_rn(f.w);
}

// faPut rounds r into dst1 (dst2, when not null) [ROWS][FA_LD] bfloat16,
// the elements faFetch loaded.
template <int ROWS, int NT>
__device__ __forceinline__ void faPut(const faRegs<ROWS, NT> &r, fabf *dst1, fabf *dst2, int D) {
	const int D4 = D / 4, sq = NT / D4, sr = NT - sq * D4;
	int t = threadIdx.x / D4, d = threadIdx.x - t * D4;
	FA_UNROLL for (int u = 0; u < ROWS * FA_DMAX / (4 * NT); u++) {
		if (t < ROWS) {
			faPut4(dst1 + t * FA_LD + 4 * d, r.a[u]);
			if (dst2 != nullptr) faPut4(dst2 + t * FA_LD + 4 * d, r.b[u]);
		}
		d += sr;
		t += sq;
		if (d >= D4) {
			d -= D4;
			t++;
		}
	}
}

// faStage64 rounds the 64 rows of x at rowOff(t) into dst [64][FA_LD], in
// 16-row passes through registers.
template <int NT, class RowOff>
__device__ __forceinline__ void faStage64(fabf *dst, const float *__restrict__ x, int D, RowOff rowOff) {
	for (int p = 0; p < FA_ROWS; p += 16) {
		faRegs<16, NT> r;
		faFetch(r, x, nullptr, D, [=](int t) { return rowOff(p + t); });
		faPut(r, dst + p * FA_LD, nullptr, D);
	}
}

// faRow is the offset of (query, head) row f of KV head kvh in [·,H,D].
__device__ __forceinline__ long long faRow(int f, int G, int H, int kvh, int D) {
	return ((long long)(f / G) * H + kvh * G + f % G) * D;
}

// attention_fa2_forward is attention_forward (same parameters and
// contract) on tensor cores; D a multiple of 16, at most 128. Grid
// (⌈Nq·G/64⌉, KVH), block 128.
extern "C" __global__ void attention_fa2_forward(float *__restrict__ out, float *__restrict__ lse,
                                                 const float *__restrict__ q, const float *__restrict__ k,
                                                 const float *__restrict__ v, const int *__restrict__ seqOff, int S,
                                                 int Nq, int H, int KVH, int D, int W, int qoff, float scale) {
	namespace wmma = nvcuda::wmma;
	constexpr int TILE = FA_FK * FA_LD;  // elements of a staged key (or value) tile
	__shared__ __align__(32) unsigned char sm[4 * TILE * 2 + 4 * 16 * FA_FSLD * 4 + 256 * 4 + FA_ROWS * 4];
	fabf *kv = (fabf *)sm;  // buffer b: keys at kv + 2b·TILE, values TILE further; the queries [64][FA_LD] before the loop
	float *sc = (float *)(sm + 4 * TILE * 2);
	float *ridx = sc + 4 * 16 * FA_FSLD;  // [16][16]: row indices (attention_tc.cu's rescaling trick)
	float *alpha = ridx + 256;            // per row: e^(m_old − m_new), then 1/l

	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	const int r = lane / 2, half = lane % 2, R = 16 * warp + r;  // the row this lane's softmax work is on
	const int kvh = blockIdx.y, G = H / KVH, total = Nq * G, nd = D / 16;
	const int f0 = blockIdx.x * FA_ROWS, f = f0 + R;
	const bool live = f < total;
	const int i = live ? f / G : 0, h = kvh * G + (live ? f % G : 0);
	const int p = i + qoff;
	const int first = live ? attFirstKey(seqOff, S, p, W) : 0;
	const int jlo = attFirstKey(seqOff, S, f0 / G + qoff, W), jhi = (attMin(f0 + FA_ROWS, total) - 1) / G + qoff;
	float *scw = sc + warp * 16 * FA_FSLD;
	fabf *pw = (fabf *)scw;  // P over the scores: row r at the start of the scores' row r (stride 2·FA_FSLD)

	faStage64<128>(kv, q, D, [=](int t) { return f0 + t < total ? faRow(f0 + t, G, H, kvh, D) : -1LL; });
	for (int e = threadIdx.x; e < 256; e += blockDim.x) ridx[e] = (float)(e / 16);
	__syncthreads();
	faA qf[FA_NF];
	FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) wmma::load_matrix_sync(qf[c], kv + 16 * warp * FA_LD + 16 * c, FA_LD);
	faAcc o[FA_NF];
	FA_UNROLL for (int c = 0; c < FA_NF; c++) wmma::fill_fragment(o[c], 0.0f);
	auto keyRow = [=](int j0, int nk) {
		return [=](int t) { return t < nk ? ((long long)(j0 + t) * KVH + kvh) * D : -1LL; };
	};
	faRegs<FA_FK, 128> pf;  // one source at a time (b unused): keys, then values
	faFetch(pf, k, nullptr, D, keyRow(jlo, attMin(FA_FK, jhi - jlo + 1)));
	__syncthreads();  // every warp has its q fragments
	faPut(pf, kv, nullptr, D);
	faFetch(pf, v, nullptr, D, keyRow(jlo, attMin(FA_FK, jhi - jlo + 1)));
	faPut(pf, kv + TILE, nullptr, D);
	float m = -INFINITY, l = 0.0f;  // l: the sum over this lane's half of the keys
	int buf = 0;
	for (int j0 = jlo; j0 <= jhi; j0 += FA_FK, buf ^= 1) {
		const int nk = attMin(FA_FK, jhi - j0 + 1);
		const bool more = j0 + FA_FK <= jhi;
		__syncthreads();  // this tile is stored; the other buffer's readers are done
		const auto next = keyRow(j0 + FA_FK, attMin(FA_FK, jhi - j0 - FA_FK + 1));
		fabf *kn = kv + 2 * (buf ^ 1) * TILE;  // the next tile's buffer
		if (more) faFetch(pf, k, nullptr, D, next);
		const fabf *ks = kv + 2 * buf * TILE, *vs = ks + TILE;
		FA_UNROLL for (int jb = 0; jb < FA_FK / 16; jb++) {
			faAcc s;
			wmma::fill_fragment(s, 0.0f);
			FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) {
				faBcol kb;  // kᵀ: (d, j) at ks[j·FA_LD + d]
				wmma::load_matrix_sync(kb, ks + 16 * jb * FA_LD + 16 * c, FA_LD);
				wmma::mma_sync(s, qf[c], kb, s);
			}
			wmma::store_matrix_sync(scw + 16 * jb, s, FA_FSLD, wmma::mem_row_major);
		}
		if (more) {  // the next keys to their buffer, then its values' loads in flight
			faPut(pf, kn, nullptr, D);
			faFetch(pf, v, nullptr, D, next);
		}
		__syncwarp();
		float sv[16], mt = -INFINITY;
		FA_UNROLL for (int u = 0; u < 16; u++) {
			const int jj = half * 16 + u, j = j0 + jj;
			sv[u] = live && jj < nk && j >= first && j <= p ? scale * scw[r * FA_FSLD + jj] : -INFINITY;
			mt = fmaxf(mt, sv[u]);
		}
		__syncwarp();  // every lane has read its scores before P overwrites them
		mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
		const float mn = fmaxf(m, mt), a = mn == -INFINITY ? 1.0f : expf(m - mn);
		l *= a;
		FA_UNROLL for (int u = 0; u < 16; u++) {
			const float pr = sv[u] == -INFINITY ? 0.0f : expf(sv[u] - mn);
			l += pr;
			pw[r * 2 * FA_FSLD + half * 16 + u] = __float2bfloat16_rn(pr);
		}
		m = mn;
		if (half == 0) alpha[R] = a;
		__syncwarp();
		float al[faAcc::num_elements];  // the factor of each element's row
		{
			faAcc rowf;  // loaded where used rather than held: registers are short here
			wmma::load_matrix_sync(rowf, ridx, 16, wmma::mem_row_major);
			FA_UNROLL for (int e = 0; e < faAcc::num_elements; e++) al[e] = alpha[16 * warp + (int)rowf.x[e]];
		}
		FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) {
			FA_UNROLL for (int e = 0; e < faAcc::num_elements; e++) o[c].x[e] *= al[e];
		}
		FA_UNROLL for (int kb = 0; kb < FA_FK / 16; kb++) {
			faA pa;
			wmma::load_matrix_sync(pa, pw + 16 * kb, 2 * FA_FSLD);
			FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) {
				faBrow vb;  // v: (j, d) at vs[j·FA_LD + d]
				wmma::load_matrix_sync(vb, vs + 16 * kb * FA_LD + 16 * c, FA_LD);
				wmma::mma_sync(o[c], pa, vb, o[c]);
			}
		}
		if (more) faPut(pf, kn + TILE, nullptr, D);
	}
	l += __shfl_xor_sync(0xffffffffu, l, 1);
	__syncwarp();  // every lane has read alpha
	if (half == 0) {
		alpha[R] = 1.0f / l;
		if (live && lse != nullptr) lse[(long long)i * H + h] = m + logf(l);
	}
	__syncwarp();
	float li[faAcc::num_elements];
	{
		faAcc rowf;
		wmma::load_matrix_sync(rowf, ridx, 16, wmma::mem_row_major);
		FA_UNROLL for (int e = 0; e < faAcc::num_elements; e++) li[e] = alpha[16 * warp + (int)rowf.x[e]];
	}
	FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) {
		FA_UNROLL for (int e = 0; e < faAcc::num_elements; e++) o[c].x[e] *= li[e];
		wmma::store_matrix_sync(scw, o[c], FA_FSLD, wmma::mem_row_major);
		__syncwarp();
		for (int e = lane; e < 256; e += 32) {
			const int rr = e / 16, cc = e % 16, ff = f0 + 16 * warp + rr;
			if (ff < total) out[faRow(ff, G, H, kvh, D) + 16 * c + cc] = scw[rr * FA_FSLD + cc];
		}
		__syncwarp();
	}
}

// attention_fa2_delta writes dl[x] = Σ_d round(dout)·out over row x of
// [rows, D] (the rows of [N,H,D]): dout as the products see it, so that
// Σ_j P_ij·(dP_ij − δ_i) stays 0 as the softmax's gradient does. A warp a
// row: lane l sums the dims l, l+32, … in order, then a shuffle tree; the
// same bits on every run. Grid ⌈rows/8⌉, block 256.
extern "C" __global__ void attention_fa2_delta(float *__restrict__ dl, const float *__restrict__ dout,
                                               const float *__restrict__ out, int rows, int D) {
	const int lane = threadIdx.x % 32;
	const long long x = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	const bool live = x < rows;
	float s = 0.0f;
	if (live) {
		for (int d = lane; d < D; d += 32) s += __bfloat162float(__float2bfloat16_rn(dout[x * D + d])) * out[x * D + d];
	}
	for (int w = 16; w >= 1; w >>= 1) s += __shfl_xor_sync(0xffffffffu, s, w);
	if (live && lane == 0) dl[x] = s;
}

// attention_fa2_backward_dq is attention_backward_dq (same parameters and
// contract: dq += scale·Σ_j dS_ij·k_j, in order) on tensor cores, with δ
// from attention_fa2_delta (dl [N,H]); D a multiple of 16, at most 128.
// Grid (⌈N·G/64⌉, KVH), block 256: warps w and w+4 take rows 16w … 16w+15.
//
// Per 16-key tile: warp w forms S = q·kᵀ into the rows' f32 scratch, warp
// w+4 dP = dout·vᵀ into a second one; the 64 threads of the pair form dS =
// e^(scale·S − lse)·(dP − δ) (4 keys each), bf16 over S's scratch; each
// warp adds dS·k to its half of dq's 16-column blocks (w the even, w+4 the
// odd), kept in fragments for the whole loop.
extern "C" __global__ void attention_fa2_backward_dq(float *__restrict__ dq, const float *__restrict__ dout,
                                                     const float *__restrict__ dl, const float *__restrict__ lse,
                                                     const float *__restrict__ q, const float *__restrict__ k,
                                                     const float *__restrict__ v, const int *__restrict__ seqOff, int S,
                                                     int N, int H, int KVH, int D, int W, float scale) {
	namespace wmma = nvcuda::wmma;
	constexpr int TILE = FA_BK * FA_LD;
	__shared__ __align__(32) unsigned char sm[4 * TILE * 2 + 8 * 16 * FA_BSLD * 4 + 2 * FA_ROWS * 4];
	fabf *kv = (fabf *)sm;  // buffer b: keys at kv + 2b·TILE, values TILE further; q, then dout [64][FA_LD] before the loop
	float *sc = (float *)(sm + 4 * TILE * 2), *dp = sc + 4 * 16 * FA_BSLD;
	float *ls = dp + 4 * 16 * FA_BSLD, *dls = ls + FA_ROWS;

	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = warp % 4, role = warp / 4;
	const int gt = role * 32 + lane, r = gt / 4, part = gt % 4, R = 16 * g + r;  // elementwise: row r, keys part·4 …
	const int kvh = blockIdx.y, G = H / KVH, total = N * G, nd = D / 16;
	const int f0 = blockIdx.x * FA_ROWS, f = f0 + R;
	const bool live = f < total;
	const int i = live ? f / G : 0;
	const int first = live ? attFirstKey(seqOff, S, i, W) : 0;
	const int jlo = attFirstKey(seqOff, S, f0 / G, W), jhi = (attMin(f0 + FA_ROWS, total) - 1) / G;
	float *mine = (role == 0 ? sc : dp) + g * 16 * FA_BSLD;  // this warp's f32 scratch
	float *scg = sc + g * 16 * FA_BSLD, *dpg = dp + g * 16 * FA_BSLD;
	fabf *dsg = (fabf *)scg;  // dS over S: stride 2·FA_BSLD

	auto groupRow = [=](int t) { return f0 + t < total ? faRow(f0 + t, G, H, kvh, D) : -1LL; };
	for (int t = threadIdx.x; t < FA_ROWS; t += blockDim.x) {
		const long long o = groupRow(t);
		ls[t] = o >= 0 ? lse[o / D] : 0.0f;
		dls[t] = o >= 0 ? dl[o / D] : 0.0f;
	}
	faA af[FA_NF];  // warp w: q's rows; warp w+4: dout's
	for (int pass = 0; pass < 2; pass++) {
		faStage64<256>(kv, pass == 0 ? q : dout, D, groupRow);
		__syncthreads();
		if (role == pass) {
			FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) wmma::load_matrix_sync(af[c], kv + 16 * g * FA_LD + 16 * c, FA_LD);
		}
		__syncthreads();
	}
	faAcc acc[FA_NF / 2];  // dq's 16-column blocks role, role + 2, …
	FA_UNROLL for (int u = 0; u < FA_NF / 2; u++) wmma::fill_fragment(acc[u], 0.0f);
	auto keyRow = [=](int j0, int nk) {
		return [=](int t) { return t < nk ? ((long long)(j0 + t) * KVH + kvh) * D : -1LL; };
	};
	faRegs<FA_BK, 256> pf;
	faFetch(pf, k, v, D, keyRow(jlo, attMin(FA_BK, jhi - jlo + 1)));
	faPut(pf, kv, kv + TILE, D);
	int buf = 0;
	for (int j0 = jlo; j0 <= jhi; j0 += FA_BK, buf ^= 1) {
		const int nk = attMin(FA_BK, jhi - j0 + 1);
		const bool more = j0 + FA_BK <= jhi;
		__syncthreads();  // this tile is stored; the other buffer's readers are done
		if (more) faFetch(pf, k, v, D, keyRow(j0 + FA_BK, attMin(FA_BK, jhi - j0 - FA_BK + 1)));
		const fabf *ks = kv + 2 * buf * TILE, *vs = ks + TILE;
		{
			const fabf *bs = role == 0 ? ks : vs;
			faAcc s;
			wmma::fill_fragment(s, 0.0f);
			FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) {
				faBcol b;
				wmma::load_matrix_sync(b, bs + 16 * c, FA_LD);
				wmma::mma_sync(s, af[c], b, s);
			}
			wmma::store_matrix_sync(mine, s, FA_BSLD, wmma::mem_row_major);
		}
		__syncthreads();
		float ds[4];
		FA_UNROLL for (int u = 0; u < 4; u++) {
			const int jj = part * 4 + u, j = j0 + jj;
			ds[u] = 0.0f;
			if (live && jj < nk && j >= first && j <= i) {
				const float pr = expf(scale * scg[r * FA_BSLD + jj] - ls[R]);
				ds[u] = pr * (dpg[r * FA_BSLD + jj] - dls[R]);
			}
		}
		__syncthreads();  // S is read before dS overwrites it
		FA_UNROLL for (int u = 0; u < 4; u++) dsg[r * 2 * FA_BSLD + part * 4 + u] = __float2bfloat16_rn(ds[u]);
		__syncthreads();
		faA pa;
		wmma::load_matrix_sync(pa, dsg, 2 * FA_BSLD);
		FA_UNROLL for (int u = 0; u < FA_NF / 2; u++) {
			const int c = role + 2 * u;
			if (c < nd) {
				faBrow b;  // k: (j, d) at ks[j·FA_LD + d]
				wmma::load_matrix_sync(b, ks + 16 * c, FA_LD);
				wmma::mma_sync(acc[u], pa, b, acc[u]);
			}
		}
		if (more) faPut(pf, kv + 2 * (buf ^ 1) * TILE, kv + 2 * (buf ^ 1) * TILE + TILE, D);
	}
	__syncthreads();  // every warp is done with the scratch
	FA_UNROLL for (int u = 0; u < FA_NF / 2; u++) {
		const int c = role + 2 * u;
		if (c < nd) {
			wmma::store_matrix_sync(mine, acc[u], FA_BSLD, wmma::mem_row_major);
			__syncwarp();
			for (int e = lane; e < 256; e += 32) {
				const int rr = e / 16, cc = e % 16, ff = f0 + 16 * g + rr;
				if (ff < total) dq[faRow(ff, G, H, kvh, D) + 16 * c + cc] += scale * mine[rr * FA_BSLD + cc];
			}
			__syncwarp();
		}
	}
}

// attention_fa2_backward_dkdv is attention_backward_dkdv (same parameters
// and contract: dv_j += Σ P_ij·dout_i, dk_j += scale·Σ dS_ij·q_i over the
// query heads of KV head kvh in order and, in each, the queries that see j
// in order) on tensor cores, with δ from attention_fa2_delta (dl [N,H]);
// D a multiple of 16, at most 128. Grid (⌈N/64⌉, KVH), block 256: warps w
// and w+4 take keys 16w … 16w+15.
//
// Per query head and 16-query tile (one flat, double-buffered sequence of
// tiles): warp w forms Sᵀ = k·qᵀ, warp w+4 dPᵀ = v·doutᵀ, each into an f32
// scratch; the 64 threads of the pair form Pᵀ and dSᵀ (4 queries each), bf16
// over those scratches; warp w adds Pᵀ·dout to dv, warp w+4 dSᵀ·q to dk, the
// whole 16×D of its keys in fragments for the whole loop.
extern "C" __global__ void attention_fa2_backward_dkdv(float *__restrict__ dk, float *__restrict__ dv,
                                                       const float *__restrict__ dout, const float *__restrict__ dl,
                                                       const float *__restrict__ lse, const float *__restrict__ q,
                                                       const float *__restrict__ k, const float *__restrict__ v,
                                                       const int *__restrict__ seqOff, int S, int N, int H, int KVH,
                                                       int D, int W, float scale) {
	namespace wmma = nvcuda::wmma;
	constexpr int TILE = FA_BK * FA_LD;
	__shared__ __align__(32) unsigned char sm[4 * TILE * 2 + 8 * 16 * FA_BSLD * 4];
	fabf *qd = (fabf *)sm;  // buffer b: queries at qd + 2b·TILE, dout TILE further; k, then v [64][FA_LD] before the loop
	float *sc = (float *)(sm + 4 * TILE * 2), *dp = sc + 4 * 16 * FA_BSLD;

	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = warp % 4, role = warp / 4;
	const int gt = role * 32 + lane, r = gt / 4, part = gt % 4;  // elementwise: key row r, queries part·4 …
	const int kvh = blockIdx.y, G = H / KVH, nd = D / 16;
	const int j0 = blockIdx.x * FA_ROWS, j = j0 + 16 * g + r;
	const bool live = j < N;
	const int last = live ? attLastQuery(seqOff, S, j, W, N) : 0;
	// The block's queries: from its first key to the last query of its last key.
	const int ilo = j0, ihi = attLastQuery(seqOff, S, attMin(j0 + FA_ROWS, N) - 1, W, N);
	const int nt = (ihi - ilo + FA_BK) / FA_BK, tiles = G * nt;  // query tiles a head, in all
	float *mine = (role == 0 ? sc : dp) + g * 16 * FA_BSLD;
	float *scg = sc + g * 16 * FA_BSLD, *dpg = dp + g * 16 * FA_BSLD;
	fabf *pbg = (fabf *)scg, *dsg = (fabf *)dpg;  // Pᵀ over Sᵀ, dSᵀ over dPᵀ: stride 2·FA_BSLD

	faA af[FA_NF];  // warp w: k's rows; warp w+4: v's
	for (int pass = 0; pass < 2; pass++) {
		faStage64<256>(qd, pass == 0 ? k : v, D, [=](int t) { return j0 + t < N ? ((long long)(j0 + t) * KVH + kvh) * D : -1LL; });
		__syncthreads();
		if (role == pass) {
			FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) wmma::load_matrix_sync(af[c], qd + 16 * g * FA_LD + 16 * c, FA_LD);
		}
		__syncthreads();
	}
	faAcc acc[FA_NF];  // warp w: dv; warp w+4: dk / scale
	FA_UNROLL for (int c = 0; c < FA_NF; c++) wmma::fill_fragment(acc[c], 0.0f);
	auto queryRow = [=](int x) {  // tile x: head kvh·G + x/nt, queries from ilo + (x%nt)·FA_BK
		const int h = kvh * G + x / nt, t0 = ilo + (x % nt) * FA_BK, ni = attMin(FA_BK, ihi - t0 + 1);
		return [=](int t) { return t < ni ? ((long long)(t0 + t) * H + h) * D : -1LL; };
	};
	faRegs<FA_BK, 256> pf;
	faFetch(pf, q, dout, D, queryRow(0));
	faPut(pf, qd, qd + TILE, D);
	int buf = 0;
	for (int x = 0; x < tiles; x++, buf ^= 1) {
		const int h = kvh * G + x / nt, t0 = ilo + (x % nt) * FA_BK, ni = attMin(FA_BK, ihi - t0 + 1);
		const bool more = x + 1 < tiles;
		__syncthreads();  // this tile is stored; the other buffer's readers are done
		if (more) faFetch(pf, q, dout, D, queryRow(x + 1));
		const fabf *qs = qd + 2 * buf * TILE, *dos = qs + TILE;
		{
			const fabf *bs = role == 0 ? qs : dos;
			faAcc s;
			wmma::fill_fragment(s, 0.0f);
			FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) {
				faBcol b;  // qᵀ (or doutᵀ): (d, i) at bs[i·FA_LD + d]
				wmma::load_matrix_sync(b, bs + 16 * c, FA_LD);
				wmma::mma_sync(s, af[c], b, s);
			}
			wmma::store_matrix_sync(mine, s, FA_BSLD, wmma::mem_row_major);
		}
		__syncthreads();
		float pr[4], ds[4];
		FA_UNROLL for (int u = 0; u < 4; u++) {
			const int tt = part * 4 + u, i = t0 + tt;
			pr[u] = 0.0f;
			ds[u] = 0.0f;
			if (live && tt < ni && i >= j && i <= last) {
				const long long row = (long long)i * H + h;
				pr[u] = expf(scale * scg[r * FA_BSLD + tt] - lse[row]);
				ds[u] = pr[u] * (dpg[r * FA_BSLD + tt] - dl[row]);
			}
		}
		__syncthreads();  // Sᵀ and dPᵀ are read before Pᵀ and dSᵀ overwrite them
		FA_UNROLL for (int u = 0; u < 4; u++) {
			pbg[r * 2 * FA_BSLD + part * 4 + u] = __float2bfloat16_rn(pr[u]);
			dsg[r * 2 * FA_BSLD + part * 4 + u] = __float2bfloat16_rn(ds[u]);
		}
		__syncthreads();
		faA pa;
		wmma::load_matrix_sync(pa, role == 0 ? pbg : dsg, 2 * FA_BSLD);
		const fabf *b2 = role == 0 ? dos : qs;
		FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) {
			faBrow b;  // dout (or q): (i, d) at b2[i·FA_LD + d]
			wmma::load_matrix_sync(b, b2 + 16 * c, FA_LD);
			wmma::mma_sync(acc[c], pa, b, acc[c]);
		}
		if (more) faPut(pf, qd + 2 * (buf ^ 1) * TILE, qd + 2 * (buf ^ 1) * TILE + TILE, D);
	}
	__syncthreads();  // every warp is done with the scratch
	float *dst = role == 0 ? dv : dk;
	const float mul = role == 0 ? 1.0f : scale;
	FA_UNROLL for (int c = 0; c < FA_NF; c++) if (c < nd) {
		wmma::store_matrix_sync(mine, acc[c], FA_BSLD, wmma::mem_row_major);
		__syncwarp();
		for (int e = lane; e < 256; e += 32) {
			const int rr = e / 16, cc = e % 16, jj = j0 + 16 * g + rr;
			if (jj < N) dst[((long long)jj * KVH + kvh) * D + 16 * c + cc] += mul * mine[rr * FA_BSLD + cc];
		}
		__syncwarp();
	}
}
