//go:build cgo

package cpu

/*
#cgo CFLAGS: -O3
#cgo LDFLAGS: -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

// A blocked bfloat16 GEMM (the Goto/BLIS scheme) for the bf16 compute mode:
// row-major C[m,n] = A[m,k] (float32, rounded to bfloat16 nearest-even) times
// op(B) (bfloat16 bits), float32 accumulation:
//
//	C = A·Bᵀ + beta·C   (tB: B is [n,k], a linear layer's weight [OC,C])
//	C = A·B  + beta·C   (!tB: B is [k,n], the same weight in LinearBackward)
//
// beta is 0 (C overwritten, old contents ignored) or 1. k is consumed in
// pairs, as vdpbf16ps does: lane j of a 16-float accumulator gains
// a[2p+1]·b[2p+1][j] then a[2p]·b[2p][j].
//
// A is rounded once per call into a row-major bfloat16 copy (k padded to
// even with a zero), and the micro-kernel broadcasts each row's 32-bit pair
// straight from it: no A panels, so A costs one pass of conversion instead
// of a repacking for every block of columns. B is packed in BNR-column
// panels of pairs [kc/2][BNR] (32-bit words), once per block of BNC columns
// and NKC k for all of A's rows; with AVX2 the packing moves 8×8 blocks of
// words (tB) or interleaves two rows 16 at a time (!tB).
//
// Three micro-kernels read the same operands:
//   - amx: AMX-BF16 tiles, 32×32 in four 16×16 float32 tiles, per 16 k
//     pairs two A and two B tiles and four tdpbf16ps, over all of k at once
//     (hone_bgemm_amx; A's copy padded with zeros to whole tiles, the
//     panels' pairs to 16);
//   - native: AVX512-BF16, MR×NR = 6×64 (two panels) in 24 zmm
//     accumulators, per k pair four 64-byte loads of B, six 32-bit
//     broadcasts of A, 24 vdpbf16ps. On Zen 4 a tile of 12×32 (twelve
//     broadcasts a pair) ran its loop at 89% of the instruction's rate and
//     this one at 100%, in L1 or streaming B from L2;
//   - portable: the same arithmetic in plain C (two fmaf per pair, the odd
//     half first, as the instruction does), for CPUs without AVX512-BF16.
//     It is the tested stand-in: the conversion, packing, blocking and edge
//     handling it shares with the native kernel are checked on any CPU. It
//     does not flush denormals as vdpbf16ps does (inputs below 2⁻¹²⁶ count
//     as zero there), which no tolerance here can see.

#define BMR 6
#define BNR 32    // columns of a packed panel; the native tile is two panels
#define BNT (2 * BNR)
#define BKC 256   // k per slot of a pre-packed panel (128 pairs)
#define NKC 2048  // k per pass over C (a multiple of BKC): B micro-panels of 128 KB
                  // stream from L2; with 256, C's read-modify-write every 256 k
                  // cost a fifth of the GEMM on Zen 4
#define BMC 48    // rows of A per block, 192 KB of bfloat16 rows in L2
#define BNC 256   // columns of B per block: 1 MB packed
#define BQ 16     // pairs of k in one AMX tile: panels are padded to a multiple

static int hone_has_avx512bf16(void) {
#if defined(__x86_64__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16");
#else
	return 0;
#endif
}

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <unistd.h>
#include <sys/syscall.h>
#endif

// hone_has_amx reports whether the AMX micro-kernel may run: the CPU has
// AMX-TILE and AMX-BF16 (cpuid leaf 7: EDX bits 24 and 22) and AVX512-BF16
// (the decode kernel of the same mode), and Linux grants this process the
// tile data state (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA,
// Linux 5.16 and later; without it the first tile instruction faults). The
// permission is the process's and asking again once granted is a no-op, so
// every call asks: no state here.
static int hone_has_amx(void) {
#if defined(__x86_64__) && defined(__linux__)
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
	if (!(d & (1u << 22)) || !(d & (1u << 24)) || !hone_has_avx512bf16()) return 0;
	// ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18), then
	// ARCH_GET_XCOMP_PERM (0x1022) to read the permitted features.
	if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) return 0;
	unsigned long perm = 0;
	if (syscall(SYS_arch_prctl, 0x1022, &perm) != 0) return 0;
	return (perm >> 18) & 1;
#else
	return 0;
#endif
}

static int hone_has_avx2(void) {
#if defined(__x86_64__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
#else
	return 0;
#endif
}

// bf16r rounds f to bfloat16 bits, nearest even; a NaN stays a quiet NaN
// (kernels.BF16 in C).
static inline uint16_t bf16r(float f) {
	uint32_t b;
	memcpy(&b, &f, sizeof b);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(b >> 16) | 0x40;
	b += 0x7fffu + ((b >> 16) & 1);
	return (uint16_t)(b >> 16);
}

static inline float bf16w(uint16_t h) {
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

// bround_rows writes rows [0, m) of A rounded to bfloat16 into dst [m][ldd],
// ldd ≥ k rounded up to even; the padding elements [k, ldd) are zero.
static void bround_rows(uint16_t *dst, long ldd, const float *a, long lda, long m, long k) {
	for (long i = 0; i < m; i++) {
		const float *src = a + i * lda;
		uint16_t *d = dst + i * ldd;
		for (long p = 0; p < k; p++) d[p] = bf16r(src[p]);
		for (long p = k; p < ldd; p++) d[p] = 0;
	}
}

#if defined(__x86_64__)
#include <immintrin.h>

// bround_rows_avx2 is bround_rows eight floats at a time.
__attribute__((target("avx2")))
static void bround_rows_avx2(uint16_t *dst, long ldd, const float *a, long lda, long m, long k) {
	const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), absm = _mm256_set1_epi32(0x7fffffff);
	const __m256i inf = _mm256_set1_epi32(0x7f800000), quiet = _mm256_set1_epi32(0x400000);
	for (long i = 0; i < m; i++) {
		const float *src = a + i * lda;
		uint16_t *d = dst + i * ldd;
		long p = 0;
		for (; p + 8 <= k; p += 8) {
			__m256i b = _mm256_loadu_si256((const __m256i *)(src + p));
			__m256i r = _mm256_add_epi32(b, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(b, 16), one)));
			__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, absm), inf);
			r = _mm256_srli_epi32(_mm256_blendv_epi8(r, _mm256_or_si256(b, quiet), nan), 16);
			__m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
			_mm_storeu_si128((__m128i *)(d + p), _mm_packus_epi32(lo, hi));
		}
		for (; p < k; p++) d[p] = bf16r(src[p]);
		for (p = k; p < ldd; p++) d[p] = 0;
	}
}

// tr8x8w writes the transpose of an 8×8 block of 32-bit words:
// dst[r*ldd + c] = src[c*lds + r] (strides in words).
__attribute__((target("avx2")))
static inline void tr8x8w(const uint32_t *src, long lds, uint32_t *dst, long ldd) {
	__m256 r0 = _mm256_loadu_ps((const float *)src), r1 = _mm256_loadu_ps((const float *)(src + lds));
	__m256 r2 = _mm256_loadu_ps((const float *)(src + 2 * lds)), r3 = _mm256_loadu_ps((const float *)(src + 3 * lds));
	__m256 r4 = _mm256_loadu_ps((const float *)(src + 4 * lds)), r5 = _mm256_loadu_ps((const float *)(src + 5 * lds));
	__m256 r6 = _mm256_loadu_ps((const float *)(src + 6 * lds)), r7 = _mm256_loadu_ps((const float *)(src + 7 * lds));
	__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
	__m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5), t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
	__m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE), s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
	__m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE), s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
	float *d = (float *)dst;
	_mm256_storeu_ps(d, _mm256_permute2f128_ps(s0, s4, 0x20));
	_mm256_storeu_ps(d + ldd, _mm256_permute2f128_ps(s1, s5, 0x20));
	_mm256_storeu_ps(d + 2 * ldd, _mm256_permute2f128_ps(s2, s6, 0x20));
	_mm256_storeu_ps(d + 3 * ldd, _mm256_permute2f128_ps(s3, s7, 0x20));
	_mm256_storeu_ps(d + 4 * ldd, _mm256_permute2f128_ps(s0, s4, 0x31));
	_mm256_storeu_ps(d + 5 * ldd, _mm256_permute2f128_ps(s1, s5, 0x31));
	_mm256_storeu_ps(d + 6 * ldd, _mm256_permute2f128_ps(s2, s6, 0x31));
	_mm256_storeu_ps(d + 7 * ldd, _mm256_permute2f128_ps(s3, s7, 0x31));
}

// bpack_b_avx2 packs whole BNR-wide panels the fast way and reports how many
// pairs of the panel it did (the caller finishes the rest): tB, 8 pairs ×
// 8 columns per transpose; !tB, two rows interleaved 16 columns at a time.
__attribute__((target("avx2")))
static long bpack_b_avx2(uint32_t *dst, const uint16_t *b, long ldb, int tB, long p0, long kc, long j0) {
	long kcp2 = kc / 2; // whole pairs
	if (tB) {
		if (ldb % 2 || p0 % 2) return 0; // pairs not word-aligned in B's rows
		long q = 0;
		for (; q + 8 <= kcp2; q += 8)
			for (int g = 0; g < BNR; g += 8)
				tr8x8w((const uint32_t *)(b + (j0 + g) * ldb + p0) + q, ldb / 2, dst + q * BNR + g, BNR);
		return q;
	}
	for (long q = 0; q < kcp2; q++) {
		const uint16_t *r0 = b + (p0 + 2 * q) * ldb + j0, *r1 = r0 + ldb;
		for (int g = 0; g < BNR; g += 16) {
			__m256i x0 = _mm256_loadu_si256((const __m256i *)(r0 + g)), x1 = _mm256_loadu_si256((const __m256i *)(r1 + g));
			__m256i lo = _mm256_unpacklo_epi16(x0, x1), hi = _mm256_unpackhi_epi16(x0, x1);
			_mm256_storeu_si256((__m256i *)(dst + q * BNR + g), _mm256_permute2x128_si256(lo, hi, 0x20));
			_mm256_storeu_si256((__m256i *)(dst + q * BNR + g + 8), _mm256_permute2x128_si256(lo, hi, 0x31));
		}
	}
	return kcp2;
}
#endif

// bpack_b: k [p0, p0+kc) × columns [j0, j0+nc) of op(B) into BNR-column
// panels of pairs [kcpr][BNR] (kcp = (kc+1)/2 pairs, kcpr = kcp rounded up
// to a multiple of BQ, the AMX kernel's pairs per tile); columns past nc,
// a k past kc and the pairs past kcp are zero. tB (B [n,k]): the pair of column j is two adjacent bfloat16
// of row j, one 32-bit word. !tB (B [k,n]): it interleaves rows 2q and 2q+1.
// fast uses the AVX2 packing for whole panels.
static void bpack_b(uint32_t *dst, const uint16_t *b, long ldb, int tB, long p0, long kc, long j0, long nc, int fast) {
	long kcp = (kc + 1) / 2, kcpr = (kcp + BQ - 1) / BQ * BQ;
	for (long jr = 0; jr < nc; jr += BNR) {
		long nr = nc - jr < BNR ? nc - jr : BNR;
		long q0 = 0;
#if defined(__x86_64__)
		if (fast && nr == BNR) q0 = bpack_b_avx2(dst, b, ldb, tB, p0, kc, j0 + jr);
#endif
		if (tB) {
			for (long j = 0; j < nr; j++) {
				const uint16_t *src = b + (j0 + jr + j) * ldb + p0;
				long q = q0;
				for (; 2 * q + 1 < kc; q++) {
					uint32_t w;
					memcpy(&w, src + 2 * q, sizeof w);
					dst[q * BNR + j] = w;
				}
				if (q < kcp) dst[q * BNR + j] = src[2 * q];
			}
		} else {
			for (long q = q0; q < kcp; q++) {
				const uint16_t *r0 = b + (p0 + 2 * q) * ldb + j0 + jr;
				const uint16_t *r1 = 2 * q + 1 < kc ? r0 + ldb : NULL;
				uint32_t *d = dst + q * BNR;
				if (r1)
					for (long j = 0; j < nr; j++) d[j] = (uint32_t)r0[j] | (uint32_t)r1[j] << 16;
				else
					for (long j = 0; j < nr; j++) d[j] = r0[j];
			}
		}
		if (nr < BNR)
			for (long q = 0; q < kcp; q++)
				for (long j = nr; j < BNR; j++) dst[q * BNR + j] = 0;
		for (long q = kcp; q < kcpr; q++)
			for (long j = 0; j < BNR; j++) dst[q * BNR + j] = 0;
		dst += kcpr * BNR;
	}
}

// bstore adds (or, first, writes) the tile t (rows of ldt) into C's mr×nr
// corner.
static inline void bstore(const float *t, long ldt, float *c, long ldc, long mr, long nr, int overwrite) {
	for (long i = 0; i < mr; i++) {
		float *ci = c + i * ldc;
		const float *ti = t + i * ldt;
		if (overwrite)
			for (long j = 0; j < nr; j++) ci[j] = ti[j];
		else
			for (long j = 0; j < nr; j++) ci[j] += ti[j];
	}
}

// The micro-kernels: T [BMR][BNT] = Σ_q A pairs · [B0 | B1], B0 and B1 two
// packed panels [kcp][BNR] (columns 0–31 and 32–63 of the tile), where row
// i's pair q is the 32-bit word at ar[i] + 2q (ar: BMR row pointers into
// the bfloat16 copy of A). With full set (a whole tile of C), T goes to C
// (row stride ldc): written when overwrite, else added; otherwise to t
// [BMR][BNT], for bstore to take the corner that exists.

static void bkernel_portable(long kcp, const uint16_t *const *ar, const uint32_t *B0, const uint32_t *B1, float *t, float *c, long ldc, int full, int overwrite) {
	for (long x = 0; x < BMR * BNT; x++) t[x] = 0;
	for (long q = 0; q < kcp; q++) {
		float b0[BNT], b1[BNT];
		for (long j = 0; j < BNT; j++) {
			uint32_t w = j < BNR ? B0[q * BNR + j] : B1[q * BNR + j - BNR];
			b0[j] = bf16w((uint16_t)w);
			b1[j] = bf16w((uint16_t)(w >> 16));
		}
		for (long i = 0; i < BMR; i++) {
			float a0 = bf16w(ar[i][2 * q]), a1 = bf16w(ar[i][2 * q + 1]);
			float *ti = t + i * BNT;
			for (long j = 0; j < BNT; j++) ti[j] = fmaf(a0, b0[j], fmaf(a1, b1[j], ti[j]));
		}
	}
	if (full) bstore(t, BNT, c, ldc, BMR, BNT, overwrite);
}

#if defined(__x86_64__)
// bkernel_native is bkernel_portable on AVX512-BF16.
__attribute__((target("avx512f,avx512bw,avx512bf16")))
static void bkernel_native(long kcp, const uint16_t *const *ar, const uint32_t *B0, const uint32_t *B1, float *t, float *cc, long ldc, int full, int overwrite) {
	__m512 c[BMR][4];
	const uint16_t *a[BMR];
#pragma GCC unroll 6
	for (int i = 0; i < BMR; i++) {
		c[i][0] = c[i][1] = c[i][2] = c[i][3] = _mm512_setzero_ps();
		a[i] = ar[i];
	}
	for (long q = 0; q < kcp; q++) {
		__m512bh b0 = (__m512bh)_mm512_loadu_si512(B0 + q * BNR);
		__m512bh b1 = (__m512bh)_mm512_loadu_si512(B0 + q * BNR + 16);
		__m512bh b2 = (__m512bh)_mm512_loadu_si512(B1 + q * BNR);
		__m512bh b3 = (__m512bh)_mm512_loadu_si512(B1 + q * BNR + 16);
#pragma GCC unroll 6
		for (int i = 0; i < BMR; i++) {
			uint32_t w;
			memcpy(&w, a[i] + 2 * q, sizeof w);
			__m512bh x = (__m512bh)_mm512_set1_epi32((int)w);
			c[i][0] = _mm512_dpbf16_ps(c[i][0], x, b0);
			c[i][1] = _mm512_dpbf16_ps(c[i][1], x, b1);
			c[i][2] = _mm512_dpbf16_ps(c[i][2], x, b2);
			c[i][3] = _mm512_dpbf16_ps(c[i][3], x, b3);
		}
	}
	if (!full) { // the whole tile into t, for bstore
		cc = t;
		ldc = BNT;
		overwrite = 1;
	}
#pragma GCC unroll 6
	for (int i = 0; i < BMR; i++) {
		float *ci = cc + i * ldc;
#pragma GCC unroll 4
		for (int j = 0; j < 4; j++) {
			if (!overwrite) c[i][j] = _mm512_add_ps(c[i][j], _mm512_loadu_ps(ci + 16 * j));
			_mm512_storeu_ps(ci + 16 * j, c[i][j]);
		}
	}
}
#else
static void bkernel_native(long kcp, const uint16_t *const *ar, const uint32_t *B0, const uint32_t *B1, float *t, float *cc, long ldc, int full, int overwrite) { abort(); }
#endif

// The decode kernel (few rows, tB only): out[n*ldo + o] = Σ_c a16[n][c] ·
// w[o][c] for n < N, o < rows, with A already rounded (a16 [N][C]) and the
// weight rows read in place — no packing, which would cost more than the
// arithmetic of a few rows. A tile of DR_O = 4 weight rows × DR_N = 6
// inputs keeps 24 zmm accumulators of 16 pair-sums along k (32 bfloat16 a
// step, the tail masked), reduced at the end; the weight tile stays in L1
// while every input tile passes over it.

#define DR_O 4
#define DR_N 6

static void brows_portable(float *out, long ldo, const uint16_t *a16, long N, long C, const uint16_t *w, long rows) {
	for (long o = 0; o < rows; o++)
		for (long n = 0; n < N; n++) {
			const uint16_t *x = a16 + n * C, *r = w + o * C;
			float acc = 0;
			long c = 0;
			for (; c + 1 < C; c += 2) acc = fmaf(bf16w(x[c]), bf16w(r[c]), fmaf(bf16w(x[c + 1]), bf16w(r[c + 1]), acc));
			if (c < C) acc = fmaf(bf16w(x[c]), bf16w(r[c]), acc);
			out[n * ldo + o] = acc;
		}
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw,avx512bf16")))
static void brows_native(float *out, long ldo, const uint16_t *a16, long N, long C, const uint16_t *w, long rows) {
	__mmask32 tail = (C % 32) ? (__mmask32)((1u << (C % 32)) - 1) : (__mmask32)0xffffffffu;
	long cfull = C - C % 32;
	for (long o0 = 0; o0 < rows; o0 += DR_O) {
		long no = rows - o0 < DR_O ? rows - o0 : DR_O;
		const uint16_t *wr[DR_O];
		for (int j = 0; j < DR_O; j++) wr[j] = w + (o0 + (j < no ? j : 0)) * C;
		for (long n0 = 0; n0 < N; n0 += DR_N) {
			long nn = N - n0 < DR_N ? N - n0 : DR_N;
			const uint16_t *ar[DR_N];
			for (int i = 0; i < DR_N; i++) ar[i] = a16 + (n0 + (i < nn ? i : 0)) * C;
			__m512 acc[DR_N][DR_O];
#pragma GCC unroll 6
			for (int i = 0; i < DR_N; i++)
#pragma GCC unroll 4
				for (int j = 0; j < DR_O; j++) acc[i][j] = _mm512_setzero_ps();
			for (long c = 0; c < C; c += 32) {
				__mmask32 m = c < cfull ? (__mmask32)0xffffffffu : tail;
				__m512bh wv[DR_O];
#pragma GCC unroll 4
				for (int j = 0; j < DR_O; j++) wv[j] = (__m512bh)_mm512_maskz_loadu_epi16(m, wr[j] + c);
#pragma GCC unroll 6
				for (int i = 0; i < DR_N; i++) {
					__m512bh av = (__m512bh)_mm512_maskz_loadu_epi16(m, ar[i] + c);
#pragma GCC unroll 4
					for (int j = 0; j < DR_O; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, wv[j]);
				}
			}
			// Constant indices only on acc, so that it stays in registers.
			float red[DR_N][DR_O];
#pragma GCC unroll 6
			for (int i = 0; i < DR_N; i++)
#pragma GCC unroll 4
				for (int j = 0; j < DR_O; j++) red[i][j] = _mm512_reduce_add_ps(acc[i][j]);
			for (long i = 0; i < nn; i++)
				for (long j = 0; j < no; j++) out[(n0 + i) * ldo + o0 + j] = red[i][j];
		}
	}
}
#else
static void brows_native(float *out, long ldo, const uint16_t *a16, long N, long C, const uint16_t *w, long rows) { abort(); }
#endif

static void hone_brows(int native, float *out, long ldo, const uint16_t *a16, long N, long C, const uint16_t *w, long rows) {
	if (native)
		brows_native(out, ldo, a16, N, C, w, rows);
	else
		brows_portable(out, ldo, a16, N, C, w, rows);
}

// The panel decode kernel (24 to 64 inputs, tB only, C even): out[n*ldo + o]
// = Σ_c x16[n][c]·w[o][c], with the roles of the GEMM turned round as the
// AMX decode kernel turns them: the weight's rows are the A rows, read in
// place (each row's 32-bit pairs broadcast straight from it), and the
// rounded inputs, packed once as B panels of 32 (hone_bprepack: tB, n = N,
// k = C; xp), the columns. A tile is PR_O = 12 weight rows × 32 inputs in 24
// zmm accumulators over all of C; it goes through t and out, transposed.
// Against the dot-product kernel above (hone_brows: 4 rows × 6 inputs, a
// horizontal sum per output) it has no reductions and no wasted sixth of a
// tile at 32 inputs: on Zen 4, 140 → ~190 GFLOP/s on one core at 32.
// C must be even (hone_prows_ok): a pair never reads past a weight row.
#define PR_O 12

static int hone_prows_ok(long C) { return C > 0 && C % 2 == 0; }

static void prows_tile_portable(long kcp, const uint16_t *const *wr, const uint32_t *Bp, float *t) {
	for (long x = 0; x < PR_O * BNR; x++) t[x] = 0;
	for (long q = 0; q < kcp; q++) {
		const uint32_t *bp = Bp + q * BNR;
		for (long i = 0; i < PR_O; i++) {
			float a0 = bf16w(wr[i][2 * q]), a1 = bf16w(wr[i][2 * q + 1]);
			float *ti = t + i * BNR;
			for (long j = 0; j < BNR; j++) ti[j] = fmaf(a0, bf16w((uint16_t)bp[j]), fmaf(a1, bf16w((uint16_t)(bp[j] >> 16)), ti[j]));
		}
	}
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw,avx512bf16")))
static void prows_tile_native(long kcp, const uint16_t *const *wr, const uint32_t *Bp, float *t) {
	__m512 c[PR_O][2];
	const uint16_t *a[PR_O];
#pragma GCC unroll 12
	for (int i = 0; i < PR_O; i++) {
		c[i][0] = c[i][1] = _mm512_setzero_ps();
		a[i] = wr[i];
	}
	for (long q = 0; q < kcp; q++) {
		__m512bh b0 = (__m512bh)_mm512_loadu_si512(Bp + q * BNR);
		__m512bh b1 = (__m512bh)_mm512_loadu_si512(Bp + q * BNR + 16);
#pragma GCC unroll 12
		for (int i = 0; i < PR_O; i++) {
			uint32_t w;
			memcpy(&w, a[i] + 2 * q, sizeof w);
			__m512bh x = (__m512bh)_mm512_set1_epi32((int)w);
			c[i][0] = _mm512_dpbf16_ps(c[i][0], x, b0);
			c[i][1] = _mm512_dpbf16_ps(c[i][1], x, b1);
		}
	}
#pragma GCC unroll 12
	for (int i = 0; i < PR_O; i++) {
		_mm512_storeu_ps(t + i * BNR, c[i][0]);
		_mm512_storeu_ps(t + i * BNR + 16, c[i][1]);
	}
}
#else
static void prows_tile_native(long kcp, const uint16_t *const *wr, const uint32_t *Bp, float *t) { abort(); }
#endif

static void hone_prows(int native, float *out, long ldo, const uint32_t *xp, long N, long C, const uint16_t *w, long rows) {
	long kcp = C / 2, slots = ((C + BKC - 1) / BKC) * (BKC / 2) * BNR;
	float t[PR_O * BNR] __attribute__((aligned(64)));
	const uint16_t *wr[PR_O];
	for (long o0 = 0; o0 < rows; o0 += PR_O) {
		long no = rows - o0 < PR_O ? rows - o0 : PR_O;
		// Rows past no repeat the first: computed, never stored.
		for (long i = 0; i < PR_O; i++) wr[i] = w + (o0 + (i < no ? i : 0)) * C;
		for (long n0 = 0; n0 < N; n0 += BNR) {
			long nn = N - n0 < BNR ? N - n0 : BNR;
			if (native)
				prows_tile_native(kcp, wr, xp + (n0 / BNR) * slots, t);
			else
				prows_tile_portable(kcp, wr, xp + (n0 / BNR) * slots, t);
			for (long i = 0; i < nn; i++) {
				float *oi = out + (n0 + i) * ldo + o0;
				for (long j = 0; j < no; j++) oi[j] = t[j * BNR + i];
			}
		}
	}
}

// hone_bround is bround_rows (fast: the AVX2 form), for tests.
static void hone_bround(int fast, uint16_t *dst, long ldd, const float *a, long lda, long m, long k) {
#if defined(__x86_64__)
	if (fast) {
		bround_rows_avx2(dst, ldd, a, lda, m, k);
		return;
	}
#endif
	bround_rows(dst, ldd, a, lda, m, k);
}

static __thread uint16_t *bA16;
static __thread long bA16cap;
static __thread uint32_t *bpackB;

// Pre-packed B: the panels of the whole of op(B), each BNR columns × one
// BKC block of k in a slot of BKC/2 × BNR words, slot (jp, pb) at
// (jp·nkb + pb)·BKC/2·BNR words, nkb = ⌈k/BKC⌉. Parts of a GEMM split by
// rows of A share it instead of each packing all of B.

static long hone_bprepack_words(long n, long k) {
	return ((n + BNR - 1) / BNR) * ((k + BKC - 1) / BKC) * (BKC / 2) * BNR;
}

// bprepack_at packs the column panels [jp0, jp1) of op(B) into pre, whose
// first slot is panel jbase's.
static void bprepack_at(uint32_t *pre, long jbase, const uint16_t *b, long ldb, int tB, long n, long k, long jp0, long jp1, int fast) {
	long nkb = (k + BKC - 1) / BKC;
	for (long jp = jp0; jp < jp1; jp++) {
		long j0 = jp * BNR, nc = n - j0 < BNR ? n - j0 : BNR;
		for (long pb = 0; pb < nkb; pb++) {
			long pc = pb * BKC, kc = k - pc < BKC ? k - pc : BKC;
			bpack_b(pre + ((jp - jbase) * nkb + pb) * (BKC / 2) * BNR, b, ldb, tB, pc, kc, j0, nc, fast);
		}
	}
}

// hone_bprepack packs the column panels [jp0, jp1) of op(B) into pre.
static void hone_bprepack(uint32_t *pre, const uint16_t *b, long ldb, int tB, long n, long k, long jp0, long jp1, int fast) {
	bprepack_at(pre, 0, b, ldb, tB, n, k, jp0, jp1, fast);
}

// The AMX micro-kernel (AMX-TILE and AMX-BF16: Intel Sapphire Rapids and
// later), kind 2 of hone_bgemm. A 32×32 tile of C lives in four 16×16
// float32 tiles (tmm0–3); per BQ = 16 pairs of k, two A tiles of 16 rows ×
// 16 pairs (tmm4, tmm5: the bfloat16 rows of A read in place, row stride
// lda16) and two B tiles of 16 pairs × 16 columns (tmm6, tmm7: the two
// halves of a packed panel's rows, stride BNR words — the panels are the
// other kernels' own), then four tdpbf16ps: tmm0 += tmm4·tmm6, and so on.
// Every tile keeps one shape, 16 rows × 64 bytes, configured once per call:
// the edges are zeros instead — the rounded rows of A padded with zeros to
// a multiple of 2·BQ k and of AMR rows (hone_a16_ld, hone_a16_rows), the
// panels' pairs to a multiple of BQ and their columns to BNR — and a tile
// off C's edge goes through t, of which bstore takes the corner that
// exists. A whole tile of C is loaded into the accumulators (beta 1) or
// zeroed, gains the product over all of k, and is stored straight back.
//
// GCC's _tile_* intrinsics are asm statements without a memory clobber, so
// the compiler may move ordinary loads and stores of the same memory across
// them (the zero padding written before a tileloadd, t read after a
// tilestored); these macros are the same instructions with one. Inline asm
// needs no target attribute: nothing here runs unless hone_has_amx said so.
#define AMR 32
#define AMX_LOAD(t, p, stride) __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"((const void *)(p)), "r"((long)(stride)) : "memory")
#define AMX_STORE(t, p, stride) __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"((void *)(p)), "r"((long)(stride)) : "memory")
#define AMX_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::: "memory")
#define AMX_DP(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::: "memory")

// hone_a16_ld and hone_a16_rows are the layout of the rounded copy of A
// the micro-kernel of kind reads: rows of ld bfloat16 (k rounded up to even,
// or for AMX to a multiple of 2·BQ), and for AMX the rows rounded up to a
// multiple of AMR; the padding is zero.
static long hone_a16_ld(int kind, long k) { return kind == 2 ? (k + 2 * BQ - 1) / (2 * BQ) * (2 * BQ) : (k + 1) & ~1L; }
static long hone_a16_rows(int kind, long m) { return kind == 2 ? (m + AMR - 1) / AMR * AMR : m; }

#if defined(__x86_64__)
struct amx_cfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

// amx_begin loads the tile configuration: palette 1, tiles 0–7 of 16 rows ×
// 64 bytes. The tiles belong to the thread, and a goroutine may run its
// next cgo call on another: every call configures, and releases at the end.
static void amx_begin(void) {
	struct amx_cfg cfg __attribute__((aligned(64)));
	memset(&cfg, 0, sizeof cfg);
	cfg.palette = 1;
	for (int i = 0; i < 8; i++) {
		cfg.colsb[i] = 64;
		cfg.rows[i] = 16;
	}
	__asm__ volatile("ldtilecfg %0" ::"m"(cfg) : "memory");
}

static void amx_end(void) { __asm__ volatile("tilerelease" ::: "memory"); }

// amx_tile: the AMR×BNR tile at c (row stride ldc floats) gains (load) or
// is set to the product of kch·BQ pairs: A rows a (stride lda16 bfloat16),
// B panel Bp ([kch·BQ][BNR] words). It prefetches the next chunk of A.
static void amx_tile(long kch, const uint16_t *a, long lda16, const uint32_t *Bp, float *c, long ldc, int load) {
	const long sa = lda16 * (long)sizeof(uint16_t), sb = BNR * (long)sizeof(uint32_t), sc = ldc * (long)sizeof(float);
	const uint16_t *a1 = a + 16 * lda16;
	float *c1 = c + 16 * ldc;
	if (load) {
		AMX_LOAD(0, c, sc);
		AMX_LOAD(1, c + 16, sc);
		AMX_LOAD(2, c1, sc);
		AMX_LOAD(3, c1 + 16, sc);
	} else {
		AMX_ZERO(0);
		AMX_ZERO(1);
		AMX_ZERO(2);
		AMX_ZERO(3);
	}
	for (long q = 0; q < kch; q++) {
		const uint32_t *bq = Bp + q * BQ * BNR;
		if (q + 1 < kch) // the next chunk's A rows (32 strided lines) into L1; B's run is sequential
			for (int r = 0; r < 16; r++) {
				__builtin_prefetch(a + r * lda16 + (q + 1) * 2 * BQ, 0, 3);
				__builtin_prefetch(a1 + r * lda16 + (q + 1) * 2 * BQ, 0, 3);
			}
		AMX_LOAD(4, a + q * 2 * BQ, sa);
		AMX_LOAD(6, bq, sb);
		AMX_LOAD(7, bq + 16, sb);
		AMX_DP(0, 4, 6);
		AMX_DP(1, 4, 7);
		AMX_LOAD(5, a1 + q * 2 * BQ, sa);
		AMX_DP(2, 5, 6);
		AMX_DP(3, 5, 7);
	}
	AMX_STORE(0, c, sc);
	AMX_STORE(1, c + 16, sc);
	AMX_STORE(2, c1, sc);
	AMX_STORE(3, c1 + 16, sc);
}
#else
static void amx_begin(void) { abort(); }
static void amx_end(void) {}
static void amx_tile(long kch, const uint16_t *a, long lda16, const uint32_t *Bp, float *c, long ldc, int load) { abort(); }
#endif

// hone_bgemm_amx is hone_bgemm on the AMX micro-kernel. Unlike the others
// it keeps a tile of C in its accumulators for the whole of k (C is loaded
// or zeroed once and stored once: with blocks of k, every block would pass
// over C, which for the MLP's [2048, 4864] is 40 MB each time, from DRAM).
// So it reads op(B) pre-packed whole (hone_bprepack's slots: a panel's
// slots for consecutive blocks of k are consecutive, and all but the last
// are full, so a panel's pairs over all of k are one run of rows) — from
// pre, or packed here ABN columns at a time into bpackA — and the rounded
// rows of A over all of k (zero-padded to whole chunks of 2·BQ). Per block
// of ABN columns: rows of A AMR at a time, the block's panels, tiles.
#define ABN 256 // columns of B packed at a time without pre: 8 panels, k·1 KB
#define AMC 96  // rows of A per block, reused across a block's panels

// brounded_a returns A [m, k] rounded to bfloat16 in rows of *lda16: the
// thread's bA16, grown to rows·*lda16 (rows ≥ m; the rows past m zero), or
// a16 itself when the caller rounded A already (then *lda16 = ld16).
static const uint16_t *brounded_a(int fast, const float *a, long lda, long m, long rows, long k,
                                  const uint16_t *a16, long ld16, long *lda16) {
	if (a16) {
		*lda16 = ld16;
		return a16;
	}
	long ld = *lda16;
	if (bA16cap < rows * ld) {
		free(bA16);
		bA16cap = rows * ld;
		bA16 = aligned_alloc(64, (sizeof(uint16_t) * bA16cap + 63) & ~63L);
	}
	if (!bA16) abort();
#if defined(__x86_64__)
	if (fast)
		bround_rows_avx2(bA16, ld, a, lda, m, k);
	else
#endif
		bround_rows(bA16, ld, a, lda, m, k);
	memset(bA16 + m * ld, 0, sizeof(uint16_t) * (rows - m) * ld);
	return bA16;
}

static __thread uint32_t *bpackA;
static __thread long bpackAcap;

static void hone_bgemm_amx(int fast, int tB, long m, long n, long k, const float *a, long lda,
                           const uint16_t *b, long ldb, float beta, float *c, long ldc, const uint32_t *pre,
                           const uint16_t *a16, long ld16) {
	long lda16 = hone_a16_ld(2, k), mp = hone_a16_rows(2, m), nkb = (k + BKC - 1) / BKC;
	long kch = lda16 / (2 * BQ), slots = nkb * (BKC / 2) * BNR; // chunks of k; words of a panel
	if (!pre && bpackAcap < (ABN / BNR) * slots) {
		free(bpackA);
		bpackAcap = (ABN / BNR) * slots;
		bpackA = aligned_alloc(64, sizeof(uint32_t) * bpackAcap);
	}
	if (!pre && !bpackA) abort();
	const uint16_t *A16 = brounded_a(fast, a, lda, m, mp, k, a16, ld16, &lda16);
	float t[AMR * BNR] __attribute__((aligned(64)));
	int overwrite = beta == 0;
	long jstep = pre ? n : ABN;
	amx_begin();
	for (long jc = 0; jc < n; jc += jstep) {
		long nc = n - jc < jstep ? n - jc : jstep, jp0 = jc / BNR;
		const uint32_t *P = pre ? pre : bpackA; // panel jp at P + (jp - jbase)·slots
		long jbase = pre ? 0 : jp0;
		if (!pre) bprepack_at(bpackA, jp0, b, ldb, tB, n, k, jp0, (jc + nc + BNR - 1) / BNR, fast);
		for (long ic = 0; ic < m; ic += AMC) {
			long mc = m - ic < AMC ? m - ic : AMC;
			for (long jr = 0; jr < nc; jr += BNR) {
				long nr = nc - jr < BNR ? nc - jr : BNR;
				const uint32_t *Bp = P + ((jc + jr) / BNR - jbase) * slots;
				for (long ir = 0; ir < mc; ir += AMR) {
					long mr = mc - ir < AMR ? mc - ir : AMR;
					const uint16_t *ap = A16 + (ic + ir) * lda16;
					float *ct = c + (ic + ir) * ldc + jc + jr;
					if (mr == AMR && nr == BNR)
						amx_tile(kch, ap, lda16, Bp, ct, ldc, !overwrite);
					else {
						amx_tile(kch, ap, lda16, Bp, t, BNR, 0);
						bstore(t, BNR, ct, ldc, mr, nr, overwrite);
					}
				}
			}
		}
	}
	amx_end();
}

// hone_amx_rows is the decode kernel (few rows, tB) on AMX: out[n*ldo + o]
// = Σ_c x[n][c]·w[o][c] for n < N, o < rows, with the roles turned round so
// that the weight is read in place, never packed: outᵀ = w·xᵀ, the weight's
// rows the A tiles (32 of them, C bfloat16 each, row stride C) and the
// activation, rounded and packed as B panels of 32 inputs by
// hone_bprepack (tB, n = N, k = C; xp), the B tiles. C must be a multiple
// of 2·BQ = 32 (hone_amx_rows_ok), so that no A tile reads past a row; the
// last rows < AMR are copied into wtail, zero-padded. Each 32 × 32 tile
// (rows × inputs) goes through t and is written transposed into out.
static __thread uint16_t *wtail;
static __thread long wtailcap;

static int hone_amx_rows_ok(long C) { return C % (2 * BQ) == 0; }

static void hone_amx_rows(float *out, long ldo, const uint32_t *xp, long N, long C, const uint16_t *w, long rows) {
	long kch = C / (2 * BQ), slots = ((C + BKC - 1) / BKC) * (BKC / 2) * BNR;
	if (wtailcap < AMR * C) {
		free(wtail);
		wtailcap = AMR * C;
		wtail = aligned_alloc(64, (sizeof(uint16_t) * wtailcap + 63) & ~63L);
	}
	if (!wtail) abort();
	float t[AMR * BNR] __attribute__((aligned(64)));
	amx_begin();
	for (long o0 = 0; o0 < rows; o0 += AMR) {
		long no = rows - o0 < AMR ? rows - o0 : AMR;
		const uint16_t *a = w + o0 * C;
		if (no < AMR) {
			memcpy(wtail, a, sizeof(uint16_t) * no * C);
			memset(wtail + no * C, 0, sizeof(uint16_t) * (AMR - no) * C);
			a = wtail;
		}
		for (long n0 = 0; n0 < N; n0 += BNR) {
			long nn = N - n0 < BNR ? N - n0 : BNR;
			amx_tile(kch, a, C, xp + (n0 / BNR) * slots, t, BNR, 0);
			for (long i = 0; i < nn; i++) {
				float *oi = out + (n0 + i) * ldo + o0;
				for (long j = 0; j < no; j++) oi[j] = t[j * BNR + i];
			}
		}
	}
	amx_end();
}

// hone_bgemm: see the comment at the top. kind picks the micro-kernel (0
// portable, 1 AVX512-BF16, 2 AMX: hone_bgemm_amx), fast the AVX2
// conversion and packing (the CPU must have AVX2). pre, when
// not NULL, is B pre-packed (hone_bprepack, all n columns) and b is unused;
// a16, when not NULL, is A already rounded in the layout hone_a16_ld and
// hone_a16_rows give for kind (the padding zero; ld16 the row stride) and a
// is unused.
static void hone_bgemm(int kind, int fast, int tB, long m, long n, long k, const float *a, long lda,
                       const uint16_t *b, long ldb, float beta, float *c, long ldc, const uint32_t *pre,
                       const uint16_t *a16, long ld16) {
	if (kind == 2) {
		hone_bgemm_amx(fast, tB, m, n, k, a, lda, b, ldb, beta, c, ldc, pre, a16, ld16);
		return;
	}
	int native = kind == 1;
	long lda16 = hone_a16_ld(kind, k), nkb = (k + BKC - 1) / BKC;
	if (!bpackB) bpackB = aligned_alloc(64, sizeof(uint32_t) * BNC * (NKC / 2));
	if (!bpackB) abort();
	const uint16_t *A16 = brounded_a(fast, a, lda, m, m, k, a16, ld16, &lda16);
	float t[BMR * BNT] __attribute__((aligned(64)));
	const uint16_t *ar[BMR];
	for (long jc = 0; jc < n; jc += BNC) {
		long nc = n - jc < BNC ? n - jc : BNC;
		for (long pc = 0; pc < k; pc += NKC) {
			// A pass over NKC k. Packed here, its panels are [kcpr][BNR]
			// one after another; pre-packed, a panel's slots of BKC k are
			// consecutive and all but the last full, so from slot pc/BKC
			// on they are one run of pairs too.
			long kc = k - pc < NKC ? k - pc : NKC, kcp = (kc + 1) / 2, kcpr = (kcp + BQ - 1) / BQ * BQ;
			int first = pc == 0 && beta == 0;
			if (!pre) bpack_b(bpackB, b, ldb, tB, pc, kc, jc, nc, fast);
			for (long ic = 0; ic < m; ic += BMC) {
				long mc = m - ic < BMC ? m - ic : BMC;
				for (long jr = 0; jr < nc; jr += BNT) {
					long nr = nc - jr < BNT ? nc - jr : BNT;
					const uint32_t *B0 = pre ? pre + (((jc + jr) / BNR) * nkb + pc / BKC) * (BKC / 2) * BNR
					                         : bpackB + (jr / BNR) * kcpr * BNR;
					// A lone last panel is multiplied twice, the copy never stored.
					const uint32_t *B1 = nr <= BNR ? B0 : pre ? B0 + nkb * (BKC / 2) * BNR : B0 + kcpr * BNR;
					for (long ir = 0; ir < mc; ir += BMR) {
						long mr = mc - ir < BMR ? mc - ir : BMR;
						// Rows past mr repeat the first: computed, never stored.
						for (long i = 0; i < BMR; i++) ar[i] = A16 + (ic + ir + (i < mr ? i : 0)) * lda16 + pc;
						float *ct = c + (ic + ir) * ldc + jc + jr;
						int full = mr == BMR && nr == BNT;
						if (native)
							bkernel_native(kcp, ar, B0, B1, t, ct, ldc, full, first);
						else
							bkernel_portable(kcp, ar, B0, B1, t, ct, ldc, full, first);
						if (!full) bstore(t, BNT, ct, ldc, mr, nr, first);
					}
				}
			}
		}
	}
}
*/
import "C"

