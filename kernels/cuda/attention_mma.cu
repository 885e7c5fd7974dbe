// A third tensor-core attention of the bf16 mode ("tc3",
// Ops.SetAttentionKernel), beside attention_tc.cu ("tc1", the default) and
// attention_fa2.cu ("tc2"): FlashAttention-2 as its authors wrote it, on
// PTX mma.sync m16n8k16 (bf16 operands, f32 accumulation) over register
// fragments loaded with ldmatrix (mma.cuh), instead of wmma's opaque
// fragments. The same contracts, masks and bf16 rounding points as tc1
// and tc2 (attention_tc.cu's header: q, k, v, dout rounded to bfloat16 as
// they are staged; S, softmax, lse, δ float32; P and dS rounded to
// bfloat16 for their second product; l adds the unrounded P), and the same
// outputs: out and lse written, dq, dk, dv accumulated (+=). It has not
// run on a GPU: tc1 stays the default until the hardware test
// (TestAttentionTC3OnHardware) shows it correct and faster.
//
// Forward (attention_mma_forward): a block takes 64 (query, head) rows of
// one KV head (row f is query f/G, head kvh·G + f%G, as tc1 and tc2), 4
// warps of 16 rows. A warp holds its rows of q as A fragments, its 16×D
// output as accumulators, and each lane the running max and sum of its two
// rows (g and g+8 of the warp's 16, g = lane/4), in registers for the whole
// key loop. The scores of a key tile are accumulators too: the softmax
// runs on them in registers (a row's max and sum across the 4 lanes of a
// quad, __shfl_xor_sync 1 and 2), and P goes from the score accumulators
// straight into A fragments (mmaPack): no shared memory for S or P. Key
// and value tiles of 32 keys are double-buffered in shared memory and
// prefetched through registers as tc2 does (the next tile's global loads
// issued before the current tile's math, stored rounded after it: the
// keys' after the scores, the values' after P·V). FlashAttention-2 takes
// 64-key tiles on sm_80/sm_90, with more shared memory than the 48 KiB a
// launch gets without opting in: attention_mma_forward_k64 ("tc3k64") does,
// its two 64-key buffers of keys and values (68 KiB) in dynamic shared
// memory (HONE_DYNAMIC_SHARED; Kernel.Launch opts it in), prefetched 32
// keys at a time through the registers of a 32-key tile (mmForward), so
// that it fits the 255 registers without spilling as the 32-key kernel
// does (242 each, ptxas -arch=sm_90). The 64-key variant has not run on a
// GPU; on the shim its out and lse match the 32-key kernel's within
// TestAttentionTC3K64OnCPUShim's bounds. cp.async is not used: the
// operands are float32 and are rounded as they are staged.
//
// Backward, FA2's split, deterministic (fixed order, no atomics): δ =
// rowsum(round(dout)∘out) from tc2's attention_fa2_delta into a scratch
// [N,H] once per call; attention_mma_backward_dq takes 64 query rows a
// block and walks 32-key tiles, attention_mma_backward_dkdv takes 64 keys a
// block and walks 32-query tiles of each query head of its KV head in
// turn (tc3k64's attention_mma_backward_dq_k64 and _dkdv_k64: 64-row tiles
// in 84 KiB of dynamic shared memory each, the same bits; 218 and 255
// registers, no spill; not run on a GPU). Both use 8 warps, two per 16 rows, as tc2 does (a warp
// holding both operands' fragments and both accumulators would need more
// than the 255 registers a thread has): in dq, warp w holds q's fragments and forms S =
// q·kᵀ and P, warp w+4 holds dout's and forms dP = dout·vᵀ and dS = P∘(dP
// − δ); each adds dS·k to half of dq's 16-column blocks. In dkdv, warp w
// holds k's (Sᵀ = k·qᵀ, Pᵀ, dv += Pᵀ·dout), warp w+4 v's (dPᵀ = v·doutᵀ,
// dSᵀ, dk += dSᵀ·q). The two warps of a pair hand P (f32) and dS (bf16 A
// fragments) to each other through a per-lane slot in shared memory: lane
// l of one warp holds the same elements of its tile as lane l of the other.
//
// Shared memory is static, under 48 KiB, but for the dynamic shared memory
// of the _k64 kernels (68 KiB forward, 84 KiB backward). Tiles are bf16 rows of MM_LD =
// 136 elements (272 bytes: every row 16-byte aligned as ldmatrix wants,
// and the 8 rows of one ldmatrix matrix in distinct bank groups). Every
// barrier, shuffle, ldmatrix and mma is reached by the whole block or warp
// (loop bounds block-uniform, branches around them warp-uniform; masking
// per element), as cpushim requires. seqOff is read on the device, every
// range clamped as in attention.cuh. Tested on the CPU through mma.cuh's
// emulation (TestAttentionTC3OnCPUShim against kernels/ref).
#include "attention.cuh"
#include "common.cuh"
#include "mma.cuh"

#ifdef __CUDACC__
#define MM_UNROLL _Pragma("unroll")
#else
#define MM_UNROLL
#endif

#define MM_ROWS 64            // rows (query/head pairs, or keys) per block
#define MM_DMAX 128           // largest head dim
#define MM_NF (MM_DMAX / 16)  // 16-column blocks of a head, at most
#define MM_LD (MM_DMAX + 8)   // row stride of a staged bf16 tile, in elements
#define MM_FK 32              // keys of a forward tile (attention_mma_forward)
#define MM_FK64_SHARED (4 * 64 * MM_LD * 2)  // bytes of attention_mma_forward_k64's tiles: 68 KiB
#define MM_BK 32              // rows of a backward tile (keys in dq, queries in dkdv)
#define MM_BK64_SHARED (4 * 64 * MM_LD * 2 + 4 * 32 * 32 * 4)  // bytes of the _k64 backward kernels' tiles and xch: 84 KiB

