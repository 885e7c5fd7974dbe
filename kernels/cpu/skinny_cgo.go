//go:build cgo

package cpu

/*
#cgo CFLAGS: -O3
#include <stddef.h>

// skinny_tn: c[r*ldc + w] += Σ_t p[t*ldp + r]·q[t*ldq + w] for r < R,
// w < W, t < T — the product of a wide matrix q [T, W] with the transpose
// of a narrow one p [T, R] (a LoRA rank), summed over the long side T.

static void skinny_tn_plain(float *c, long ldc, const float *p, long ldp, const float *q, long ldq, long R, long W, long T) {
	for (long t = 0; t < T; t++)
		for (long r = 0; r < R; r++) {
			float pv = p[t * ldp + r];
			for (long w = 0; w < W; w++) c[r * ldc + w] += pv * q[t * ldq + w];
		}
}

// skinny_nt: o[t*ldo + r] = Σ_c q[t*ldq + c]·p[r*ldp + c] (+ beta·o[…] when
// beta ≠ 0) for t < T, r < R, c < K — a wide matrix q [T, K] times the
// transpose of a narrow one p [R, K].
static void skinny_nt_plain(float *o, long ldo, const float *q, long ldq, const float *p, long ldp, long T, long R, long K, float beta) {
	for (long t = 0; t < T; t++)
		for (long r = 0; r < R; r++) {
			float s = 0;
			for (long c = 0; c < K; c++) s += q[t * ldq + c] * p[r * ldp + c];
			o[t * ldo + r] = beta != 0 ? s + beta * o[t * ldo + r] : s;
		}
}

#if defined(__x86_64__)
#include <immintrin.h>

#define ST512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))

// A block of RB rows of c × 32 columns held in 2·RB vector sums: per row
// of q it loads 32 values of q and RB broadcasts of p and issues 2·RB FMAs,
// so q is read once and c once per block and chunk. The rows of q go in
// chunks of TC (skinnyChunk: about 320 KB of q), each chunk over every
// column block, with PD floats prefetched ahead along each row. Measured on
// one AMD Zen 4 core (T = 2048, R = 8; GB/s of q): W = 4864 (q 40 MB, from
// memory) 10.5 in one chunk, 18 in chunks of 16 rows with a 1 KB prefetch;
// W = 896 (q 7.3 MB) 25 in one chunk, 24.5 in chunks of 64, 21 of 16. The
// column tail is masked (masked loads do not fault past the end).
#define SKINNY_TN(NAME, RB)                                                                      \
ST512 static void NAME(float *c, long ldc, const float *p, long ldp, const float *q, long ldq, long W, long T, \
                       long TC, long PD) {                                                       \
	for (long t0 = 0; t0 < T; t0 += TC) {                                                        \
		long t1 = T - t0 < TC ? T : t0 + TC;                                                     \
		for (long w = 0; w < W; w += 32) {                                                       \
			long n = W - w;                                                                      \
			__mmask16 m0 = n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);            \
			__mmask16 m1 = n >= 32 ? (__mmask16)0xffff : n > 16 ? (__mmask16)((1u << (n - 16)) - 1) : 0; \
			__m512 a0[RB], a1[RB];                                                               \
			_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) {                              \
				a0[r] = _mm512_maskz_loadu_ps(m0, c + r * ldc + w);                              \
				a1[r] = _mm512_maskz_loadu_ps(m1, c + r * ldc + w + 16);                         \
			}                                                                                    \
			for (long t = t0; t < t1; t++) {                                                     \
				const float *qt = q + t * ldq + w, *pt = p + t * ldp;                            \
				if (w + PD < W) {                                                                \
					_mm_prefetch((const char *)(qt + PD), _MM_HINT_T0);                          \
					_mm_prefetch((const char *)(qt + PD + 16), _MM_HINT_T0);                     \
				}                                                                                \
				__m512 q0 = _mm512_maskz_loadu_ps(m0, qt), q1 = _mm512_maskz_loadu_ps(m1, qt + 16); \
				_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) {                          \
					__m512 pv = _mm512_set1_ps(pt[r]);                                           \
					a0[r] = _mm512_fmadd_ps(pv, q0, a0[r]);                                      \
					a1[r] = _mm512_fmadd_ps(pv, q1, a1[r]);                                      \
				}                                                                                \
			}                                                                                    \
			_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) {                              \
				_mm512_mask_storeu_ps(c + r * ldc + w, m0, a0[r]);                               \
				_mm512_mask_storeu_ps(c + r * ldc + w + 16, m1, a1[r]);                          \
			}                                                                                    \
		}                                                                                        \
	}                                                                                            \
}

SKINNY_TN(skinny_tn_8, 8)
SKINNY_TN(skinny_tn_4, 4)
SKINNY_TN(skinny_tn_2, 2)
SKINNY_TN(skinny_tn_1, 1)

// The rows of c in blocks of 8, then 4, 2 and 1.
ST512 static void skinny_tn_avx512(float *c, long ldc, const float *p, long ldp, const float *q, long ldq, long R, long W, long T, long TC, long PD) {
	long r = 0;
	for (; r + 8 <= R; r += 8) skinny_tn_8(c + r * ldc, ldc, p + r, ldp, q, ldq, W, T, TC, PD);
	if (r + 4 <= R) { skinny_tn_4(c + r * ldc, ldc, p + r, ldp, q, ldq, W, T, TC, PD); r += 4; }
	if (r + 2 <= R) { skinny_tn_2(c + r * ldc, ldc, p + r, ldp, q, ldq, W, T, TC, PD); r += 2; }
	if (r < R) skinny_tn_1(c + r * ldc, ldc, p + r, ldp, q, ldq, W, T, TC, PD);
}

// A tile of TB rows of q × RB rows of p held in TB·RB vector sums over all
// of K: per 16 columns it loads TB vectors of q (memory, PD floats
// prefetched ahead in each row) and RB of p (L1 or L2) and issues TB·RB
// FMAs; each sum is reduced across its lanes once at the end. The column
// tail is masked.
#define SKINNY_NT(NAME, TB, RB)                                                                 \
ST512 static void NAME(float *o, long ldo, const float *q, long ldq, const float *p, long ldp, long K, float beta, long PD) { \
	__m512 acc[TB][RB];                                                                          \
	_Pragma("GCC unroll 8") for (int i = 0; i < TB; i++)                                        \
	_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) acc[i][r] = _mm512_setzero_ps();       \
	for (long c = 0; c < K; c += 16) {                                                           \
		__mmask16 m = K - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - c)) - 1);       \
		__m512 qv[TB];                                                                           \
		_Pragma("GCC unroll 8") for (int i = 0; i < TB; i++) {                                  \
			_mm_prefetch((const char *)(q + i * ldq + c + PD), _MM_HINT_T0);                     \
			qv[i] = _mm512_maskz_loadu_ps(m, q + i * ldq + c);                                   \
		}                                                                                        \
		_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) {                                  \
			__m512 pv = _mm512_maskz_loadu_ps(m, p + r * ldp + c);                               \
			_Pragma("GCC unroll 8") for (int i = 0; i < TB; i++)                                \
				acc[i][r] = _mm512_fmadd_ps(qv[i], pv, acc[i][r]);                               \
		}                                                                                        \
	}                                                                                            \
	_Pragma("GCC unroll 8") for (int i = 0; i < TB; i++)                                        \
	_Pragma("GCC unroll 8") for (int r = 0; r < RB; r++) {                                      \
		float s = _mm512_reduce_add_ps(acc[i][r]);                                               \
		o[i * ldo + r] = beta != 0 ? s + beta * o[i * ldo + r] : s;                              \
	}                                                                                            \
}

#define SKINNY_NT_RB(TB) \
SKINNY_NT(skinny_nt_##TB##x8, TB, 8) SKINNY_NT(skinny_nt_##TB##x4, TB, 4) \
SKINNY_NT(skinny_nt_##TB##x2, TB, 2) SKINNY_NT(skinny_nt_##TB##x1, TB, 1)
SKINNY_NT_RB(3) SKINNY_NT_RB(2) SKINNY_NT_RB(1)

typedef void (*skinny_nt_tile)(float *, long, const float *, long, const float *, long, long, float, long);
// [TB-1][0: 8 rows of p, 1: 4, 2: 2, 3: 1]
static const skinny_nt_tile skinny_nt_tiles[3][4] = {
	{skinny_nt_1x8, skinny_nt_1x4, skinny_nt_1x2, skinny_nt_1x1},
	{skinny_nt_2x8, skinny_nt_2x4, skinny_nt_2x2, skinny_nt_2x1},
	{skinny_nt_3x8, skinny_nt_3x4, skinny_nt_3x2, skinny_nt_3x1},
};

// Rows of q three at a time, each against the rows of p in blocks of 8,
// then 4, 2 and 1 (p stays in cache while q streams once per 8 rows of p).
ST512 static void skinny_nt_avx512(float *o, long ldo, const float *q, long ldq, const float *p, long ldp, long T, long R, long K, float beta, long PD) {
	for (long t = 0; t < T; t += 3) {
		int tb = T - t < 3 ? (int)(T - t) : 3;
		long r = 0;
		while (r < R) {
			int k = R - r >= 8 ? 0 : R - r >= 4 ? 1 : R - r >= 2 ? 2 : 3;
			skinny_nt_tiles[tb - 1][k](o + t * ldo + r, ldo, q + t * ldq, ldq, p + r * ldp, ldp, K, beta, PD);
			r += 8 >> k;
		}
	}
}
#else
#define skinny_nt_avx512(o, ldo, q, ldq, p, ldp, T, R, K, beta, PD) skinny_nt_plain(o, ldo, q, ldq, p, ldp, T, R, K, beta)
#define skinny_tn_avx512(c, ldc, p, ldp, q, ldq, R, W, T, TC, PD) skinny_tn_plain(c, ldc, p, ldp, q, ldq, R, W, T)
#endif

static void skinny_tn(float *c, long ldc, const float *p, long ldp, const float *q, long ldq, long R, long W, long T, int level, long TC, long PD) {
	if (level == 2) skinny_tn_avx512(c, ldc, p, ldp, q, ldq, R, W, T, TC, PD);
	else skinny_tn_plain(c, ldc, p, ldp, q, ldq, R, W, T);
}

static void skinny_nt(float *o, long ldo, const float *q, long ldq, const float *p, long ldp, long T, long R, long K, float beta, int level, long PD) {
	if (level == 2) skinny_nt_avx512(o, ldo, q, ldq, p, ldp, T, R, K, beta, PD);
	else skinny_nt_plain(o, ldo, q, ldq, p, ldp, T, R, K, beta);
}
*/
import "C"