import "unsafe"

// hasAVX512BF16 reports whether the CPU has AVX512-BF16 (with F and BW),
// which the native bfloat16 GEMM needs.
func hasAVX512BF16() bool { return C.hone_has_avx512bf16() != 0 }

// hasAMX reports whether the AMX bfloat16 GEMM may run: AMX-TILE, AMX-BF16
// and AVX512-BF16 on the CPU, and the tile state granted to this process by
// Linux (it asks, which is idempotent).
func hasAMX() bool { return C.hone_has_amx() != 0 }

// bf16A16Layout is the layout of the rounded A that kind's micro-kernel
// reads (bgemmA16): rows of ld16 bfloat16, and rows ≥ m rows in all, the
// padding (columns k to ld16, rows m to rows) zero.
func bf16A16Layout(kind bf16Kind, m, k int) (ld16, rows int) {
	return int(C.hone_a16_ld(C.int(kind), C.long(k))), int(C.hone_a16_rows(C.int(kind), C.long(m)))
}

// bgemmFunc computes, for row-major matrices with leading dimensions,
//
//	c[i,j] = Σ_p bf16(a[i,p])·op(b)[p,j] + beta·c[i,j]
//
// with float32 accumulation, op(b)[p,j] = b[j*ldb+p] when tB (b [n,k]) or
// b[p*ldb+j] (b [k,n]); beta is 0 (c's old contents ignored) or 1.
// Slices are non-empty and m, n, k > 0.
type bgemmFunc func(tB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int)