typedef unsigned short mmbf;  // a bfloat16's bits in shared memory

// mmF4 is four floats loaded together: one 16-byte load. Ops launches tc3
// only on 16-byte aligned q, k, v, dout (attnAligned); rows of D floats,
// D a multiple of 16, keep every row's start aligned.
struct __align__(16) mmF4 {
	float x, y, z, w;
};

// mmRegs holds a thread's share of a ROWS×D tile of SRC sources in
// registers, in fours: four-float unit e = threadIdx.x + u·NT (row-major,
// D/4 units a row) of source s at r[s][u].
template <int ROWS, int NT, int SRC>
struct mmRegs {
	mmF4 r[SRC][ROWS * MM_DMAX / (4 * NT)];
};

// mmFetch loads the tile into regs: row t of x[s] at rowOff(t), zeros where
// rowOff(t) < 0 or t ≥ ROWS. Rows and columns are walked by carry instead
// of dividing.
template <int ROWS, int NT, int SRC, class RowOff>
__device__ __forceinline__ void mmFetch(mmRegs<ROWS, NT, SRC> &regs, const float *const (&x)[SRC], int D, RowOff rowOff) {
	const int D4 = D / 4, sq = NT / D4, sr = NT - sq * D4;
	int t = threadIdx.x / D4, d = threadIdx.x - t * D4;
	const mmF4 zero = {0.0f, 0.0f, 0.0f, 0.0f};
	MM_UNROLL for (int u = 0; u < ROWS * MM_DMAX / (4 * NT); u++) {
		const long long o = t < ROWS ? rowOff(t) : -1LL;
		MM_UNROLL for (int s = 0; s < SRC; s++) regs.r[s][u] = o >= 0 ? *(const mmF4 *)(x[s] + o + 4 * d) : zero;
		d += sr;
		t += sq;
		if (d >= D4) {
			d -= D4;
			t++;
		}
	}
}

// mmPut rounds regs into dst[s] [ROWS][MM_LD] as bfloat16, the elements
// mmFetch loaded, four to a 64-bit store.
template <int ROWS, int NT, int SRC>
__device__ __forceinline__ void mmPut(const mmRegs<ROWS, NT, SRC> &regs, mmbf *const (&dst)[SRC], int D) {
	const int D4 = D / 4, sq = NT / D4, sr = NT - sq * D4;
	int t = threadIdx.x / D4, d = threadIdx.x - t * D4;
	MM_UNROLL for (int u = 0; u < ROWS * MM_DMAX / (4 * NT); u++) {
		if (t < ROWS) {
			MM_UNROLL for (int s = 0; s < SRC; s++) {
				// One 8-byte store (the low half first in memory): a warp's
				// stores to a row fill whole bank rows without conflicts.
				*(unsigned long long *)(dst[s] + t * MM_LD + 4 * d) =
				    (unsigned long long)mmaPack(regs.r[s][u].x, regs.r[s][u].y) |
				    (unsigned long long)mmaPack(regs.r[s][u].z, regs.r[s][u].w) << 32;
			}
		}
		d += sr;
		t += sq;
		if (d >= D4) {
			d -= D4;
			t++;
		}
	}
}

// mmStage64 rounds the 64 rows of x at rowOff(t) into dst [64][MM_LD], in
// 16-row passes through registers.
template <int NT, class RowOff>
__device__ __forceinline__ void mmStage64(mmbf *dst, const float *__restrict__ x, int D, RowOff rowOff) {
	for (int p = 0; p < MM_ROWS; p += 16) {
		mmRegs<16, NT, 1> r;
		const float *const src[1] = {x};
		mmbf *const to[1] = {dst + p * MM_LD};
		mmFetch(r, src, D, [=](int t) { return rowOff(p + t); });
		mmPut(r, to, D);
	}
}

// mmRow is the offset of (query, head) row f of KV head kvh in [·,H,D].
__device__ __forceinline__ long long mmRow(int f, int G, int H, int kvh, int D) {
	return ((long long)(f / G) * H + kvh * G + f % G) * D;
}

// mmA is the address lane gives ldmatrixX4 for the A fragment of the
// 16×16 block of tile (stride MM_LD) at row r0, column c0.
__device__ __forceinline__ const mmbf *mmA(const mmbf *tile, int r0, int c0, int lane) {
	return tile + (r0 + lane % 16) * MM_LD + c0 + 8 * (lane / 16);
}

// mmBt is the address lane gives ldmatrixX4 for the B fragments of two
// 8-column blocks of xᵀ, x a row-major tile whose rows r0 … r0+15 are the
// columns and c0 … c0+15 the k: r[0], r[1] for rows r0 … r0+7, r[2], r[3]
// for r0+8 … r0+15 (the keys of Kᵀ in S = q·kᵀ).
__device__ __forceinline__ const mmbf *mmBt(const mmbf *tile, int r0, int c0, int lane) {
	return tile + (r0 + lane % 8 + 8 * (lane / 16)) * MM_LD + c0 + 8 * ((lane / 8) % 2);
}

// mmB is the address lane gives ldmatrixX4Trans for the B fragments of
// two 8-column blocks of a row-major tile whose rows r0 … r0+15 are the k
// and columns c0 … c0+15 the n: r[0], r[1] for columns c0 … c0+7, r[2],
// r[3] for c0+8 … c0+15 (V in P·V).
__device__ __forceinline__ const mmbf *mmB(const mmbf *tile, int r0, int c0, int lane) {
	return tile + (r0 + lane % 8 + 8 * ((lane / 8) % 2)) * MM_LD + c0 + 8 * (lane / 16);
}