import "unsafe"

// skinnyPD is how far ahead, in floats, the skinny kernels prefetch along
// a row of their big operand (1 KB).
const skinnyPD = 256

// skinnyTN: c[r*ldc+w] += Σ_t p[t*ldp+r]·q[t*ldq+w] for r < R, w < W,
// t < T, in C (AVX-512 where the rows kernels have it: f.rows = 2, else
// plain C); R, W, T ≥ 1. The loop it must equal is skinnyTNGo.
func (f features) skinnyTN(c []float32, ldc int, p []float32, ldp int, q []float32, ldq, R, W, T int) {
	_, _, _ = c[(R-1)*ldc+W-1], p[(T-1)*ldp+R-1], q[(T-1)*ldq+W-1]
	C.skinny_tn((*C.float)(unsafe.Pointer(&c[0])), C.long(ldc), (*C.float)(unsafe.Pointer(&p[0])), C.long(ldp),
		(*C.float)(unsafe.Pointer(&q[0])), C.long(ldq), C.long(R), C.long(W), C.long(T), C.int(f.rows), C.long(skinnyChunk(ldq)), C.long(skinnyPD))
}

// skinnyNT: o[t*ldo+r] = Σ_c q[t*ldq+c]·p[r*ldp+c] (+ beta·o[t*ldo+r] when
// beta ≠ 0) for t < T, r < R, c < K, in C (AVX-512 where f.rows = 2, else
// plain C); T, R, K ≥ 1. The loop it must equal is skinnyNTGo.
func (f features) skinnyNT(o []float32, ldo int, q []float32, ldq int, p []float32, ldp, T, R, K int, beta float32) {
	_, _, _ = o[(T-1)*ldo+R-1], q[(T-1)*ldq+K-1], p[(R-1)*ldp+K-1]
	C.skinny_nt((*C.float)(unsafe.Pointer(&o[0])), C.long(ldo), (*C.float)(unsafe.Pointer(&q[0])), C.long(ldq),
		(*C.float)(unsafe.Pointer(&p[0])), C.long(ldp), C.long(T), C.long(R), C.long(K), C.float(beta), C.int(f.rows), C.long(skinnyPD))
}
