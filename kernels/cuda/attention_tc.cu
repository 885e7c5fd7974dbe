// Causal grouped-query attention over packed variable-length sequences on
// bf16 tensor cores: the kernels of the CUDA backend's bf16 precision mode
// (kernels.PrecisionBF16; Ops picks them there for head dims D a multiple
// of 16 up to 128, and attention.cu's f32 kernels otherwise). The
// contracts, the masks (a sequence's own keys, a sliding window of W) and
// the scheme are attention.cu's — flash attention: key tiles streamed
// through shared memory, an online softmax, the backward recomputing P
// from the forward's lse and summing in a fixed order without atomics —
// with the products on nvcuda::wmma m16n16k16 fragments: bfloat16 operands,
// float accumulation.
//
// Rounding: q, k, v and dout stay float32 in memory and are rounded to
// bfloat16 (nearest even) as they are staged into shared memory; the
// scores S = q·k accumulate in float and are scaled in float; softmax, its
// max and sum, lse, the rescaling and δ_i = dout_i·out_i (from global
// memory, dout rounded as the products see it) are float32. The
// probabilities P (forward: e^(S−m) against the running max; backward:
// e^(S−lse)) and dS = P·(dP − δ) are rounded to bfloat16 to enter the next
// product (P·V, dS·K, Pᵀ·dout, dSᵀ·q), as flash attention does; the
// softmax sum l adds the unrounded P, so lse is float32 arithmetic on the
// rounded q and k.
//
// Geometry. Forward and dq: a block takes 64 rows, (query, head) pairs of
// one KV head as in attention.cu (row f is query f/G, head kvh·G + f%G, so
// the G heads sharing a KV head share its staged keys), 16 rows a warp. The
// forward has 4 warps; each holds its 16 rows of q as fragments, forms the
// scores of a 32-key tile, and keeps its 16×D output in accumulator
// fragments. dq has 8 warps, two per 16 rows: one forms S = q·kᵀ, the other
// dP = dout·vᵀ, then both form dS and each accumulates half of dq's 16-column
// blocks. dkdv: a block takes 64 keys of one KV head, 8 warps, two per 16
// keys: one holds k (Sᵀ = k·qᵀ, then dv += Pᵀ·dout), the other v (dPᵀ =
// v·doutᵀ, then dk += dSᵀ·q), over 32-query tiles of each of the G query
// heads in turn. Shared memory is static (at most 46336 bytes, under the
// 48 KiB a launch gets without opting in): bf16 tiles with rows of
// TC_LD = 136 elements, f32 score tiles of TC_SLD = 36, bf16 P tiles of
// TC_PLD = 40, each 32-byte aligned as wmma wants.
//
// Row-wise work on an accumulator goes through shared memory (fragment
// layouts are opaque): scores are stored to a warp's f32 tile, and the
// threads of a row read them there. The forward's rescaling of its output
// accumulators by e^(m_old − m_new) per row uses a fragment loaded from a
// 16×16 matrix of row indices: loaded with the same layout as the output
// accumulators (an accumulator fragment's element e is at the same (row,
// column) in every fragment of its type, what load_matrix_sync, mma_sync's
// C and D, and store_matrix_sync share), its element e holds the row of
// element e, so every lane scales its own elements without a round trip.
//
// Every barrier, shuffle and wmma call is reached by the whole block or
// warp (loop bounds are block-uniform, branches around wmma warp-uniform;
// masking is per element), as cpushim requires. seqOff is read on the
// device and not checked by the host: every range is clamped as in
// attention.cu (attention.cuh). Tested on the CPU through cpushim's wmma
// emulation against kernels/ref; on a GPU by the hardware tests
// (TestAttentionTCOnHardware). Those ran once on an H200, before the
// staging (tcStage, tcDelta) took its present form: every check passed but
// one bound since set to the mode's (dv 1.1e-2 against ref on the rounded
// inputs on the long sequences, then held to 1e-2, now 2e-2); 6.3 ms
// forward and 21.7 ms backward on the 7B training shape, against the f32
// kernels' 15.2 and 60.7 ms.
#include "attention.cuh"

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <mma.h>
#define TC_UNROLL _Pragma("unroll")
#define TC_UNROLL8 _Pragma("unroll 8")
#else
#define TC_UNROLL
#define TC_UNROLL8
#endif