// mmToA packs the accumulators of two adjacent 8-column blocks (c0, c1)
// into the A fragment a, rounding to bfloat16.
__device__ __forceinline__ void mmToA(unsigned a[4], const float c0[4], const float c1[4]) {
	a[0] = mmaPack(c0[0], c0[1]);
	a[1] = mmaPack(c0[2], c0[3]);
	a[2] = mmaPack(c1[0], c1[1]);
	a[3] = mmaPack(c1[2], c1[3]);
}

// mmForward is attention_mma_forward's body on key and value tiles of FK
// keys (a multiple of 32), double-buffered in kv [4·FK][MM_LD] (buffer b:
// keys at 2b·FK rows, values FK rows further; the queries [64][MM_LD]
// before the loop). The next tile is prefetched through registers 32 keys
// at a time (a chunk: mmRegs of 32 rows, the registers of one FK = 32
// tile): chunk h of the next keys is loaded before the scores of the
// current tile's chunk h and stored after them; the next values' chunk h
// loaded after the last scores (h = 0) or the previous P·V chunk, and
// stored after P·V of chunk h. With FK = 32 that is the schedule of one
// tile, and every sum runs in the same order as a 32-key kernel's.
template <int FK>
__device__ __forceinline__ void mmForward(mmbf *kv, float *__restrict__ out, float *__restrict__ lse,
                                          const float *__restrict__ q, const float *__restrict__ k,
                                          const float *__restrict__ v, const int *__restrict__ seqOff, int S, int Nq,
                                          int H, int KVH, int D, int W, int qoff, float scale) {
	static_assert(FK % 32 == 0 && 4 * FK >= MM_ROWS, "key tiles of whole 32-key chunks, room for the queries");
	constexpr int TILE = FK * MM_LD;  // elements of a staged key (or value) tile
	constexpr int CH = 32;            // keys of a prefetched chunk
	constexpr int NCH = FK / CH;

	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
	const int kvh = blockIdx.y, G = H / KVH, total = Nq * G, nd = D / 16;
	const int f0 = blockIdx.x * MM_ROWS;
	// This lane's rows x = 0, 1: 16·warp + g + 8x. A dead row (past the
	// last) sees no key: first > p.
	int first[2], pos[2];
	MM_UNROLL for (int x = 0; x < 2; x++) {
		const int f = f0 + 16 * warp + g + 8 * x;
		pos[x] = f < total ? f / G + qoff : 0;
		first[x] = f < total ? attFirstKey(seqOff, S, pos[x], W) : 1;
	}
	const int jlo = attFirstKey(seqOff, S, f0 / G + qoff, W), jhi = (attMin(f0 + MM_ROWS, total) - 1) / G + qoff;

	mmStage64<128>(kv, q, D, [=](int t) { return f0 + t < total ? mmRow(f0 + t, G, H, kvh, D) : -1LL; });
	__syncthreads();
	unsigned qa[MM_NF][4];
	MM_UNROLL for (int c = 0; c < MM_NF; c++) if (c < nd) ldmatrixX4(qa[c], mmA(kv, 16 * warp, 16 * c, lane));
	float o[2 * MM_NF][4];  // the output's 8-column blocks
	MM_UNROLL for (int c = 0; c < 2 * MM_NF; c++) MM_UNROLL for (int e = 0; e < 4; e++) o[c][e] = 0.0f;
	// chunk is row t of the keys' (values') chunk of CH keys from j0: a
	// key of the tile, or zeros past jhi.
	auto chunk = [=](int j0) {
		const int nk = attMin(CH, jhi - j0 + 1);
		return [=](int t) { return t < nk ? ((long long)(j0 + t) * KVH + kvh) * D : -1LL; };
	};
	const float *const srcK[1] = {k}, *const srcV[1] = {v};
	mmRegs<CH, 128, 1> pf;  // one source and chunk at a time: keys, then values
	mmFetch(pf, srcK, D, chunk(jlo));
	__syncthreads();  // every warp has its q fragments
	MM_UNROLL for (int h = 0; h < NCH; h++) {
		mmbf *const toK[1] = {kv + h * CH * MM_LD}, *const toV[1] = {kv + TILE + h * CH * MM_LD};
		mmPut(pf, toK, D);
		mmFetch(pf, srcV, D, chunk(jlo + h * CH));
		mmPut(pf, toV, D);
		if (h + 1 < NCH) mmFetch(pf, srcK, D, chunk(jlo + (h + 1) * CH));
	}
	float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // l: the sum over this lane's keys of the row
	int buf = 0;
	for (int j0 = jlo; j0 <= jhi; j0 += FK, buf ^= 1) {
		const int nk = attMin(FK, jhi - j0 + 1);
		const bool more = j0 + FK <= jhi;
		__syncthreads();  // this tile is stored; the other buffer's readers are done
		mmbf *const nextK = kv + 2 * (buf ^ 1) * TILE, *const nextV = nextK + TILE;
		const mmbf *ks = kv + 2 * buf * TILE, *vs = ks + TILE;
		float s[FK / 8][4];  // the scores' 8-key blocks
		MM_UNROLL for (int n = 0; n < FK / 8; n++) MM_UNROLL for (int e = 0; e < 4; e++) s[n][e] = 0.0f;
		MM_UNROLL for (int h = 0; h < NCH; h++) {
			if (more) mmFetch(pf, srcK, D, chunk(j0 + FK + h * CH));
			MM_UNROLL for (int c = 0; c < MM_NF; c++) if (c < nd) {
				MM_UNROLL for (int n = h * CH / 16; n < (h + 1) * CH / 16; n++) {
					unsigned kb[4];
					ldmatrixX4(kb, mmBt(ks, 16 * n, 16 * c, lane));
					mmaBf16(s[2 * n], qa[c], kb, s[2 * n]);
					mmaBf16(s[2 * n + 1], qa[c], kb + 2, s[2 * n + 1]);
				}
			}
			if (more) {  // the next keys' chunk to their buffer
				mmbf *const toK[1] = {nextK + h * CH * MM_LD};
				mmPut(pf, toK, D);
			}
		}
		if (more) mmFetch(pf, srcV, D, chunk(j0 + FK));  // the next values' first chunk in flight
		// The online softmax on the accumulators: element e of block n is
		// row x = e/2, key j0 + 8n + 2·tq + e%2.
		float mt[2] = {-INFINITY, -INFINITY};
		MM_UNROLL for (int n = 0; n < FK / 8; n++) MM_UNROLL for (int e = 0; e < 4; e++) {
			const int x = e / 2, jj = 8 * n + 2 * tq + e % 2, j = j0 + jj;
			s[n][e] = jj < nk && j >= first[x] && j <= pos[x] ? scale * s[n][e] : -INFINITY;
			mt[x] = fmaxf(mt[x], s[n][e]);
		}
		float a[2];
		MM_UNROLL for (int x = 0; x < 2; x++) {
			mt[x] = fmaxf(mt[x], __shfl_xor_sync(0xffffffffu, mt[x], 1));
			mt[x] = fmaxf(mt[x], __shfl_xor_sync(0xffffffffu, mt[x], 2));
			const float mn = fmaxf(m[x], mt[x]);
			a[x] = mn == -INFINITY ? 1.0f : expf(m[x] - mn);
			l[x] *= a[x];
			m[x] = mn;
		}
		MM_UNROLL for (int n = 0; n < FK / 8; n++) MM_UNROLL for (int e = 0; e < 4; e++) {
			const float p = s[n][e] == -INFINITY ? 0.0f : expf(s[n][e] - m[e / 2]);
			l[e / 2] += p;
			s[n][e] = p;
		}
		MM_UNROLL for (int c = 0; c < 2 * MM_NF; c++) if (c < 2 * nd) {
			MM_UNROLL for (int e = 0; e < 4; e++) o[c][e] *= a[e / 2];
		}
		MM_UNROLL for (int h = 0; h < NCH; h++) {
			MM_UNROLL for (int n = h * CH / 16; n < (h + 1) * CH / 16; n++) {
				unsigned pa[4];  // P's 16 keys, rounded: an A fragment
				mmToA(pa, s[2 * n], s[2 * n + 1]);
				MM_UNROLL for (int c = 0; c < MM_NF; c++) if (c < nd) {
					unsigned vb[4];
					ldmatrixX4Trans(vb, mmB(vs, 16 * n, 16 * c, lane));
					mmaBf16(o[2 * c], pa, vb, o[2 * c]);
					mmaBf16(o[2 * c + 1], pa, vb + 2, o[2 * c + 1]);
				}
			}
			if (more) {  // the next values' chunk to their buffer, the following one in flight
				mmbf *const toV[1] = {nextV + h * CH * MM_LD};
				mmPut(pf, toV, D);
				if (h + 1 < NCH) mmFetch(pf, srcV, D, chunk(j0 + FK + (h + 1) * CH));
			}
		}
	}
	float inv[2];
	MM_UNROLL for (int x = 0; x < 2; x++) {
		l[x] += __shfl_xor_sync(0xffffffffu, l[x], 1);
		l[x] += __shfl_xor_sync(0xffffffffu, l[x], 2);
		inv[x] = 1.0f / l[x];
		const int f = f0 + 16 * warp + g + 8 * x;
		if (f < total && tq == 0 && lse != nullptr) lse[mmRow(f, G, H, kvh, D) / D] = m[x] + logf(l[x]);
	}
	MM_UNROLL for (int c = 0; c < 2 * MM_NF; c++) if (c < 2 * nd) {
		MM_UNROLL for (int e = 0; e < 4; e++) {
			const int f = f0 + 16 * warp + g + 8 * (e / 2);
			if (f < total) out[mmRow(f, G, H, kvh, D) + 8 * c + 2 * tq + e % 2] = o[c][e] * inv[e / 2];
		}
	}
}

