//go:build cgo

package cpu

/*
#cgo CFLAGS: -O3
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

// rows_*: out[n*ldo + o] = Σ_c x[n*C + c]·w[o*C + c] for n < N, o < rows —
// the product of a few input rows (decode: one per sequence) with a block of
// weight rows. The weights are the big read, so every form below reads each
// weight row once for all N inputs.

static inline float rows_widen(uint16_t h) {
	union { uint32_t u; float f; } v = { .u = (uint32_t)h << 16 };
	return v.f;
}

static void rows_f32_plain(float *out, long ldo, const float *x, long N, long C, const float *w, long rows) {
	for (long o = 0; o < rows; o++)
		for (long n = 0; n < N; n++) {
			float s = 0;
			for (long c = 0; c < C; c++) s += x[n * C + c] * w[o * C + c];
			out[n * ldo + o] = s;
		}
}

static void rows_bf16_plain(float *out, long ldo, const float *x, long N, long C, const uint16_t *w, long rows) {
	for (long o = 0; o < rows; o++)
		for (long n = 0; n < N; n++) {
			float s = 0;
			for (long c = 0; c < C; c++) s += x[n * C + c] * rows_widen(w[o * C + c]);
			out[n * ldo + o] = s;
		}
}

#if defined(__x86_64__)
#include <immintrin.h>

#define RT512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define RT256 __attribute__((target("avx2,fma")))

RT512 static inline __m512 rows_ldw_f32(const float *p) { return _mm512_loadu_ps(p); }
RT512 static inline __m512 rows_ldw_f32m(const float *p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
RT512 static inline __m512 rows_ldw_bf16(const uint16_t *p) {
	__m256i h = _mm256_loadu_si256((const __m256i *)p);
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
RT512 static inline __m512 rows_ldw_bf16m(const uint16_t *p, __mmask16 m) {
	__m256i h = _mm256_maskz_loadu_epi16(m, p);
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// A tile of RB weight rows × NB inputs held in RB·NB vector sums: per 16
// columns it loads RB weight vectors and NB input vectors and issues RB·NB
// FMAs, so the weights are read once per tile and the inputs once per RB
// rows. The column tail is a masked load (zeros beyond C add nothing).
// PFN > 0: also prefetch PFN rows of the next block of RB, from its row pfo
// on (see the note on prefetching further down).
#define ROWS_TILE(NAME, WT, LDW, LDWM, RB, NB, PFN)                                     \
RT512 static void NAME(float *out, long ldo, const float *x, long ldx, const WT *w, long ldw, long K, int pfo) { \
	__m512 acc[RB][NB];                                                                      \
	_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++)                                    \
	_Pragma("GCC unroll 8") for (int n = 0; n < NB; n++) acc[r][n] = _mm512_setzero_ps();   \
	long c = 0;                                                                              \
	for (; c + 16 <= K; c += 16) {                                                           \
		__m512 wv[RB];                                                                       \
		_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) wv[r] = LDW(w + r * ldw + c);      \
		_Pragma("GCC unroll 8") for (int r = 0; r < PFN; r++)                                \
			_mm_prefetch((const char *)(w + (RB + pfo + r) * ldw + c), _MM_HINT_T0);          \
		_Pragma("GCC unroll 8") for (int n = 0; n < NB; n++) {                               \
			__m512 xv = _mm512_loadu_ps(x + n * ldx + c);                                    \
			_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++)                             \
				acc[r][n] = _mm512_fmadd_ps(wv[r], xv, acc[r][n]);                           \
		}                                                                                    \
	}                                                                                        \
	if (c < K) {                                                                             \
		__mmask16 m = (__mmask16)((1u << (K - c)) - 1);                                      \
		__m512 wv[RB];                                                                       \
		_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) wv[r] = LDWM(w + r * ldw + c, m); \
		_Pragma("GCC unroll 8") for (int n = 0; n < NB; n++) {                               \
			__m512 xv = _mm512_maskz_loadu_ps(m, x + n * ldx + c);                           \
			_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++)                             \
				acc[r][n] = _mm512_fmadd_ps(wv[r], xv, acc[r][n]);                           \
		}                                                                                    \
	}                                                                                        \
	_Pragma("GCC unroll 8") for (int n = 0; n < NB; n++)                                    \
	_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++)                                    \
		out[n * ldo + r] = _mm512_reduce_add_ps(acc[r][n]);                                  \
}

typedef void (*rows_f32_tile)(float *, long, const float *, long, const float *, long, long, int);

#define ROWS_TILES(SUF, WT, LDW, LDWM)                                                   \
ROWS_TILE(rows_##SUF##_1x1, WT, LDW, LDWM, 1, 1, 0)                                         \
ROWS_TILE(rows_##SUF##_1x2, WT, LDW, LDWM, 1, 2, 0)                                         \
ROWS_TILE(rows_##SUF##_1x3, WT, LDW, LDWM, 1, 3, 0)                                         \
ROWS_TILE(rows_##SUF##_1x4, WT, LDW, LDWM, 1, 4, 0)                                         \
ROWS_TILE(rows_##SUF##_2x1, WT, LDW, LDWM, 2, 1, 0)                                         \
ROWS_TILE(rows_##SUF##_2x2, WT, LDW, LDWM, 2, 2, 0)                                         \
ROWS_TILE(rows_##SUF##_2x3, WT, LDW, LDWM, 2, 3, 0)                                         \
ROWS_TILE(rows_##SUF##_2x4, WT, LDW, LDWM, 2, 4, 0)                                         \
ROWS_TILE(rows_##SUF##_3x1, WT, LDW, LDWM, 3, 1, 0)                                         \
ROWS_TILE(rows_##SUF##_3x2, WT, LDW, LDWM, 3, 2, 0)                                         \
ROWS_TILE(rows_##SUF##_3x3, WT, LDW, LDWM, 3, 3, 0)                                         \
ROWS_TILE(rows_##SUF##_3x4, WT, LDW, LDWM, 3, 4, 0)                                         \
ROWS_TILE(rows_##SUF##_4x1, WT, LDW, LDWM, 4, 1, 0)                                         \
ROWS_TILE(rows_##SUF##_4x2, WT, LDW, LDWM, 4, 2, 0)                                         \
ROWS_TILE(rows_##SUF##_4x3, WT, LDW, LDWM, 4, 3, 0)                                         \
ROWS_TILE(rows_##SUF##_4x4, WT, LDW, LDWM, 4, 4, 0)                                         \
static const rows_##SUF##_tile rows_##SUF##_tiles[4][4] = {                              \
	{rows_##SUF##_1x1, rows_##SUF##_1x2, rows_##SUF##_1x3, rows_##SUF##_1x4},            \
	{rows_##SUF##_2x1, rows_##SUF##_2x2, rows_##SUF##_2x3, rows_##SUF##_2x4},            \
	{rows_##SUF##_3x1, rows_##SUF##_3x2, rows_##SUF##_3x3, rows_##SUF##_3x4},            \
	{rows_##SUF##_4x1, rows_##SUF##_4x2, rows_##SUF##_4x3, rows_##SUF##_4x4},            \
};

ROWS_TILES(f32, float, rows_ldw_f32, rows_ldw_f32m)

#define ROWS_F32P(NAME, NB, PFN) ROWS_TILE(NAME, float, rows_ldw_f32, rows_ldw_f32m, 4, NB, PFN)
ROWS_F32P(rows_f32p2_4x1, 1, 2) ROWS_F32P(rows_f32p2_4x2, 2, 2) ROWS_F32P(rows_f32p2_4x3, 3, 2) ROWS_F32P(rows_f32p2_4x4, 4, 2)
ROWS_F32P(rows_f32p4_4x1, 1, 4) ROWS_F32P(rows_f32p4_4x2, 2, 4) ROWS_F32P(rows_f32p4_4x3, 3, 4) ROWS_F32P(rows_f32p4_4x4, 4, 4)
// 4-row tiles that prefetch: [0] two rows of the next block, [1] all four.
static const rows_f32_tile rows_f32pf_tiles[2][4] = {
	{rows_f32p2_4x1, rows_f32p2_4x2, rows_f32p2_4x3, rows_f32p2_4x4},
	{rows_f32p4_4x1, rows_f32p4_4x2, rows_f32p4_4x3, rows_f32p4_4x4},
};

// The bfloat16 tiles below read 32 weights (one cache line) per load and
// widen them with one unpack each for the low and the high half of every
// 128-bit lane, so the lanes hold weights c+{0..3, 8..11, 16..19, 24..27}
// and c+{4..7, 12..15, 20..23, 28..31}; the inputs are permuted the same way
// once per call (rows_permute32). Against a 16-weight load widened by a
// zero-extension and a shift, this reads memory about a fifth faster on one
// core (LM head, 8-row tiles: 6.7–7.9 → 8.3–9.6 GB/s; two cores 13–15 → 15–16.5).
RT512 static void rows_permute32(float *xp, const float *x, long K32) {
	const __m512i il = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
	const __m512i ih = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
	for (long c = 0; c < K32; c += 32) {
		__m512 a = _mm512_loadu_ps(x + c), b = _mm512_loadu_ps(x + c + 16);
		_mm512_storeu_ps(xp + c, _mm512_permutex2var_ps(a, il, b));
		_mm512_storeu_ps(xp + c + 16, _mm512_permutex2var_ps(a, ih, b));
	}
}

// A bfloat16 tile over columns [0, K): whole 32-column steps against the
// permuted inputs xp, then the rest 16 at a time (masked) against x.
#define ROWS_TILE_U(NAME, RB, NB, PF)                                                             \
RT512 static void NAME(float *out, long ldo, const float *xp, long ldxp, const float *x, long ldx, \
                       const uint16_t *w, long ldw, long K, int pfo) {                            \
	__m512 acc[RB][NB];                                                                          \
	_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++)                                        \
	_Pragma("GCC unroll 8") for (int n = 0; n < NB; n++) acc[r][n] = _mm512_setzero_ps();       \
	const __m512i z = _mm512_setzero_si512();                                                    \
	long c = 0;                                                                                  \
	for (; c + 32 <= K; c += 32) {                                                               \
		__m512 lo[RB], hi[RB];                                                                   \
		_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) {                                   \
			__m512i v = _mm512_loadu_si512((const void *)(w + r * ldw + c));                     \
			if (r < PF) _mm_prefetch((const char *)(w + (RB + pfo + r) * ldw + c), _MM_HINT_T0);    \
			lo[r] = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, v));                            \
			hi[r] = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, v));                            \
		}                                                                                        \
		_Pragma("GCC unroll 8") for (int n = 0; n < NB; n++) {                                   \
			__m512 xl = _mm512_loadu_ps(xp + n * ldxp + c), xh = _mm512_loadu_ps(xp + n * ldxp + c + 16); \
			_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) {                               \
				acc[r][n] = _mm512_fmadd_ps(lo[r], xl, acc[r][n]);                               \
				acc[r][n] = _mm512_fmadd_ps(hi[r], xh, acc[r][n]);                               \
			}                                                                                    \
		}                                                                                        \
	}                                                                                            \
	for (; c < K; c += 16) {                                                                     \
		__mmask16 m = K - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - c)) - 1);       \
		__m512 wv[RB];                                                                           \
		_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) wv[r] = rows_ldw_bf16m(w + r * ldw + c, m); \
		_Pragma("GCC unroll 8") for (int n = 0; n < NB; n++) {                                   \
			__m512 xv = _mm512_maskz_loadu_ps(m, x + n * ldx + c);                               \
			_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++)                                 \
				acc[r][n] = _mm512_fmadd_ps(wv[r], xv, acc[r][n]);                               \
		}                                                                                        \
	}                                                                                            \
	_Pragma("GCC unroll 8") for (int n = 0; n < NB; n++)                                        \
	_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++)                                        \
		out[n * ldo + r] = _mm512_reduce_add_ps(acc[r][n]);                                      \
}

typedef void (*rows_bf16u_tile)(float *, long, const float *, long, const float *, long, const uint16_t *, long, long, int);
ROWS_TILE_U(rows_bf16u_1x1, 1, 1, 0) ROWS_TILE_U(rows_bf16u_1x2, 1, 2, 0) ROWS_TILE_U(rows_bf16u_1x3, 1, 3, 0) ROWS_TILE_U(rows_bf16u_1x4, 1, 4, 0)
ROWS_TILE_U(rows_bf16u_2x1, 2, 1, 0) ROWS_TILE_U(rows_bf16u_2x2, 2, 2, 0) ROWS_TILE_U(rows_bf16u_2x3, 2, 3, 0) ROWS_TILE_U(rows_bf16u_2x4, 2, 4, 0)
ROWS_TILE_U(rows_bf16u_3x1, 3, 1, 0) ROWS_TILE_U(rows_bf16u_3x2, 3, 2, 0) ROWS_TILE_U(rows_bf16u_3x3, 3, 3, 0) ROWS_TILE_U(rows_bf16u_3x4, 3, 4, 0)
ROWS_TILE_U(rows_bf16u_4x1, 4, 1, 0) ROWS_TILE_U(rows_bf16u_4x2, 4, 2, 0) ROWS_TILE_U(rows_bf16u_4x3, 4, 3, 0) ROWS_TILE_U(rows_bf16u_4x4, 4, 4, 0)
ROWS_TILE_U(rows_bf16up_4x1, 4, 1, 4) ROWS_TILE_U(rows_bf16up_4x2, 4, 2, 4)
ROWS_TILE_U(rows_bf16up_4x3, 4, 3, 4) ROWS_TILE_U(rows_bf16up_4x4, 4, 4, 4)
ROWS_TILE_U(rows_bf16up2_4x1, 4, 1, 2) ROWS_TILE_U(rows_bf16up2_4x2, 4, 2, 2)
ROWS_TILE_U(rows_bf16up2_4x3, 4, 3, 2) ROWS_TILE_U(rows_bf16up2_4x4, 4, 4, 2)
// [0]: two rows of the next block prefetched from row pfo, [1]: all four.
static const rows_bf16u_tile rows_bf16up_tiles[2][4] = {
	{rows_bf16up2_4x1, rows_bf16up2_4x2, rows_bf16up2_4x3, rows_bf16up2_4x4},
	{rows_bf16up_4x1, rows_bf16up_4x2, rows_bf16up_4x3, rows_bf16up_4x4},
};
static const rows_bf16u_tile rows_bf16u_tiles[4][4] = {
	{rows_bf16u_1x1, rows_bf16u_1x2, rows_bf16u_1x3, rows_bf16u_1x4},
	{rows_bf16u_2x1, rows_bf16u_2x2, rows_bf16u_2x3, rows_bf16u_2x4},
	{rows_bf16u_3x1, rows_bf16u_3x2, rows_bf16u_3x3, rows_bf16u_3x4},
	{rows_bf16u_4x1, rows_bf16u_4x2, rows_bf16u_4x3, rows_bf16u_4x4},
};

// rows_xp is this thread's buffer for permuted inputs (grown, never freed:
// one per worker thread).
static __thread float *rows_xp;
static __thread long rows_xp_len;

// Whichever tile reads a block of weight rows first from memory (the first
// input block of the 4-row tiles, or at batch 5–8 both blocks, two rows
// each: rows_pf; the widening of rows into an L1 buffer; the 8-row tile
// batch 1 used before rows_bf16_seq1 and rows_f32_seq1) prefetches the same
// columns of the next block:
// widening takes enough instructions per cache line that the out-of-order
// window alone keeps too few misses in flight, and with several inputs the
// arithmetic between two blocks leaves the memory idle. Measured on AMD
// Zen 4 (2 cores, modelbench on the 0.5B shape, alternating runs): batch 1
// bf16 +8%, batch 8 f32 +30% and bf16 more, batch 32 f32 +18% and bf16
// +15%; the LM head stream at batch 1 went from 23–24 to 28 GB/s on one
// core. A prefetch past the end of the weights is harmless: x86 prefetches
// never fault.

// Columns are taken in chunks of rowsKC so that a tile's weight rows stay
// in L1 while every input block passes over them; the first chunk stores,
// later ones add to out.
enum { rowsKC = 1024 };

// rows_store writes (c0 = 0) or adds a tile's part [nb][4] into out.
static inline void rows_store(float *out, long ldo, const float *part, int rb, int nb) {
	for (int j = 0; j < nb; j++)
		for (int r = 0; r < rb; r++) out[j * ldo + r] += part[j * 4 + r];
}

// rows_pf says which prefetching 4-row tile input block p (of np blocks of
// up to 4 inputs) runs: 1 all four next rows, 0 two of them from row *pfo,
// -1 none. The first block prefetches the next block's 4 rows, except with
// two input blocks (batch 5–8): each then prefetches 2, so that the memory
// keeps streaming while the second block runs on rows already in L1.
// Measured on AMD Zen 5 (2 threads; the matmuls of a 0.5B-shape decode step
// at batch 8 timed against a plain read of the same bytes in the same
// process, median of 30 rounds a run, old and new builds taking turns):
// float32 1.43–1.54× the read's time → 1.28–1.46× (medians of 9 runs 1.49
// → 1.32), bfloat16 1.55–1.80× → 1.29–1.42× over 3 runs. Spreading them
// over more blocks (batch 16, 32) did not help; batch 4 is unchanged.
static inline int rows_pf(long np, long p, int *pfo) {
	*pfo = np == 2 ? 2 * (int)p : 0;
	return np == 2 ? 0 : p == 0 ? 1 : -1;
}

enum { rowsSeqAhead = 1024 };

// rows_f32_seq1 is the one-input form (batch-1 decode), as rows_bf16_seq1
// below: each row whole, in address order, four line-sized accumulators,
// rowsSeqAhead bytes prefetched along the stream. It replaced an 8-row tile
// (eight interleaved row streams, no prefetch). In a throwaway C program on
// AMD Zen 5 (the 169 matrices of a 0.5B-shape decode step, 2 threads, 21
// rounds a run, each form timed against a plain read of the same bytes in
// the same round), medians over six runs: 8-row tile 1.02–1.08× the read's
// time (median 1.05), this form 0.99–1.02× (1.01). In the engine the gain
// is within the host's noise: a full decode step over a plain read, old
// and new builds taking turns for ten runs, medians 1.014 → 1.003.
RT512 static void rows_f32_seq1(float *out, const float *x, long C, const float *w, long rows) {
	for (long o = 0; o < rows; o++) {
		const float *wr = w + o * C;
		__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		long c = 0;
		for (; c + 64 <= C; c += 64) {
			_Pragma("GCC unroll 4") for (int l = 0; l < 4; l++)
				_mm_prefetch((const char *)(wr + c) + rowsSeqAhead + 64 * l, _MM_HINT_T0);
			a0 = _mm512_fmadd_ps(_mm512_loadu_ps(wr + c), _mm512_loadu_ps(x + c), a0);
			a1 = _mm512_fmadd_ps(_mm512_loadu_ps(wr + c + 16), _mm512_loadu_ps(x + c + 16), a1);
			a2 = _mm512_fmadd_ps(_mm512_loadu_ps(wr + c + 32), _mm512_loadu_ps(x + c + 32), a2);
			a3 = _mm512_fmadd_ps(_mm512_loadu_ps(wr + c + 48), _mm512_loadu_ps(x + c + 48), a3);
		}
		for (; c < C; c += 16) {
			__mmask16 m = C - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (C - c)) - 1);
			a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, wr + c), _mm512_maskz_loadu_ps(m, x + c), a0);
		}
		out[o] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
	}
}

RT512 static void rows_f32_avx512(float *out, long ldo, const float *x, long N, long C, const float *w, long rows) {
	if (N == 1) {
		rows_f32_seq1(out, x, C, w, rows);
		return;
	}
	float part[16];
	long np = (N + 3) / 4; // input blocks of up to 4
	for (long c0 = 0; c0 < C; c0 += rowsKC) {
		long kc = C - c0 < rowsKC ? C - c0 : rowsKC;
		for (long o = 0; o < rows; o += 4) {
			int rb = rows - o < 4 ? (int)(rows - o) : 4;
			for (long n = 0; n < N; n += 4) {
				int nb = N - n < 4 ? (int)(N - n) : 4, p = (int)(n / 4);
				float *dst = c0 == 0 ? out + n * ldo + o : part;
				long ldd = c0 == 0 ? ldo : 4;
				int pfo = 0, pf = rb == 4 ? rows_pf(np, p, &pfo) : -1;
				rows_f32_tile f = pf >= 0 ? rows_f32pf_tiles[pf][nb - 1] : rows_f32_tiles[rb - 1][nb - 1];
				f(dst, ldd, x + n * C + c0, C, w + o * C + c0, C, kc, pfo);
				if (c0 != 0) rows_store(out + n * ldo + o, ldo, part, rb, nb);
			}
		}
	}
}

// rows_widen_block widens rb rows of kc bfloat16 weights (row stride C) into
// wb [rb][ldb], ldb a multiple of 16 so that every row starts aligned.
RT512 static void rows_widen_block(float *wb, long ldb, const uint16_t *w, long C, int rb, long kc) {
	for (int r = 0; r < rb; r++) {
		long c = 0;
		for (; c + 16 <= kc; c += 16) {
			_mm_prefetch((const char *)(w + (r + rb) * C + c), _MM_HINT_T0);
			_mm512_store_ps(wb + r * ldb + c, rows_ldw_bf16(w + r * C + c));
		}
		if (c < kc) {
			__mmask16 m = (__mmask16)((1u << (kc - c)) - 1);
			_mm512_mask_storeu_ps(wb + r * ldb + c, m, rows_ldw_bf16m(w + r * C + c, m));
		}
	}
}

// With bfloat16 weights and more than two input blocks (N > rowsWidenN), a
// tile's rows are widened once into an L1 buffer and every input block runs
// the float32 tile on it instead of widening them again for each block
// (measured, in thread CPU time on 896 → 4864: N = 32 1.4× faster, N = 8 no
// gain).
enum { rowsWidenN = 8 };

// rows_bf16_seq1 is the one-input form (batch-1 decode): it reads the
// weights in address order, each row whole and then the next, so that a
// block of rows is one sequential stream (the hardware prefetcher's best
// case), prefetches rowsSeqAhead bytes further along that stream, and keeps
// four accumulators a row so the FMA chain does not hold the loads back.
// Against the 8-row tile (eight interleaved streams, prefetching the next
// eight rows) it read 1 GiB of bfloat16 rows faster in a throwaway C
// program here (best of 3 a round, huge pages): rows of 896 on two threads
// 32.6–35.3 → 36.8–40.7 GB/s (a plain read: 40–41), rows of 4864 50.6–52.1
// → 63.2–65.1. In one process, the matmuls of a 0.5B-shape decode step
// (bfloat16, 168 matrices and the LM head) with the two forms taking turns
// for 40 rounds: median time ratio 1.16 and 1.09 in two runs (30.8 → 35.3
// and 30.5 → 33.8 tokens/s).

RT512 static void rows_bf16_seq1(float *out, const float *xp, const float *x, long C, long K32, const uint16_t *w, long rows) {
	const __m512i z = _mm512_setzero_si512();
	for (long o = 0; o < rows; o++) {
		const uint16_t *wr = w + o * C;
		__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		long c = 0;
		for (; c + 64 <= K32; c += 64) {
			_mm_prefetch((const char *)(wr + c) + rowsSeqAhead, _MM_HINT_T0);
			_mm_prefetch((const char *)(wr + c) + rowsSeqAhead + 64, _MM_HINT_T0);
			__m512i v0 = _mm512_loadu_si512((const void *)(wr + c)), v1 = _mm512_loadu_si512((const void *)(wr + c + 32));
			a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(z, v0)), _mm512_loadu_ps(xp + c), a0);
			a1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(z, v0)), _mm512_loadu_ps(xp + c + 16), a1);
			a2 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(z, v1)), _mm512_loadu_ps(xp + c + 32), a2);
			a3 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(z, v1)), _mm512_loadu_ps(xp + c + 48), a3);
		}
		if (c < K32) {
			__m512i v0 = _mm512_loadu_si512((const void *)(wr + c));
			a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(z, v0)), _mm512_loadu_ps(xp + c), a0);
			a1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(z, v0)), _mm512_loadu_ps(xp + c + 16), a1);
			c += 32;
		}
		for (; c < C; c += 16) {
			__mmask16 m = C - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (C - c)) - 1);
			a2 = _mm512_fmadd_ps(rows_ldw_bf16m(wr + c, m), _mm512_maskz_loadu_ps(m, x + c), a2);
		}
		out[o] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
	}
}

RT512 static void rows_bf16_avx512(float *out, long ldo, const float *x, long N, long C, const uint16_t *w, long rows) {
	float part[16];
	float wb[4 * rowsKC] __attribute__((aligned(64)));
	// Up to rowsWidenN inputs the tiles widen in registers, against inputs
	// permuted once here; past that, rows are widened once into wb.
	long K32 = C & ~31L;
	const float *xp = x;
	if (N <= rowsWidenN && K32 > 0) {
		if (rows_xp_len < N * K32) {
			free(rows_xp);
			rows_xp = aligned_alloc(64, (size_t)N * K32 * sizeof(float));
			rows_xp_len = rows_xp ? N * K32 : 0;
		}
		if (!rows_xp) abort();
		for (long n = 0; n < N; n++) rows_permute32(rows_xp + n * K32, x + n * C, K32);
		xp = rows_xp;
	}
	if (N == 1) {
		rows_bf16_seq1(out, xp, x, C, K32, w, rows);
		return;
	}
	for (long c0 = 0; c0 < C; c0 += rowsKC) {
		long kc = C - c0 < rowsKC ? C - c0 : rowsKC, ldb = (kc + 15) & ~15L;
		for (long o = 0; o < rows; o += 4) {
			int rb = rows - o < 4 ? (int)(rows - o) : 4;
			if (N > rowsWidenN) rows_widen_block(wb, ldb, w + o * C + c0, C, rb, kc);
			for (long n = 0; n < N; n += 4) {
				int nb = N - n < 4 ? (int)(N - n) : 4;
				float *dst = c0 == 0 ? out + n * ldo + o : part;
				long ldd = c0 == 0 ? ldo : 4;
				if (N > rowsWidenN) {
					rows_f32_tiles[rb - 1][nb - 1](dst, ldd, x + n * C + c0, C, wb, ldb, kc, 0);
				} else {
					int pfo = 0, pf = rb == 4 ? rows_pf((N + 3) / 4, n / 4, &pfo) : -1;
					rows_bf16u_tile f = pf >= 0 ? rows_bf16up_tiles[pf][nb - 1] : rows_bf16u_tiles[rb - 1][nb - 1];
					f(dst, ldd, xp + n * K32 + c0, K32, x + n * C + c0, C, w + o * C + c0, C, kc, pfo);
				}
				if (c0 != 0) rows_store(out + n * ldo + o, ldo, part, rb, nb);
			}
		}
	}
}

RT256 static inline float rows_hsum256(__m256 a) {
	__m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
	s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
	s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
	return _mm_cvtss_f32(s4);
}

RT256 static inline __m256 rows_ld8_bf16(const uint16_t *p) {
	__m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
}

// AVX2 + FMA (CPUs without AVX-512): one weight row at a time, against every
// input while the row is in L1.
#define ROWS_AVX2(SUF, WT, LD8, WIDEN)                                                              \
RT256 static void rows_##SUF##_avx2(float *out, long ldo, const float *x, long N, long C, const WT *w, long rows) { \
	for (long o = 0; o < rows; o++) {                                                               \
		const WT *row = w + o * C;                                                                  \
		for (long n = 0; n < N; n++) {                                                              \
			const float *xn = x + n * C;                                                            \
			__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();                              \
			long c = 0;                                                                             \
			for (; c + 16 <= C; c += 16) {                                                          \
				a0 = _mm256_fmadd_ps(LD8(row + c), _mm256_loadu_ps(xn + c), a0);                   \
				a1 = _mm256_fmadd_ps(LD8(row + c + 8), _mm256_loadu_ps(xn + c + 8), a1);            \
			}                                                                                       \
			float s = rows_hsum256(_mm256_add_ps(a0, a1));                                          \
			for (; c < C; c++) s += xn[c] * WIDEN(row[c]);                                          \
			out[n * ldo + o] = s;                                                                   \
		}                                                                                           \
	}                                                                                               \
}
#define ROWS_ID(v) (v)
ROWS_AVX2(f32, float, _mm256_loadu_ps, ROWS_ID)
ROWS_AVX2(bf16, uint16_t, rows_ld8_bf16, rows_widen)

// rows_level: 2 with AVX-512 (F, BW, VL, DQ), 1 with AVX2 + FMA, else 0.
static int rows_level(void) {
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
		return 2;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
	return 0;
}
#else
static int rows_level(void) { return 0; }
#define rows_f32_avx512 rows_f32_plain
#define rows_bf16_avx512 rows_bf16_plain
#define rows_f32_avx2 rows_f32_plain
#define rows_bf16_avx2 rows_bf16_plain
#endif

static void rows_f32(float *out, long ldo, const float *x, long N, long C, const float *w, long rows, int level) {
	switch (level) {
	case 2: rows_f32_avx512(out, ldo, x, N, C, w, rows); break;
	case 1: rows_f32_avx2(out, ldo, x, N, C, w, rows); break;
	default: rows_f32_plain(out, ldo, x, N, C, w, rows);
	}
}

static void rows_bf16(float *out, long ldo, const float *x, long N, long C, const uint16_t *w, long rows, int level) {
	switch (level) {
	case 2: rows_bf16_avx512(out, ldo, x, N, C, w, rows); break;
	case 1: rows_bf16_avx2(out, ldo, x, N, C, w, rows); break;
	default: rows_bf16_plain(out, ldo, x, N, C, w, rows);
	}
}
*/
import "C"