#define TC_ROWS 64                // rows (query/head pairs, or keys) per block
#define TC_TILE 32                // rows of a streamed tile: keys (forward, dq), queries (dkdv)
#define TC_DMAX 128               // largest head dim
#define TC_NF (TC_DMAX / 16)      // 16-column blocks of a head, at most
#define TC_LD (TC_DMAX + 8)       // row stride of a staged bf16 tile, in elements
#define TC_SLD (TC_TILE + 4)      // row stride of a 16-row f32 score tile
#define TC_PLD (TC_TILE + 8)      // row stride of a 16-row bf16 P or dS tile
#define TC_BF_TILE (TC_TILE * TC_LD * 2)  // bytes of a staged 32-row bf16 tile
#define TC_SC (16 * TC_SLD * 4)           // bytes of a score tile
#define TC_PB (16 * TC_PLD * 2)           // bytes of a P tile
#define TC_BATCH 8                        // elements a thread loads at once when staging

typedef __nv_bfloat16 tcbf;
typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, tcbf, nvcuda::wmma::row_major> tcA;
typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, tcbf, nvcuda::wmma::col_major> tcBcol;
typedef nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, tcbf, nvcuda::wmma::row_major> tcBrow;
typedef nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> tcAcc;

// tcStage rounds rows 0 … nrows−1 of x1 (and of x2, when not null) into
// dst1 (dst2) [nrows][TC_LD] bfloat16: row t is the D floats at
// rowOff(t), or zeros where rowOff(t) < 0 (so that masked products never
// meet garbage). Thread i takes elements i, i + blockDim.x, … (row-major),
// walking rows and columns by carry instead of dividing; it loads
// TC_BATCH elements of each source before it stores any, so that their
// loads are in flight together.
template <class RowOff>
__device__ __forceinline__ void tcStage(tcbf *dst1, const float *__restrict__ x1, tcbf *dst2, const float *__restrict__ x2,
                                        int nrows, int D, RowOff rowOff) {
	const int sq = blockDim.x / D, sr = blockDim.x - sq * D;  // a step: sq rows and sr columns on
	int t = threadIdx.x / D, d = threadIdx.x - t * D;
	while (t < nrows) {
		const int t0 = t, d0 = d;
		float a[TC_BATCH], b[TC_BATCH];
		TC_UNROLL for (int u = 0; u < TC_BATCH; u++) {
			const long long o = t < nrows ? rowOff(t) : -1;
			a[u] = o >= 0 ? x1[o + d] : 0.0f;
			b[u] = o >= 0 && x2 != nullptr ? x2[o + d] : 0.0f;
			d += sr;
			t += sq;
			if (d >= D) {
				d -= D;
				t++;
			}
		}
		t = t0;
		d = d0;
		TC_UNROLL for (int u = 0; u < TC_BATCH; u++) {
			if (t < nrows) {
				dst1[t * TC_LD + d] = __float2bfloat16_rn(a[u]);
				if (x2 != nullptr) dst2[t * TC_LD + d] = __float2bfloat16_rn(b[u]);
			}
			d += sr;
			t += sq;
			if (d >= D) {
				d -= D;
				t++;
			}
		}
	}
}

