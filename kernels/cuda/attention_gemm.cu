// The kernels around the GEMM-based training attention of the bf16
// precision ("gemm", Ops.SetAttentionKernel; ops_attention_gemm.go): causal
// grouped-query attention over packed sequences as batched cuBLAS GEMMs
// (cublasGemmStridedBatchedEx, bf16 operands, float32 accumulation) and a
// masked softmax. The contracts and masks are attention.cu's: query i of a
// sequence sees its keys j with i − W < j ≤ i.
//
// Layout. A batch entry e is one (sequence s, KV head j) pair, e = r·KVH +
// j where s = order[r], the host's order of the sequences (longest first,
// so that a run holds sequences of similar length), and a call takes a run
// of nE entries from e0. Its operands are dense
// and padded to Lmax, the longest sequence of the run rounded up to 8
// (attnGEMMAlign): Q̃ [G·Lmax, D], the G query heads sharing KV head j as
// extra rows (row r = i·G + h: query position i, head j·G + h), K̃ and Ṽ
// [Lmax, D]. The products run a row block at a time (the host's
// gemmBlocks): positions i0 … i0+Bt−1 of every entry, Q̃'s rows G·i0 …
// G·(i0+Bt)−1, against the keys c0 … c0+Kb−1 they see; the block's scores
// and P are [G·Bt, Kb] an entry. Rows of positions past the sequence's
// length are zero (gathered so) or ignored (scattered so); their P rows
// are zero.
//
// Rounding: the same points as attention_tc.cu. q, k, v and dout are
// rounded to bfloat16 (nearest even) as they are gathered; the scores
// accumulate in float (the GEMM) and are scaled in float; the softmax, its
// max and sum, lse and δ = Σ round(dout)·out are float32; P = e^(s − lse)
// and dS = P·(dP − δ) (P unrounded there) are rounded to bfloat16 to enter
// the next products (P·Ṽ, Pᵀ·dÕ, dSᵀ·Q̃, dS·K̃); dK̃ and dṼ add the row
// blocks' products in float32 (beta 1), in block order; the scale of dq and dk is
// applied in float32 as they are scattered. One difference: the forward
// rounds the normalized P, where attention_tc.cu rounds e^(s − m) against
// the running max and divides the output by the sum after; the relative
// rounding error of each P is the same 2⁻⁸ at most.
//
// Every kernel writes each element of its output from one thread and sums
// in a fixed order (no atomics): the same bits on every run. Barriers and
// shuffles are reached by the whole block (cpushim's rule). seqOff is read
// on the device and every range is clamped to [0, N], so bad offsets give
// wrong values, never an access outside the buffers (the host checks them
// too). Tested on the CPU through cpushim against kernels/ref; not yet run
// on a GPU.
#include "common.cuh"

// agBF16 rounds x to bfloat16, nearest even (a NaN stays a quiet NaN), as
// f32_to_bf16 and kernels.BF16 do.
__device__ __forceinline__ unsigned short agBF16(float x) {
	unsigned b = __float_as_uint(x);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((b >> 16) | 0x40u);
	b += 0x7fffu + ((b >> 16) & 1u);
	return (unsigned short)(b >> 16);
}