// attention_mma_forward is attention_forward (same parameters and
// contract) on mma.sync, 32-key tiles in static shared memory; D a
// multiple of 16, at most 128. Grid (⌈Nq·G/64⌉, KVH), block 128.
extern "C" __global__ void attention_mma_forward(float *__restrict__ out, float *__restrict__ lse,
                                                 const float *__restrict__ q, const float *__restrict__ k,
                                                 const float *__restrict__ v, const int *__restrict__ seqOff, int S,
                                                 int Nq, int H, int KVH, int D, int W, int qoff, float scale) {
	__shared__ __align__(16) mmbf kv[4 * MM_FK * MM_LD];
	mmForward<MM_FK>(kv, out, lse, q, k, v, seqOff, S, Nq, H, KVH, D, W, qoff, scale);
}

// attention_mma_forward_k64 is attention_mma_forward on 64-key tiles, in
// MM_FK64_SHARED bytes of dynamic shared memory (the launch's sharedBytes,
// past the 48 KiB a launch gets without opting in). The same outputs as
// attention_mma_forward up to the order of float32 sums and where P's
// bfloat16 rounding falls: the running max moves every 64 keys instead of
// every 32, so P = e^(s − m) is rounded against another m (on the shim,
// TestAttentionTC3K64OnCPUShim: out within 7.0e-3 of the 32-key kernel's
// (kerneltest.RelErr), about what either is from kernels/ref; lse within
// 7.9e-8; the same bits where a block's keys fit one 32-key tile).
extern "C" __global__ void attention_mma_forward_k64(float *__restrict__ out, float *__restrict__ lse,
                                                     const float *__restrict__ q, const float *__restrict__ k,
                                                     const float *__restrict__ v, const int *__restrict__ seqOff, int S,
                                                     int Nq, int H, int KVH, int D, int W, int qoff, float scale) {
	HONE_DYNAMIC_SHARED(mmbf, kv);
	mmForward<64>(kv, out, lse, q, k, v, seqOff, S, Nq, H, KVH, D, W, qoff, scale);
}