// tcRound is x rounded to bfloat16 (nearest even) and widened: dout as
// the products see it, for δ = dout·out, so that Σ_j P_ij·(dP_ij − δ_i)
// stays 0 as the softmax's gradient does.
__device__ __forceinline__ float tcRound(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

// tcRow is the offset of (query, head) row f of KV head kvh in [·,H,D].
__device__ __forceinline__ long long tcRow(int f, int G, int H, int kvh, int D) {
	return ((long long)(f / G) * H + kvh * G + f % G) * D;
}

// tcDelta writes, for rows t < nrows, δ_t = Σ_d round(dout)·out over the
// row of [·,H,D] at rowOff(t) into dl[t] and its lse (lse [·,H]) into
// ls[t]; zeros where rowOff(t) < 0. blockDim.x/nrows threads take a row (a
// power of 2 up to 32, within a warp), each summing the dims part, part +
// per, … in order, then a shuffle tree: the same bits on every run. Every
// thread of the block calls it (the shuffles are uniform).
template <class RowOff>
__device__ __forceinline__ void tcDelta(float *dl, float *ls, int nrows, const float *__restrict__ dout,
                                        const float *__restrict__ out, const float *__restrict__ lse, int D,
                                        RowOff rowOff) {
	const int per = blockDim.x / nrows, t = threadIdx.x / per, part = threadIdx.x % per;
	const long long o = rowOff(t);
	float s = 0.0f;
	if (o >= 0) {
		TC_UNROLL8 for (int d = part; d < D; d += per) s += tcRound(dout[o + d]) * out[o + d];
	}
	for (int w = 1; w < per; w <<= 1) s += __shfl_xor_sync(0xffffffffu, s, w);
	if (part == 0) {
		dl[t] = s;
		ls[t] = o >= 0 ? lse[o / D] : 0.0f;
	}
}

// attention_tc_forward is attention_forward (same parameters and
// contract) on tensor cores; D a multiple of 16, at most 128. Grid
// (⌈Nq·G/64⌉, KVH), block 128.
//
// Per 32-key tile: each warp forms its 16×32 scores (q·kᵀ over D/16
// k-steps) into its f32 tile; two lanes a row take the row's masked,
// scaled scores, the tile max (one shuffle), the rescale factor
// e^(m_old − m_new) (to shared, for the accumulators) and P = e^(s − m_new)
// (rounded into the warp's bf16 P tile; l adds it unrounded); then the
// warp rescales its output fragments and adds P·v.
extern "C" __global__ void attention_tc_forward(float *__restrict__ out, float *__restrict__ lse,
                                                const float *__restrict__ q, const float *__restrict__ k,
                                                const float *__restrict__ v, const int *__restrict__ seqOff, int S,
                                                int Nq, int H, int KVH, int D, int W, int qoff, float scale) {
	namespace wmma = nvcuda::wmma;
	__shared__ __align__(32) unsigned char sm[2 * TC_BF_TILE + 4 * TC_SC + 4 * TC_PB + 256 * 4 + 2 * TC_ROWS * 4];
	tcbf *ks = (tcbf *)sm, *vs = ks + TC_TILE * TC_LD;
	tcbf *qs = ks;  // the block's queries [64][TC_LD], before the first tile
	float *sc = (float *)(sm + 2 * TC_BF_TILE);
	tcbf *pb = (tcbf *)(sm + 2 * TC_BF_TILE + 4 * TC_SC);
	float *ridx = (float *)(sm + 2 * TC_BF_TILE + 4 * TC_SC + 4 * TC_PB);  // [16][16]: row indices
	float *alpha = ridx + 256, *linv = alpha + TC_ROWS;

	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	const int r = lane / 2, half = lane % 2, R = 16 * warp + r;  // the row this lane's softmax work is on
	const int kvh = blockIdx.y, G = H / KVH, total = Nq * G, nd = D / 16;
	const int f0 = blockIdx.x * TC_ROWS, f = f0 + R;
	const bool live = f < total;
	const int i = live ? f / G : 0, h = kvh * G + (live ? f % G : 0);
	const int p = i + qoff;
	const int first = live ? attFirstKey(seqOff, S, p, W) : 0;
	const int jlo = attFirstKey(seqOff, S, f0 / G + qoff, W), jhi = (attMin(f0 + TC_ROWS, total) - 1) / G + qoff;
	float *scw = sc + warp * 16 * TC_SLD;
	tcbf *pbw = pb + warp * 16 * TC_PLD;

	auto groupRow = [=](int t) { return f0 + t < total ? tcRow(f0 + t, G, H, kvh, D) : -1LL; };
	tcStage(qs, q, nullptr, nullptr, TC_ROWS, D, groupRow);
	for (int e = threadIdx.x; e < 256; e += blockDim.x) ridx[e] = (float)(e / 16);
	__syncthreads();
	tcA qf[TC_NF];
	TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd) wmma::load_matrix_sync(qf[c], qs + 16 * warp * TC_LD + 16 * c, TC_LD);
	tcAcc rowf, o[TC_NF];
	wmma::load_matrix_sync(rowf, ridx, 16, wmma::mem_row_major);
	TC_UNROLL for (int c = 0; c < TC_NF; c++) wmma::fill_fragment(o[c], 0.0f);
	float m = -INFINITY, l = 0.0f;  // l: the sum over this lane's half of the keys
	for (int j0 = jlo; j0 <= jhi; j0 += TC_TILE) {
		const int nk = attMin(TC_TILE, jhi - j0 + 1);
		__syncthreads();  // q's fragments are loaded; the tile before is consumed
		tcStage(ks, k, vs, v, TC_TILE, D, [=](int t) { return t < nk ? ((long long)(j0 + t) * KVH + kvh) * D : -1LL; });
		__syncthreads();
		TC_UNROLL for (int jb = 0; jb < TC_TILE / 16; jb++) {
			tcAcc s;
			wmma::fill_fragment(s, 0.0f);
			TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd) {
				tcBcol kb;  // kᵀ: (d, j) at ks[j·TC_LD + d]
				wmma::load_matrix_sync(kb, ks + 16 * jb * TC_LD + 16 * c, TC_LD);
				wmma::mma_sync(s, qf[c], kb, s);
			}
			wmma::store_matrix_sync(scw + 16 * jb, s, TC_SLD, wmma::mem_row_major);
		}
		__syncwarp();
		float sv[16], mt = -INFINITY;
		TC_UNROLL for (int u = 0; u < 16; u++) {
			const int jj = half * 16 + u, j = j0 + jj;
			sv[u] = live && jj < nk && j >= first && j <= p ? scale * scw[r * TC_SLD + jj] : -INFINITY;
			mt = fmaxf(mt, sv[u]);
		}
		mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
		const float mn = fmaxf(m, mt), a = mn == -INFINITY ? 1.0f : expf(m - mn);
		l *= a;
		TC_UNROLL for (int u = 0; u < 16; u++) {
			const float pr = sv[u] == -INFINITY ? 0.0f : expf(sv[u] - mn);
			l += pr;
			pbw[r * TC_PLD + half * 16 + u] = __float2bfloat16_rn(pr);
		}
		m = mn;
		if (half == 0) alpha[R] = a;
		__syncwarp();
		float al[tcAcc::num_elements];  // the factor of each element's row
		TC_UNROLL for (int e = 0; e < tcAcc::num_elements; e++) al[e] = alpha[16 * warp + (int)rowf.x[e]];
		TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd) {
			TC_UNROLL for (int e = 0; e < tcAcc::num_elements; e++) o[c].x[e] *= al[e];
		}
		TC_UNROLL for (int kb = 0; kb < TC_TILE / 16; kb++) {
			tcA pa;
			wmma::load_matrix_sync(pa, pbw + 16 * kb, TC_PLD);
			TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd) {
				tcBrow vb;  // v: (j, d) at vs[j·TC_LD + d]
				wmma::load_matrix_sync(vb, vs + 16 * kb * TC_LD + 16 * c, TC_LD);
				wmma::mma_sync(o[c], pa, vb, o[c]);
			}
		}
	}
	l += __shfl_xor_sync(0xffffffffu, l, 1);
	if (half == 0) {
		linv[R] = 1.0f / l;
		if (live && lse != nullptr) lse[(long long)i * H + h] = m + logf(l);
	}
	__syncwarp();
	TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd) {
		wmma::store_matrix_sync(scw, o[c], TC_SLD, wmma::mem_row_major);
		__syncwarp();
		for (int e = lane; e < 256; e += 32) {
			const int rr = e / 16, cc = e % 16, ff = f0 + 16 * warp + rr;
			if (ff < total) out[tcRow(ff, G, H, kvh, D) + 16 * c + cc] = scw[rr * TC_SLD + cc] * linv[16 * warp + rr];
		}
		__syncwarp();
	}
}