// bf16GEMM returns the bfloat16 GEMM on the micro-kernel kind (bf16Native
// only on a CPU with hasAVX512BF16, bf16AMX only where hasAMX).
func bf16GEMM(kind bf16Kind) bgemmFunc { return bf16GEMMWith(kind, bf16GEMMFastOK()) }

// bf16RoundRow rounds a into dst (len(a) rounded up to even values, the
// padding zero) as the GEMM rounds A, with the AVX2 conversion when fast:
// for tests.
func bf16RoundRow(dst []uint16, a []float32, fast bool) {
	k := len(a)
	ldd := (k + 1) &^ 1
	if fast {
		C.hone_bround(1, (*C.uint16_t)(unsafe.Pointer(&dst[0])), C.long(ldd), (*C.float)(unsafe.Pointer(&a[0])), C.long(k), 1, C.long(k))
		return
	}
	C.hone_bround(0, (*C.uint16_t)(unsafe.Pointer(&dst[0])), C.long(ldd), (*C.float)(unsafe.Pointer(&a[0])), C.long(k), 1, C.long(k))
}

// bprepackWords is the length of a pre-packed op(B) [k, n] (bgemmPre).
func bprepackWords(n, k int) int { return int(C.hone_bprepack_words(C.long(n), C.long(k))) }