// mmBackwardDq is attention_mma_backward_dq's body on key tiles of BK rows
// (a multiple of 32) in kv [4·BK][MM_LD] (buffer b: keys at 2b·BK rows,
// values BK rows further; q, then dout [64][MM_LD] before the loop) and
// xch [4][BK/2][32], the next tile prefetched 32 keys at a time as in
// mmBackwardDkdv (the same registers as one 32-key tile). Every sum runs in
// the same order whatever BK: the keys in order, 16 at a time, a tile's
// padding adding zeros.
template <int BK>
__device__ __forceinline__ void mmBackwardDq(mmbf *kv, float (*xch)[BK / 2][32], float *__restrict__ dq,
                                             const float *__restrict__ dout, const float *__restrict__ dl,
                                             const float *__restrict__ lse, const float *__restrict__ q,
                                             const float *__restrict__ k, const float *__restrict__ v,
                                             const int *__restrict__ seqOff, int S, int N, int H, int KVH, int D,
                                             int W, float scale) {
	static_assert(BK % 32 == 0 && 4 * BK >= MM_ROWS, "key tiles of whole 32-row chunks, room for q and dout");
	constexpr int TILE = BK * MM_LD;
	constexpr int CH = 32;  // rows of a prefetched chunk: the registers of one BK = 32 tile
	constexpr int NCH = BK / CH;
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, grp = warp % 4, role = warp / 4;
	const int g = lane / 4, tq = lane % 4;
	const int kvh = blockIdx.y, G = H / KVH, total = N * G, nd = D / 16;
	const int f0 = blockIdx.x * MM_ROWS;
	// This lane's rows x = 0, 1: 16·grp + g + 8x, query i[x] seeing keys
	// first[x] … i[x] (none for a dead row), with lse ls[x] and δ dls[x].
	int first[2], last[2];
	float ls[2], dls[2];
	MM_UNROLL for (int x = 0; x < 2; x++) {
		const int f = f0 + 16 * grp + g + 8 * x;
		const bool live = f < total;
		last[x] = live ? f / G : 0;
		first[x] = live ? attFirstKey(seqOff, S, last[x], W) : 1;
		const long long row = live ? mmRow(f, G, H, kvh, D) / D : 0;
		ls[x] = live ? lse[row] : 0.0f;
		dls[x] = live ? dl[row] : 0.0f;
	}
	const int jlo = attFirstKey(seqOff, S, f0 / G, W), jhi = (attMin(f0 + MM_ROWS, total) - 1) / G;

	auto groupRow = [=](int t) { return f0 + t < total ? mmRow(f0 + t, G, H, kvh, D) : -1LL; };
	unsigned af[MM_NF][4];  // warp w: q's rows; warp w+4: dout's
	for (int pass = 0; pass < 2; pass++) {
		mmStage64<256>(kv, pass == 0 ? q : dout, D, groupRow);
		__syncthreads();
		if (role == pass) {
			MM_UNROLL for (int c = 0; c < MM_NF; c++) if (c < nd) ldmatrixX4(af[c], mmA(kv, 16 * grp, 16 * c, lane));
		}
		__syncthreads();
	}
	float acc[MM_NF][4];  // dq's 8-column blocks 2c and 2c+1 of the 16-column blocks c = role + 2u at acc[2u], acc[2u+1]
	MM_UNROLL for (int c = 0; c < MM_NF; c++) MM_UNROLL for (int e = 0; e < 4; e++) acc[c][e] = 0.0f;
	// chunk is row t of the CH keys (and values) from j: a key of the
	// tile, or zeros past jhi.
	auto chunk = [=](int j) {
		const int nk = attMin(CH, jhi - j + 1);
		return [=](int t) { return t < nk ? ((long long)(j + t) * KVH + kvh) * D : -1LL; };
	};
	const float *const src[2] = {k, v};
	mmRegs<CH, 256, 2> pf;  // the next tile, a chunk at a time
	MM_UNROLL for (int c = 0; c < NCH; c++) {
		mmFetch(pf, src, D, chunk(jlo + c * CH));
		mmbf *const to[2] = {kv + c * CH * MM_LD, kv + TILE + c * CH * MM_LD};
		mmPut(pf, to, D);
	}
	float *mx = &xch[grp][0][lane];  // this lane's element x at mx[32·x]: consecutive lanes, distinct banks
	int buf = 0;
	for (int j0 = jlo; j0 <= jhi; j0 += BK, buf ^= 1) {
		const int nk = attMin(BK, jhi - j0 + 1);
		const bool more = j0 + BK <= jhi;
		__syncthreads();  // this tile is stored; the other buffer's readers are done
		if (more) mmFetch(pf, src, D, chunk(j0 + BK));
		const mmbf *ks = kv + 2 * buf * TILE, *vs = ks + TILE;
		float s[BK / 8][4];  // warp w: S; warp w+4: dP
		MM_UNROLL for (int n = 0; n < BK / 8; n++) MM_UNROLL for (int e = 0; e < 4; e++) s[n][e] = 0.0f;
		{
			const mmbf *bs = role == 0 ? ks : vs;
			MM_UNROLL for (int c = 0; c < MM_NF; c++) if (c < nd) {
				MM_UNROLL for (int n = 0; n < BK / 16; n++) {
					unsigned b[4];
					ldmatrixX4(b, mmBt(bs, 16 * n, 16 * c, lane));
					mmaBf16(s[2 * n], af[c], b, s[2 * n]);
					mmaBf16(s[2 * n + 1], af[c], b + 2, s[2 * n + 1]);
				}
			}
		}
		if (role == 0) {
			MM_UNROLL for (int n = 0; n < BK / 8; n++) MM_UNROLL for (int e = 0; e < 4; e++) {
				const int x = e / 2, jj = 8 * n + 2 * tq + e % 2, j = j0 + jj;
				mx[32 * (4 * n + e)] = jj < nk && j >= first[x] && j <= last[x] ? expf(scale * s[n][e] - ls[x]) : 0.0f;
			}
		}
		__syncthreads();
		MM_UNROLL for (int c = 1; c < NCH; c++) if (more) {  // the next tile's chunk c−1 stored, chunk c in flight
			mmbf *const to[2] = {kv + 2 * (buf ^ 1) * TILE + (c - 1) * CH * MM_LD, kv + 2 * (buf ^ 1) * TILE + TILE + (c - 1) * CH * MM_LD};
			mmPut(pf, to, D);
			mmFetch(pf, src, D, chunk(j0 + BK + c * CH));
		}
		unsigned pa[BK / 16][4];  // dS, rounded: A fragments of 16 keys
		if (role == 1) {
			MM_UNROLL for (int n = 0; n < BK / 8; n++) MM_UNROLL for (int e = 0; e < 4; e++) s[n][e] = mx[32 * (4 * n + e)] * (s[n][e] - dls[e / 2]);
			MM_UNROLL for (int n = 0; n < BK / 16; n++) {
				mmToA(pa[n], s[2 * n], s[2 * n + 1]);
				MM_UNROLL for (int r = 0; r < 4; r++) ((unsigned *)mx)[32 * (4 * n + r)] = pa[n][r];
			}
		}
		__syncthreads();
		if (role == 0) {
			MM_UNROLL for (int n = 0; n < BK / 16; n++) MM_UNROLL for (int r = 0; r < 4; r++) pa[n][r] = ((const unsigned *)mx)[32 * (4 * n + r)];
		}
		MM_UNROLL for (int n = 0; n < BK / 16; n++) {
			MM_UNROLL for (int u = 0; u < MM_NF / 2; u++) {
				const int c = role + 2 * u;
				if (c < nd) {
					unsigned b[4];  // k: (j, d) at ks[j·MM_LD + d]
					ldmatrixX4Trans(b, mmB(ks, 16 * n, 16 * c, lane));
					mmaBf16(acc[2 * u], pa[n], b, acc[2 * u]);
					mmaBf16(acc[2 * u + 1], pa[n], b + 2, acc[2 * u + 1]);
				}
			}
		}
		if (more) {
			mmbf *const to[2] = {kv + 2 * (buf ^ 1) * TILE + (NCH - 1) * CH * MM_LD, kv + 2 * (buf ^ 1) * TILE + TILE + (NCH - 1) * CH * MM_LD};
			mmPut(pf, to, D);
		}
	}
	MM_UNROLL for (int u = 0; u < MM_NF / 2; u++) {
		const int c = role + 2 * u;
		if (c < nd) {
			MM_UNROLL for (int h = 0; h < 2; h++) MM_UNROLL for (int e = 0; e < 4; e++) {
				const int f = f0 + 16 * grp + g + 8 * (e / 2);
				if (f < total) dq[mmRow(f, G, H, kvh, D) + 16 * c + 8 * h + 2 * tq + e % 2] += scale * acc[2 * u + h][e];
			}
		}
	}
}