// attention_tc_backward_dq is attention_backward_dq (same parameters and
// contract: dq += scale·Σ_j dS_ij·k_j, in order) on tensor cores; D a
// multiple of 16, at most 128. Grid (⌈N·G/64⌉, KVH), block 256: warps w
// and w+4 take rows 16w … 16w+15.
//
// Per 32-key tile: warp w forms S = q·kᵀ into the rows' f32 tile, warp w+4
// dP = dout·vᵀ into a second one; then the 64 threads of the pair form
// dS = e^(scale·S − lse)·(dP − δ) (8 keys each) into a bf16 tile, and each
// warp adds dS·k to its half of the rows' 16-column blocks of dq (warp w the
// even ones, w+4 the odd).
extern "C" __global__ void attention_tc_backward_dq(float *__restrict__ dq, const float *__restrict__ dout,
                                                    const float *__restrict__ out, const float *__restrict__ lse,
                                                    const float *__restrict__ q, const float *__restrict__ k,
                                                    const float *__restrict__ v, const int *__restrict__ seqOff, int S,
                                                    int N, int H, int KVH, int D, int W, float scale) {
	namespace wmma = nvcuda::wmma;
	__shared__ __align__(32) unsigned char sm[2 * TC_BF_TILE + 8 * TC_SC + 4 * TC_PB + 2 * TC_ROWS * 4];
	tcbf *ks = (tcbf *)sm, *vs = ks + TC_TILE * TC_LD;
	tcbf *qs = ks, *dos = qs + TC_ROWS * TC_LD;  // [64][TC_LD] each, before the first tile
	float *sc = (float *)(sm + 2 * TC_BF_TILE), *dp = sc + 4 * 16 * TC_SLD;
	tcbf *dsb = (tcbf *)(sm + 2 * TC_BF_TILE + 8 * TC_SC);
	float *ls = (float *)(sm + 2 * TC_BF_TILE + 8 * TC_SC + 4 * TC_PB), *dl = ls + TC_ROWS;

	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = warp % 4, role = warp / 4;
	const int gt = role * 32 + lane, r = gt / 4, part = gt % 4, R = 16 * g + r;  // elementwise: row r, keys part·8 …
	const int kvh = blockIdx.y, G = H / KVH, total = N * G, nd = D / 16;
	const int f0 = blockIdx.x * TC_ROWS, f = f0 + R;
	const bool live = f < total;
	const int i = live ? f / G : 0;
	const int first = live ? attFirstKey(seqOff, S, i, W) : 0;
	const int jlo = attFirstKey(seqOff, S, f0 / G, W), jhi = (attMin(f0 + TC_ROWS, total) - 1) / G;
	float *mine = (role == 0 ? sc : dp) + g * 16 * TC_SLD;  // this warp's f32 tile
	float *scg = sc + g * 16 * TC_SLD, *dpg = dp + g * 16 * TC_SLD;
	tcbf *dsg = dsb + g * 16 * TC_PLD;

	auto groupRow = [=](int t) { return f0 + t < total ? tcRow(f0 + t, G, H, kvh, D) : -1LL; };
	tcStage(qs, q, dos, dout, TC_ROWS, D, groupRow);
	tcDelta(dl, ls, TC_ROWS, dout, out, lse, D, groupRow);
	__syncthreads();
	tcA af[TC_NF];  // warp w: q's rows; warp w+4: dout's
	TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd)
		wmma::load_matrix_sync(af[c], (role == 0 ? qs : dos) + 16 * g * TC_LD + 16 * c, TC_LD);
	tcAcc acc[TC_NF / 2];  // dq's 16-column blocks role, role + 2, …
	TC_UNROLL for (int u = 0; u < TC_NF / 2; u++) wmma::fill_fragment(acc[u], 0.0f);
	for (int j0 = jlo; j0 <= jhi; j0 += TC_TILE) {
		const int nk = attMin(TC_TILE, jhi - j0 + 1);
		__syncthreads();  // the fragments are loaded; the tile before is consumed
		tcStage(ks, k, vs, v, TC_TILE, D, [=](int t) { return t < nk ? ((long long)(j0 + t) * KVH + kvh) * D : -1LL; });
		__syncthreads();
		const tcbf *bs = role == 0 ? ks : vs;
		TC_UNROLL for (int jb = 0; jb < TC_TILE / 16; jb++) {
			tcAcc s;
			wmma::fill_fragment(s, 0.0f);
			TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd) {
				tcBcol b;
				wmma::load_matrix_sync(b, bs + 16 * jb * TC_LD + 16 * c, TC_LD);
				wmma::mma_sync(s, af[c], b, s);
			}
			wmma::store_matrix_sync(mine + 16 * jb, s, TC_SLD, wmma::mem_row_major);
		}
		__syncthreads();
		TC_UNROLL for (int u = 0; u < 8; u++) {
			const int jj = part * 8 + u, j = j0 + jj;
			float ds = 0.0f;
			if (live && jj < nk && j >= first && j <= i) {
				const float pr = expf(scale * scg[r * TC_SLD + jj] - ls[R]);
				ds = pr * (dpg[r * TC_SLD + jj] - dl[R]);
			}
			dsg[r * TC_PLD + jj] = __float2bfloat16_rn(ds);
		}
		__syncthreads();
		TC_UNROLL for (int kb = 0; kb < TC_TILE / 16; kb++) {
			tcA pa;
			wmma::load_matrix_sync(pa, dsg + 16 * kb, TC_PLD);
			TC_UNROLL for (int u = 0; u < TC_NF / 2; u++) {
				const int c = role + 2 * u;
				if (c < nd) {
					tcBrow b;
					wmma::load_matrix_sync(b, ks + 16 * kb * TC_LD + 16 * c, TC_LD);
					wmma::mma_sync(acc[u], pa, b, acc[u]);
				}
			}
		}
	}
	__syncthreads();  // every warp is done with the f32 tiles
	TC_UNROLL for (int u = 0; u < TC_NF / 2; u++) {
		const int c = role + 2 * u;
		if (c < nd) {
			wmma::store_matrix_sync(mine, acc[u], TC_SLD, wmma::mem_row_major);
			__syncwarp();
			for (int e = lane; e < 256; e += 32) {
				const int rr = e / 16, cc = e % 16, ff = f0 + 16 * g + rr;
				if (ff < total) dq[tcRow(ff, G, H, kvh, D) + 16 * c + cc] += scale * mine[rr * TC_SLD + cc];
			}
			__syncwarp();
		}
	}
}