__device__ __forceinline__ float agF32(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

// agSeq sets lo and hi to sequence s's token range, clamped to [0, N].
__device__ __forceinline__ void agSeq(const int *__restrict__ seqOff, int s, int N, int &lo, int &hi) {
	lo = seqOff[s];
	hi = seqOff[s + 1];
	lo = lo < 0 ? 0 : (lo > N ? N : lo);
	hi = hi < lo ? lo : (hi > N ? N : hi);
}

// agEntrySeq is the sequence of entry e: order[e / KVH] (the host's
// order of the sequences, longest first), clamped to [0, S).
__device__ __forceinline__ int agEntrySeq(const int *__restrict__ order, int S, int e, int KVH) {
	const int s = order[e / KVH];
	return s < 0 ? 0 : (s >= S ? S - 1 : s);
}

// agSrcRow is the row of [N, KVH·rep, D] that row r of entry e's operand
// (rep rows a position: G for q, dout and out, 1 for k and v) holds, or −1
// for a padding row (past its sequence's end).
__device__ __forceinline__ long long agSrcRow(const int *__restrict__ seqOff, const int *__restrict__ order, int S, int N,
                                              int e, int r, int KVH, int rep) {
	const int s = agEntrySeq(order, S, e, KVH), j = e % KVH, i = r / rep, h = r % rep;
	int lo, hi;
	agSeq(seqOff, s, N, lo, hi);
	if (i >= hi - lo) return -1;
	return ((long long)(lo + i) * KVH + j) * rep + h;
}

// attention_gemm_gather fills the dense bfloat16 operands of entries e0 …
// e0+nE−1: dst [nE, rep·Lmax, D] from src [N, KVH·rep, D], rounded to
// bfloat16, padding rows zero. Launch: any 1-D geometry (a grid-stride
// loop, 64-bit index).
extern "C" __global__ void attention_gemm_gather(unsigned short *__restrict__ dst, const float *__restrict__ src,
                                                 const int *__restrict__ seqOff, const int *__restrict__ order,
                                                 int S, int N, int e0, int nE, int KVH, int rep, int Lmax, int D) {
	const long long rows = (long long)rep * Lmax, total = (long long)nE * rows * D;
	for (long long x = blockIdx.x * (long long)blockDim.x + threadIdx.x; x < total; x += (long long)gridDim.x * blockDim.x) {
		const long long row = x / D;
		const int d = (int)(x % D), b = (int)(row / rows), r = (int)(row % rows);
		const long long o = agSrcRow(seqOff, order, S, N, e0 + b, r, KVH, rep);
		dst[x] = o < 0 ? (unsigned short)0 : agBF16(src[o * D + d]);
	}
}

// attention_gemm_scatter writes the float32 results of entries e0 …
// e0+nE−1, src [nE, rep·Lmax, D], into dst [N, KVH·rep, D]: dst = mul·src,
// or dst += mul·src when accumulate; padding rows are skipped. Each element
// of dst belongs to one entry and row: no two threads write it. Launch: any
// 1-D geometry (a grid-stride loop, 64-bit index).
extern "C" __global__ void attention_gemm_scatter(float *__restrict__ dst, const float *__restrict__ src,
                                                  const int *__restrict__ seqOff, const int *__restrict__ order,
                                                  int S, int N, int e0, int nE, int KVH, int rep, int Lmax, int D,
                                                  float mul, int accumulate) {
	const long long rows = (long long)rep * Lmax, total = (long long)nE * rows * D;
	for (long long x = blockIdx.x * (long long)blockDim.x + threadIdx.x; x < total; x += (long long)gridDim.x * blockDim.x) {
		const long long row = x / D;
		const int d = (int)(x % D), b = (int)(row / rows), r = (int)(row % rows);
		const long long o = agSrcRow(seqOff, order, S, N, e0 + b, r, KVH, rep);
		if (o < 0) continue;
		float *p = &dst[o * D + d];
		*p = accumulate ? *p + mul * src[x] : mul * src[x];
	}
}

// agRow decodes score row `row` (blockIdx.x) of a row block of a run of
// entries from e0 (the block: positions i0 … i0+Bt−1 of each entry, G rows
// a position, G·Bt rows an entry): its position i in its sequence, the
// sequence's length len, and the (token, head) index t·H + head of its
// lse. valid: i < len.
struct agRowInfo {
	int i, len;
	long long lseIdx;
};

__device__ __forceinline__ agRowInfo agRow(const int *__restrict__ seqOff, const int *__restrict__ order, int S, int N,
                                           int e0, long long row, int KVH, int G, int i0, int Bt) {
	const long long rows = (long long)G * Bt;
	const int e = e0 + (int)(row / rows), r = (int)(row % rows);
	const int s = agEntrySeq(order, S, e, KVH), j = e % KVH;
	int lo, hi;
	agSeq(seqOff, s, N, lo, hi);
	agRowInfo a;
	a.i = i0 + r / G;
	a.len = hi - lo;
	a.lseIdx = ((long long)(lo + a.i) * KVH + j) * G + r % G;
	return a;
}

// agThreads is the block of the row kernels below: one block a score row.
#define AG_THREADS 128

// attention_gemm_softmax turns the scores of one row block of entries e0 …
// e0+nE−1, Sc [nE, G·Bt, Kb] (q·k, unscaled, float32; column c is key
// c0 + c), into P = e^(scale·s − lse) rounded to bfloat16 (P [nE, G·Bt,
// Kb]; zero outside the mask and on padding rows) and lse [N, H] of each
// valid row. The block's keys hold every key its rows see (the host's
// gemmBlocks): lse is the whole row's. Thread t takes the columns t,
// t+128, … of its row with a running max and sum, combined over the block
// by blockMax and blockSum in a fixed order. Grid nE·G·Bt, block 128.
extern "C" __global__ void attention_gemm_softmax(unsigned short *__restrict__ P, float *__restrict__ lse,
                                                  const float *__restrict__ Sc, const int *__restrict__ seqOff,
                                                  const int *__restrict__ order, int S, int N, int e0, int KVH, int G,
                                                  int i0, int Bt, int c0, int Kb, int W, float scale) {
	__shared__ float red[32];
	const long long row = blockIdx.x;
	const agRowInfo a = agRow(seqOff, order, S, N, e0, row, KVH, G, i0, Bt);
	const bool live = a.i < a.len;
	// Keys first … last (empty on a padding row); W ≥ 1.
	const int last = live ? a.i : -1, first = a.i - W + 1 > 0 ? a.i - W + 1 : 0;
	const float *s = Sc + row * Kb;
	float m = -INFINITY, l = 0.0f;
	for (int c = threadIdx.x; c < Kb; c += AG_THREADS) {
		const int key = c0 + c;
		if (key < first || key > last) continue;
		const float x = scale * s[c];
		if (x > m) {
			l = l * expf(m - x) + 1.0f;
			m = x;
		} else {
			l += expf(x - m);
		}
	}
	const float M = blockMax(m, red);
	const float L = blockSum(m == -INFINITY ? 0.0f : l * expf(m - M), red);
	const float ls = M + logf(L);
	unsigned short *p = P + row * Kb;
	for (int c = threadIdx.x; c < Kb; c += AG_THREADS) {
		const int key = c0 + c;
		p[c] = (key < first || key > last) ? (unsigned short)0 : agBF16(expf(scale * s[c] - ls));
	}
	if (live && threadIdx.x == 0) lse[a.lseIdx] = ls;
}

// attention_gemm_dsoftmax is the backward's row kernel on one row block:
// from the scores Sc and dP = dÕ·Ṽᵀ ([nE, G·Bt, Kb], float32; column c is
// key c0 + c) of entries e0 …, the forward's lse and δ = Σ_d
// round(dout)·out of the row (a fixed-order block sum), it writes P =
// e^(scale·s − lse) and dS = P·(dP − δ), both rounded to bfloat16 (dS from
// the unrounded P), zero outside the mask and on padding rows. Grid
// nE·G·Bt, block 128.
extern "C" __global__ void attention_gemm_dsoftmax(unsigned short *__restrict__ P, unsigned short *__restrict__ dS,
                                                   const float *__restrict__ Sc, const float *__restrict__ dP,
                                                   const float *__restrict__ lse, const float *__restrict__ dout,
                                                   const float *__restrict__ out, const int *__restrict__ seqOff,
                                                   const int *__restrict__ order, int S, int N, int e0, int KVH, int G,
                                                   int i0, int Bt, int c0, int Kb, int D, int W, float scale) {
	__shared__ float red[32];
	const long long row = blockIdx.x;
	const agRowInfo a = agRow(seqOff, order, S, N, e0, row, KVH, G, i0, Bt);
	const bool live = a.i < a.len;
	const int last = live ? a.i : -1, first = a.i - W + 1 > 0 ? a.i - W + 1 : 0;
	float dl = 0.0f;
	if (live)
		for (int d = threadIdx.x; d < D; d += AG_THREADS)
			dl += agF32(agBF16(dout[a.lseIdx * D + d])) * out[a.lseIdx * D + d];
	const float delta = blockSum(dl, red);
	const float ls = live ? lse[a.lseIdx] : 0.0f;
	const float *s = Sc + row * Kb, *dp = dP + row * Kb;
	unsigned short *p = P + row * Kb, *ds = dS + row * Kb;
	for (int c = threadIdx.x; c < Kb; c += AG_THREADS) {
		const int key = c0 + c;
		if (key < first || key > last) {
			p[c] = 0;
			ds[c] = 0;
			continue;
		}
		const float pc = expf(scale * s[c] - ls);
		p[c] = agBF16(pc);
		ds[c] = agBF16(pc * (dp[c] - delta));
	}
}