// bprepackPanels packs the column panels [jp0, jp1) (32 columns each) of
// op(b) into pre (bprepackWords long); parts may run concurrently.
func bprepackPanels(pre []uint32, b []uint16, ldb int, tB bool, n, k, jp0, jp1 int) {
	C.hone_bprepack((*C.uint32_t)(unsafe.Pointer(&pre[0])), (*C.uint16_t)(unsafe.Pointer(&b[0])), C.long(ldb), cbool(tB),
		C.long(n), C.long(k), C.long(jp0), C.long(jp1), cbool(bf16GEMMFastOK()))
}

// bprepackPanel is the column-panel width of bprepackPanels.
const bprepackPanel = 32

// bf16TileCols is the columns of the native micro-kernel's tile (BNT, two
// panels): a part of a GEMM split by columns should hold whole tiles.
const bf16TileCols = 2 * bprepackPanel

// bgemmPre is the bfloat16 GEMM on a pre-packed op(B) of all n columns:
// c [m, n] (+)= bf16(a)·op(B), as bgemmFunc; the micro-kernel kind.
func bgemmPre(kind bf16Kind, m, n, k int, a []float32, lda int, pre []uint32, beta float32, c []float32, ldc int) {
	C.hone_bgemm(C.int(kind), cbool(bf16GEMMFastOK()), 0, C.long(m), C.long(n), C.long(k),
		(*C.float)(unsafe.Pointer(&a[0])), C.long(lda), nil, 0,
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.long(ldc), (*C.uint32_t)(unsafe.Pointer(&pre[0])), nil, 0)
}