// attention_mma_backward_dq is attention_backward_dq (same parameters and
// contract: dq += scale·Σ_j dS_ij·k_j, in order) on mma.sync, with δ from
// attention_fa2_delta (dl [N,H]); D a multiple of 16, at most 128. Grid
// (⌈N·G/64⌉, KVH), block 256: warps w and w+4 take rows 16w … 16w+15.
//
// Per 32-key tile: warp w forms S = q·kᵀ and P = e^(scale·S − lse) (0
// where masked) in its accumulators and hands P to warp w+4 (each lane
// its own elements, through xch); warp w+4 forms dP = dout·vᵀ, then dS =
// P∘(dP − δ), rounded into A fragments, and hands those back; each warp
// adds dS·k to its half of dq's 16-column blocks (w the even, w+4 the
// odd), kept in accumulators for the whole loop.
extern "C" __global__ void attention_mma_backward_dq(float *__restrict__ dq, const float *__restrict__ dout,
                                                     const float *__restrict__ dl, const float *__restrict__ lse,
                                                     const float *__restrict__ q, const float *__restrict__ k,
                                                     const float *__restrict__ v, const int *__restrict__ seqOff, int S,
                                                     int N, int H, int KVH, int D, int W, float scale) {
	__shared__ __align__(16) mmbf kv[4 * MM_BK * MM_LD];
	__shared__ __align__(16) float xch[4][MM_BK / 2][32];  // per pair, element and lane: P, then dS's A fragments over it
	mmBackwardDq<MM_BK>(kv, xch, dq, dout, dl, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale);
}

// attention_mma_backward_dq_k64 is attention_mma_backward_dq on key tiles of
// 64 rows, in MM_BK64_SHARED bytes of dynamic shared memory (the tiles, then
// xch): the same bits (the same sums in the same order).
extern "C" __global__ void attention_mma_backward_dq_k64(float *__restrict__ dq, const float *__restrict__ dout,
                                                         const float *__restrict__ dl, const float *__restrict__ lse,
                                                         const float *__restrict__ q, const float *__restrict__ k,
                                                         const float *__restrict__ v, const int *__restrict__ seqOff,
                                                         int S, int N, int H, int KVH, int D, int W, float scale) {
	HONE_DYNAMIC_SHARED(mmbf, kv);
	float(*xch)[32][32] = reinterpret_cast<float(*)[32][32]>(kv + 4 * 64 * MM_LD);
	mmBackwardDq<64>(kv, xch, dq, dout, dl, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale);
}