// attention_tc_backward_dkdv is attention_backward_dkdv (same parameters
// and contract: dv_j += Σ P_ij·dout_i, dk_j += scale·Σ dS_ij·q_i over the
// query heads of KV head kvh in order and, in each, the queries that see j
// in order) on tensor cores; D a multiple of 16, at most 128. Grid
// (⌈N/64⌉, KVH), block 256: warps w and w+4 take keys 16w … 16w+15.
//
// Per query head and 32-query tile: warp w forms Sᵀ = k·qᵀ, warp w+4
// dPᵀ = v·doutᵀ, each into an f32 tile; the 64 threads of the pair form Pᵀ
// and dSᵀ (8 queries each) into bf16 tiles; warp w adds Pᵀ·dout to dv,
// warp w+4 dSᵀ·q to dk (the whole 16×D of its keys, in fragments).
extern "C" __global__ void attention_tc_backward_dkdv(float *__restrict__ dk, float *__restrict__ dv,
                                                      const float *__restrict__ dout, const float *__restrict__ out,
                                                      const float *__restrict__ lse, const float *__restrict__ q,
                                                      const float *__restrict__ k, const float *__restrict__ v,
                                                      const int *__restrict__ seqOff, int S, int N, int H, int KVH,
                                                      int D, int W, float scale) {
	namespace wmma = nvcuda::wmma;
	__shared__ __align__(32) unsigned char sm[2 * TC_BF_TILE + 8 * TC_SC + 8 * TC_PB + 2 * TC_TILE * 4];
	tcbf *qs = (tcbf *)sm, *dos = qs + TC_TILE * TC_LD;
	tcbf *kst = qs, *vst = kst + TC_ROWS * TC_LD;  // the block's keys and values [64][TC_LD], before the first tile
	float *sc = (float *)(sm + 2 * TC_BF_TILE), *dp = sc + 4 * 16 * TC_SLD;
	tcbf *pb = (tcbf *)(sm + 2 * TC_BF_TILE + 8 * TC_SC), *dsb = pb + 4 * 16 * TC_PLD;
	float *ls = (float *)(sm + 2 * TC_BF_TILE + 8 * TC_SC + 8 * TC_PB), *dl = ls + TC_TILE;

	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = warp % 4, role = warp / 4;
	const int gt = role * 32 + lane, r = gt / 4, part = gt % 4;  // elementwise: key row r, queries part·8 …
	const int kvh = blockIdx.y, G = H / KVH, nd = D / 16;
	const int j0 = blockIdx.x * TC_ROWS, j = j0 + 16 * g + r;
	const bool live = j < N;
	const int last = live ? attLastQuery(seqOff, S, j, W, N) : 0;
	// The block's queries: from its first key to the last query of its last key.
	const int ilo = j0, ihi = attLastQuery(seqOff, S, attMin(j0 + TC_ROWS, N) - 1, W, N);
	float *mine = (role == 0 ? sc : dp) + g * 16 * TC_SLD;
	float *scg = sc + g * 16 * TC_SLD, *dpg = dp + g * 16 * TC_SLD;
	tcbf *pbg = pb + g * 16 * TC_PLD, *dsg = dsb + g * 16 * TC_PLD;

	tcStage(kst, k, vst, v, TC_ROWS, D, [=](int t) { return j0 + t < N ? ((long long)(j0 + t) * KVH + kvh) * D : -1LL; });
	__syncthreads();
	tcA af[TC_NF];  // warp w: k's rows; warp w+4: v's
	TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd)
		wmma::load_matrix_sync(af[c], (role == 0 ? kst : vst) + 16 * g * TC_LD + 16 * c, TC_LD);
	tcAcc acc[TC_NF];  // warp w: dv; warp w+4: dk / scale
	TC_UNROLL for (int c = 0; c < TC_NF; c++) wmma::fill_fragment(acc[c], 0.0f);
	for (int hg = 0; hg < G; hg++) {
		const int h = kvh * G + hg;
		for (int t0 = ilo; t0 <= ihi; t0 += TC_TILE) {
			const int ni = attMin(TC_TILE, ihi - t0 + 1);
			__syncthreads();  // the fragments are loaded; the tile before is consumed
			auto queryRow = [=](int t) { return t < ni ? ((long long)(t0 + t) * H + h) * D : -1LL; };
			tcStage(qs, q, dos, dout, TC_TILE, D, queryRow);
			tcDelta(dl, ls, TC_TILE, dout, out, lse, D, queryRow);
			__syncthreads();
			const tcbf *bs = role == 0 ? qs : dos;
			TC_UNROLL for (int ib = 0; ib < TC_TILE / 16; ib++) {
				tcAcc s;
				wmma::fill_fragment(s, 0.0f);
				TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd) {
					tcBcol b;  // qᵀ (or doutᵀ): (d, i) at bs[i·TC_LD + d]
					wmma::load_matrix_sync(b, bs + 16 * ib * TC_LD + 16 * c, TC_LD);
					wmma::mma_sync(s, af[c], b, s);
				}
				wmma::store_matrix_sync(mine + 16 * ib, s, TC_SLD, wmma::mem_row_major);
			}
			__syncthreads();
			TC_UNROLL for (int u = 0; u < 8; u++) {
				const int tt = part * 8 + u, i = t0 + tt;
				float pr = 0.0f, ds = 0.0f;
				if (live && tt < ni && i >= j && i <= last) {
					pr = expf(scale * scg[r * TC_SLD + tt] - ls[tt]);
					ds = pr * (dpg[r * TC_SLD + tt] - dl[tt]);
				}
				pbg[r * TC_PLD + tt] = __float2bfloat16_rn(pr);
				dsg[r * TC_PLD + tt] = __float2bfloat16_rn(ds);
			}
			__syncthreads();
			const tcbf *as = role == 0 ? pbg : dsg, *b2 = role == 0 ? dos : qs;
			TC_UNROLL for (int ib = 0; ib < TC_TILE / 16; ib++) {
				tcA pa;
				wmma::load_matrix_sync(pa, as + 16 * ib, TC_PLD);
				TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd) {
					tcBrow b;  // dout (or q): (i, d) at b2[i·TC_LD + d]
					wmma::load_matrix_sync(b, b2 + 16 * ib * TC_LD + 16 * c, TC_LD);
					wmma::mma_sync(acc[c], pa, b, acc[c]);
				}
			}
		}
	}
	__syncthreads();  // every warp is done with the f32 tiles
	float *dst = role == 0 ? dv : dk;
	const float mul = role == 0 ? 1.0f : scale;
	TC_UNROLL for (int c = 0; c < TC_NF; c++) if (c < nd) {
		wmma::store_matrix_sync(mine, acc[c], TC_SLD, wmma::mem_row_major);
		__syncwarp();
		for (int e = lane; e < 256; e += 32) {
			const int rr = e / 16, cc = e % 16, jj = j0 + 16 * g + rr;
			if (jj < N) dst[((long long)jj * KVH + kvh) * D + 16 * c + cc] += mul * mine[rr * TC_SLD + cc];
		}
		__syncwarp();
	}
}