// bgemmA16 is the bfloat16 GEMM on an A already rounded: a16 in the layout
// bf16A16Layout gives for kind (bf16RoundRowsPad, the padding rows zeroed),
// as bgemmFunc.
func bgemmA16(kind bf16Kind, tB bool, m, n, k int, a16 []uint16, ld16 int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	_, rows := bf16A16Layout(kind, m, k)
	_ = a16[rows*ld16-1]
	C.hone_bgemm(C.int(kind), cbool(bf16GEMMFastOK()), cbool(tB), C.long(m), C.long(n), C.long(k), nil, 0,
		(*C.uint16_t)(unsafe.Pointer(&b[0])), C.long(ldb), C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.long(ldc), nil,
		(*C.uint16_t)(unsafe.Pointer(&a16[0])), C.long(ld16))
}

// bf16RoundRowsPad writes the m rows of a (row stride lda, k values) rounded
// to bfloat16 into dst, rows of ld16 ≥ k rounded up to even, the padding
// (columns k to ld16) zero.
func bf16RoundRowsPad(dst []uint16, ld16 int, a []float32, lda, m, k int) {
	if m == 0 {
		return
	}
	_, _ = dst[(m-1)*ld16+k-1], a[(m-1)*lda+k-1]
	C.hone_bround(C.int(cbool(bf16GEMMFastOK())), (*C.uint16_t)(unsafe.Pointer(&dst[0])), C.long(ld16), (*C.float)(unsafe.Pointer(&a[0])), C.long(lda), C.long(m), C.long(k))
}