// mmBackwardDkdv is attention_mma_backward_dkdv's body on query tiles of BK
// rows (a multiple of 32) in qd [4·BK][MM_LD] (buffer b: queries at 2b·BK
// rows, dout BK rows further; k, then v [64][MM_LD] before the loop) and
// xch [4][BK/2][32]. The next tile is prefetched 32 rows at a time
// through the registers of a 32-row tile (chunk 0 loaded at the top of the
// loop; chunk c−1 stored and c loaded after the P hand-off; the last stored
// at the end), so that BK = 64 fits the registers. Every sum runs in the
// same order whatever BK: the queries of a head in order, 16 at a time, a
// tile's padding adding zeros.
template <int BK>
__device__ __forceinline__ void mmBackwardDkdv(mmbf *qd, float (*xch)[BK / 2][32], float *__restrict__ dk,
                                               float *__restrict__ dv, const float *__restrict__ dout,
                                               const float *__restrict__ dl, const float *__restrict__ lse,
                                               const float *__restrict__ q, const float *__restrict__ k,
                                               const float *__restrict__ v, const int *__restrict__ seqOff, int S,
                                               int N, int H, int KVH, int D, int W, float scale) {
	static_assert(BK % 32 == 0 && 4 * BK >= MM_ROWS, "query tiles of whole 32-row chunks, room for k and v");
	constexpr int TILE = BK * MM_LD;
	constexpr int CH = 32;  // rows of a prefetched chunk: the registers of one BK = 32 tile
	constexpr int NCH = BK / CH;
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, grp = warp % 4, role = warp / 4;
	const int g = lane / 4, tq = lane % 4;
	const int kvh = blockIdx.y, G = H / KVH, nd = D / 16;
	const int j0 = blockIdx.x * MM_ROWS;
	// This lane's keys x = 0, 1: j0 + 16·grp + g + 8x, seen by the queries
	// key[x] … last[x] (none for a dead key).
	int key[2], last[2];
	MM_UNROLL for (int x = 0; x < 2; x++) {
		key[x] = j0 + 16 * grp + g + 8 * x;
		last[x] = key[x] < N ? attLastQuery(seqOff, S, key[x], W, N) : -1;
	}
	// The block's queries: from its first key to the last query of its last key.
	const int ilo = j0, ihi = attLastQuery(seqOff, S, attMin(j0 + MM_ROWS, N) - 1, W, N);
	const int nt = (ihi - ilo + BK) / BK, tiles = G * nt;  // query tiles a head, in all

	unsigned af[MM_NF][4];  // warp w: k's rows; warp w+4: v's
	for (int pass = 0; pass < 2; pass++) {
		mmStage64<256>(qd, pass == 0 ? k : v, D, [=](int t) { return j0 + t < N ? ((long long)(j0 + t) * KVH + kvh) * D : -1LL; });
		__syncthreads();
		if (role == pass) {
			MM_UNROLL for (int c = 0; c < MM_NF; c++) if (c < nd) ldmatrixX4(af[c], mmA(qd, 16 * grp, 16 * c, lane));
		}
		__syncthreads();
	}
	float acc[2 * MM_NF][4];  // warp w: dv; warp w+4: dk / scale (8-column blocks)
	MM_UNROLL for (int c = 0; c < 2 * MM_NF; c++) MM_UNROLL for (int e = 0; e < 4; e++) acc[c][e] = 0.0f;
	// chunk is row t of chunk c (CH rows) of tile x: head kvh·G + x/nt,
	// queries from ilo + (x%nt)·BK + c·CH.
	auto chunk = [=](int x, int c) {
		const int h = kvh * G + x / nt, t0 = ilo + (x % nt) * BK + c * CH, ni = attMin(CH, ihi - t0 + 1);
		return [=](int t) { return t < ni ? ((long long)(t0 + t) * H + h) * D : -1LL; };
	};
	const float *const src[2] = {q, dout};
	mmRegs<CH, 256, 2> pf;  // the next tile, a chunk at a time
	MM_UNROLL for (int c = 0; c < NCH; c++) {
		mmFetch(pf, src, D, chunk(0, c));
		mmbf *const to[2] = {qd + c * CH * MM_LD, qd + TILE + c * CH * MM_LD};
		mmPut(pf, to, D);
	}
	float *mx = &xch[grp][0][lane];  // this lane's element x at mx[32·x]: consecutive lanes, distinct banks
	int buf = 0;
	for (int x = 0; x < tiles; x++, buf ^= 1) {
		const int h = kvh * G + x / nt, t0 = ilo + (x % nt) * BK, ni = attMin(BK, ihi - t0 + 1);
		const bool more = x + 1 < tiles;
		__syncthreads();  // this tile is stored; the other buffer's readers are done
		if (more) mmFetch(pf, src, D, chunk(x + 1, 0));
		const mmbf *qs = qd + 2 * buf * TILE, *dos = qs + TILE;
		float s[BK / 8][4];  // warp w: Sᵀ, then Pᵀ; warp w+4: dPᵀ, then dSᵀ
		MM_UNROLL for (int n = 0; n < BK / 8; n++) MM_UNROLL for (int e = 0; e < 4; e++) s[n][e] = 0.0f;
		{
			const mmbf *bs = role == 0 ? qs : dos;
			MM_UNROLL for (int c = 0; c < MM_NF; c++) if (c < nd) {
				MM_UNROLL for (int n = 0; n < BK / 16; n++) {
					unsigned b[4];  // qᵀ (or doutᵀ): (d, i) at bs[i·MM_LD + d]
					ldmatrixX4(b, mmBt(bs, 16 * n, 16 * c, lane));
					mmaBf16(s[2 * n], af[c], b, s[2 * n]);
					mmaBf16(s[2 * n + 1], af[c], b + 2, s[2 * n + 1]);
				}
			}
		}
		// Element e of block n: key x = e/2, query t0 + 8n + 2·tq + e%2.
		if (role == 0) {
			MM_UNROLL for (int n = 0; n < BK / 8; n++) MM_UNROLL for (int e = 0; e < 4; e++) {
				const int tt = 8 * n + 2 * tq + e % 2, i = t0 + tt;
				const bool seen = tt < ni && i >= key[e / 2] && i <= last[e / 2];
				s[n][e] = seen ? expf(scale * s[n][e] - lse[(long long)i * H + h]) : 0.0f;
				mx[32 * (4 * n + e)] = s[n][e];
			}
		}
		__syncthreads();
		MM_UNROLL for (int c = 1; c < NCH; c++) if (more) {  // the next tile's chunk c−1 stored, chunk c in flight
			mmbf *const to[2] = {qd + 2 * (buf ^ 1) * TILE + (c - 1) * CH * MM_LD, qd + 2 * (buf ^ 1) * TILE + TILE + (c - 1) * CH * MM_LD};
			mmPut(pf, to, D);
			mmFetch(pf, src, D, chunk(x + 1, c));
		}
		if (role == 1) {
			MM_UNROLL for (int n = 0; n < BK / 8; n++) MM_UNROLL for (int e = 0; e < 4; e++) {
				const int tt = 8 * n + 2 * tq + e % 2, i = t0 + tt;
				const bool seen = tt < ni && i >= key[e / 2] && i <= last[e / 2];
				s[n][e] = seen ? mx[32 * (4 * n + e)] * (s[n][e] - dl[(long long)i * H + h]) : 0.0f;
			}
		}
		const mmbf *b2 = role == 0 ? dos : qs;
		MM_UNROLL for (int n = 0; n < BK / 16; n++) {
			unsigned pa[4];  // Pᵀ (or dSᵀ), rounded: the A fragment of 16 queries
			mmToA(pa, s[2 * n], s[2 * n + 1]);
			MM_UNROLL for (int c = 0; c < MM_NF; c++) if (c < nd) {
				unsigned b[4];  // dout (or q): (i, d) at b2[i·MM_LD + d]
				ldmatrixX4Trans(b, mmB(b2, 16 * n, 16 * c, lane));
				mmaBf16(acc[2 * c], pa, b, acc[2 * c]);
				mmaBf16(acc[2 * c + 1], pa, b + 2, acc[2 * c + 1]);
			}
		}
		if (more) {
			mmbf *const to[2] = {qd + 2 * (buf ^ 1) * TILE + (NCH - 1) * CH * MM_LD, qd + 2 * (buf ^ 1) * TILE + TILE + (NCH - 1) * CH * MM_LD};
			mmPut(pf, to, D);
		}
	}
	float *dst = role == 0 ? dv : dk;
	const float mul = role == 0 ? 1.0f : scale;
	MM_UNROLL for (int c = 0; c < 2 * MM_NF; c++) if (c < 2 * nd) {
		MM_UNROLL for (int e = 0; e < 4; e++) {
			const int j = key[e / 2];
			if (j < N) dst[((long long)j * KVH + kvh) * D + 8 * c + 2 * tq + e % 2] += mul * acc[c][e];
		}
	}
}