import "unsafe"

// rowsLevel is the instruction set the rows kernels can use on this CPU:
// 2 AVX-512, 1 AVX2, 0 plain C.
func rowsLevel() int { return int(C.rows_level()) }

// rowsKernel names the rows kernel f selects, for tests and reports.
func (f features) rowsKernel() string {
	return [...]string{"c", "avx2", "avx512"}[f.rows]
}

// f32Rows: out[n*ldo+o] = Σ_c x[n*C+c]·w[o*C+c] for n < N, o < len(w)/C,
// in C, each weight row read once for all N inputs; C ≥ 1. The loop it must
// equal is f32RowsGo.
func (f features) f32Rows(out []float32, ldo int, x []float32, N, C int, w []float32) {
	if N == 0 || len(w) < C {
		return
	}
	rows := len(w) / C
	_, _ = out[(N-1)*ldo+rows-1], x[N*C-1]
	C.rows_f32((*C.float)(unsafe.Pointer(&out[0])), C.long(ldo), (*C.float)(unsafe.Pointer(&x[0])), C.long(N), C.long(C),
		(*C.float)(unsafe.Pointer(&w[0])), C.long(rows), C.int(f.rows))
}

// bf16Rows is f32Rows with bfloat16 weights, widened in the kernel.
func (f features) bf16Rows(out []float32, ldo int, x []float32, N, C int, w []uint16) {
	if N == 0 || len(w) < C {
		return
	}
	rows := len(w) / C
	_, _ = out[(N-1)*ldo+rows-1], x[N*C-1]
	C.rows_bf16((*C.float)(unsafe.Pointer(&out[0])), C.long(ldo), (*C.float)(unsafe.Pointer(&x[0])), C.long(N), C.long(C),
		(*C.uint16_t)(unsafe.Pointer(&w[0])), C.long(rows), C.int(f.rows))
}