// bf16AMXRowsOK reports whether bf16AMXRows takes rows of C values.
func bf16AMXRowsOK(C int) bool { return C > 0 && C.hone_amx_rows_ok(C.long(C)) != 0 }

// bf16AMXRows is the decode kernel on AMX (hasAMX, bf16AMXRowsOK(C)):
// out[n*ldo+o] = Σ_c x16[n][c]·w[o*C+c] for n < N, o < len(w)/C, where xp
// is the rounded activation x16 [N, C] packed by bprepackPanels (tB, n = N,
// k = C, all panels).
func bf16AMXRows(out []float32, ldo int, xp []uint32, N, C int, w []uint16) {
	rows := len(w) / C
	if rows == 0 {
		return
	}
	_, _ = out[(N-1)*ldo+rows-1], xp[bprepackWords(N, C)-1]
	C.hone_amx_rows((*C.float)(unsafe.Pointer(&out[0])), C.long(ldo), (*C.uint32_t)(unsafe.Pointer(&xp[0])), C.long(N), C.long(C),
		(*C.uint16_t)(unsafe.Pointer(&w[0])), C.long(rows))
}

// bf16PanelRowsOK reports whether bf16PanelRows takes rows of C values
// (C even, so that a pair never reads past a weight row).
func bf16PanelRowsOK(C int) bool { return C > 0 && C.hone_prows_ok(C.long(C)) != 0 }