// attention_mma_backward_dkdv is attention_backward_dkdv (same parameters
// and contract: dv_j += Σ P_ij·dout_i, dk_j += scale·Σ dS_ij·q_i over the
// query heads of KV head kvh in order and, in each, the queries that see j
// in order) on mma.sync, with δ from attention_fa2_delta (dl [N,H]); D a
// multiple of 16, at most 128. Grid (⌈N/64⌉, KVH), block 256: warps w and
// w+4 take keys 16w … 16w+15.
//
// Per query head and 32-query tile (one flat, double-buffered sequence of
// tiles): warp w forms Sᵀ = k·qᵀ and Pᵀ = e^(scale·Sᵀ − lse) (0 where
// masked) in its accumulators and hands Pᵀ to warp w+4 through xch, then
// adds Pᵀ·dout to dv; warp w+4 forms dPᵀ = v·doutᵀ, then dSᵀ = Pᵀ∘(dPᵀ −
// δ) and adds dSᵀ·q to dk. Each keeps the whole 16×D of its keys in
// accumulators for the whole loop.
extern "C" __global__ void attention_mma_backward_dkdv(float *__restrict__ dk, float *__restrict__ dv,
                                                       const float *__restrict__ dout, const float *__restrict__ dl,
                                                       const float *__restrict__ lse, const float *__restrict__ q,
                                                       const float *__restrict__ k, const float *__restrict__ v,
                                                       const int *__restrict__ seqOff, int S, int N, int H, int KVH,
                                                       int D, int W, float scale) {
	__shared__ __align__(16) mmbf qd[4 * MM_BK * MM_LD];
	__shared__ __align__(16) float xch[4][MM_BK / 2][32];  // per pair, element and lane: Pᵀ
	mmBackwardDkdv<MM_BK>(qd, xch, dk, dv, dout, dl, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale);
}

// attention_mma_backward_dkdv_k64 is attention_mma_backward_dkdv on query
// tiles of 64 rows, in MM_BK64_SHARED bytes of dynamic shared memory (the
// tiles, then xch): the same bits (the same sums in the same order).
extern "C" __global__ void attention_mma_backward_dkdv_k64(float *__restrict__ dk, float *__restrict__ dv,
                                                           const float *__restrict__ dout, const float *__restrict__ dl,
                                                           const float *__restrict__ lse, const float *__restrict__ q,
                                                           const float *__restrict__ k, const float *__restrict__ v,
                                                           const int *__restrict__ seqOff, int S, int N, int H, int KVH,
                                                           int D, int W, float scale) {
	HONE_DYNAMIC_SHARED(mmbf, qd);
	float(*xch)[32][32] = reinterpret_cast<float(*)[32][32]>(qd + 4 * 64 * MM_LD);
	mmBackwardDkdv<64>(qd, xch, dk, dv, dout, dl, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale);
}