// bf16PanelRows is the panel decode kernel (bf16PanelRowsOK(C)): out[n*ldo+o]
// = Σ_c x16[n][c]·w[o*C+c] for n < N, o < len(w)/C, where xp is the rounded
// activation x16 [N, C] packed by bprepackPanels (tB, n = N, k = C, all
// panels); the weight rows are read in place, 12 a tile against 32 inputs.
// native picks the AVX512-BF16 tile, else the portable one (same sums).
func bf16PanelRows(native bool, out []float32, ldo int, xp []uint32, N, C int, w []uint16) {
	rows := len(w) / C
	if rows == 0 {
		return
	}
	_, _ = out[(N-1)*ldo+rows-1], xp[bprepackWords(N, C)-1]
	C.hone_prows(cbool(native), (*C.float)(unsafe.Pointer(&out[0])), C.long(ldo), (*C.uint32_t)(unsafe.Pointer(&xp[0])), C.long(N), C.long(C),
		(*C.uint16_t)(unsafe.Pointer(&w[0])), C.long(rows))
}

// bf16RowsFunc is the decode form of the bfloat16 GEMM: out[n*ldo+o] =
// Σ_c a16[n*C+c]·w[o*C+c] for n < N, o < len(w)/C, a16 holding the
// activation already rounded (bf16RoundRows); N, C ≥ 1.
type bf16RowsFunc func(out []float32, ldo int, a16 []uint16, N, C int, w []uint16)

// bf16RowsKernel returns the decode kernel: AVX512-BF16 when native, else
// the portable loop.
func bf16RowsKernel(native bool) bf16RowsFunc {
	nat := cbool(native)
	return func(out []float32, ldo int, a16 []uint16, N, C int, w []uint16) {
		rows := len(w) / C
		if rows == 0 {
			return
		}
		_, _ = out[(N-1)*ldo+rows-1], a16[N*C-1]
		C.hone_brows(nat, (*C.float)(unsafe.Pointer(&out[0])), C.long(ldo), (*C.uint16_t)(unsafe.Pointer(&a16[0])), C.long(N), C.long(C),
			(*C.uint16_t)(unsafe.Pointer(&w[0])), C.long(rows))
	}
}

// bf16RoundRows writes x [N, C] rounded to bfloat16 into dst [N, C], with
// the AVX2 conversion where the CPU has it.
func bf16RoundRows(dst []uint16, x []float32, N, C int) {
	if N == 0 || C == 0 {
		return
	}
	_, _ = dst[N*C-1], x[N*C-1]
	C.hone_bround(C.int(cbool(bf16GEMMFastOK())), (*C.uint16_t)(unsafe.Pointer(&dst[0])), C.long(C), (*C.float)(unsafe.Pointer(&x[0])), C.long(C), C.long(N), C.long(C))
}

// bf16GEMMFastOK reports whether the CPU has AVX2, which the fast
// conversion and packing use.
func bf16GEMMFastOK() bool { return C.hone_has_avx2() != 0 }

// bf16GEMMWith is bf16GEMM with the AVX2 conversion and packing on or off
// (fast needs an AVX2 CPU; tests check both).
func bf16GEMMWith(kind bf16Kind, fast bool) bgemmFunc {
	knd, fst := C.int(kind), cbool(fast)
	return func(tB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
		C.hone_bgemm(knd, fst, cbool(tB), C.long(m), C.long(n), C.long(k),
			(*C.float)(unsafe.Pointer(&a[0])), C.long(lda), (*C.uint16_t)(unsafe.Pointer(&b[0])), C.long(ldb),
			C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.long(ldc), nil, nil, 0)
	}
}
