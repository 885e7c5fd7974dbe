//go:build cgo

package cpu

/*
#cgo CFLAGS: -O3
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// A blocked SGEMM (the Goto/BLIS scheme) with an AVX-512 8×32 micro-kernel:
// row-major C[m,n] = alpha·op(A)·op(B) + beta·C, one thread. B is packed
// in KC×NR panels, A in MR×KC panels (zero-padded at the edges), so the
// micro-kernel reads both contiguously: per k, two 16-float loads of B,
// eight broadcasts of A and sixteen FMAs into 16 zmm accumulators.
// It exists because OpenBLAS 0.3.21 does not recognise newer CPUs (it falls
// back to its SSE3 "Prescott" kernels when OPENBLAS_CORETYPE is unset).

#define MR 8
#define NR 32
#define KC 256
#define MC 128
#define NC 4096

static int hone_has_avx512(void) {
#if defined(__x86_64__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f");
#else
	return 0;
#endif
}

#if defined(__x86_64__)
#include <immintrin.h>

static __thread float *packA, *packB;

// tr8x8 writes the transpose of an 8×8 block: dst[r*ldd + c] = src[c*lds + r].
// Packing a transposed operand one float at a time cost up to a tenth of a
// GEMM with a narrow output; eight 8-wide loads and shuffles do it in ~24
// vector operations.
__attribute__((target("avx2")))
static inline void tr8x8_rows(__m256 r0, __m256 r1, __m256 r2, __m256 r3, __m256 r4, __m256 r5, __m256 r6, __m256 r7, float *dst, long ldd) {
	__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
	__m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5), t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
	__m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE), s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
	__m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE), s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
	_mm256_storeu_ps(dst, _mm256_permute2f128_ps(s0, s4, 0x20));
	_mm256_storeu_ps(dst + ldd, _mm256_permute2f128_ps(s1, s5, 0x20));
	_mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(s2, s6, 0x20));
	_mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(s3, s7, 0x20));
	_mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(s0, s4, 0x31));
	_mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(s1, s5, 0x31));
	_mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(s2, s6, 0x31));
	_mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(s3, s7, 0x31));
}

__attribute__((target("avx2")))
static inline void tr8x8(const float *src, long lds, float *dst, long ldd) {
	tr8x8_rows(_mm256_loadu_ps(src), _mm256_loadu_ps(src + lds), _mm256_loadu_ps(src + 2 * lds), _mm256_loadu_ps(src + 3 * lds),
	           _mm256_loadu_ps(src + 4 * lds), _mm256_loadu_ps(src + 5 * lds), _mm256_loadu_ps(src + 6 * lds), _mm256_loadu_ps(src + 7 * lds), dst, ldd);
}

// widen8 loads 8 bfloat16 values as floats (the bits shifted into the high half).
__attribute__((target("avx2")))
static inline __m256 widen8(const uint16_t *p) {
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

static inline float bf16f(uint16_t h) {
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

// tr8x8_bf16 is tr8x8 reading bfloat16 rows.
__attribute__((target("avx2")))
static inline void tr8x8_bf16(const uint16_t *src, long lds, float *dst, long ldd) {
	tr8x8_rows(widen8(src), widen8(src + lds), widen8(src + 2 * lds), widen8(src + 3 * lds),
	           widen8(src + 4 * lds), widen8(src + 5 * lds), widen8(src + 6 * lds), widen8(src + 7 * lds), dst, ldd);
}

// pack_a: rows [i0, i0+mc) × cols [p0, p0+kc) of op(A) into MR-row panels [kc][MR].
__attribute__((target("avx2")))
static void pack_a(float *dst, const float *a, long lda, int tA, long i0, long mc, long p0, long kc) {
	for (long ir = 0; ir < mc; ir += MR) {
		long mr = mc - ir < MR ? mc - ir : MR;
		long p = 0;
		if (!tA && mr == MR) {
			const float *src = a + (i0 + ir) * lda + p0;
			for (; p + 8 <= kc; p += 8) tr8x8(src + p, lda, dst + p * MR, MR);
		}
		for (; p < kc; p++) {
			for (long i = 0; i < mr; i++) {
				long ii = i0 + ir + i, pp = p0 + p;
				dst[p * MR + i] = tA ? a[pp * lda + ii] : a[ii * lda + pp];
			}
			for (long i = mr; i < MR; i++) dst[p * MR + i] = 0;
		}
		dst += kc * MR;
	}
}

// pack_b: rows [p0, p0+kc) × cols [j0, j0+nc) of op(B) into NR-column panels [kc][NR].
// B is b, or, when b16 is not NULL, the bfloat16 matrix b16 (same layout),
// widened as it is packed: the panels are those of the widened matrix, so
// results are bit-identical to widening B first, without a float32 copy.
__attribute__((target("avx2")))
static void pack_b(float *dst, const float *b, const uint16_t *b16, long ldb, int tB, long p0, long kc, long j0, long nc) {
	for (long jr = 0; jr < nc; jr += NR) {
		long nr = nc - jr < NR ? nc - jr : NR;
		long p = 0;
		if (tB && nr == NR) {
			long off = (j0 + jr) * ldb + p0;
			for (; p + 8 <= kc; p += 8)
				for (int g = 0; g < NR; g += 8) {
					if (b16)
						tr8x8_bf16(b16 + off + g * ldb + p, ldb, dst + p * NR + g, NR);
					else
						tr8x8(b + off + g * ldb + p, ldb, dst + p * NR + g, NR);
				}
		}
		for (; p < kc; p++) {
			long pp = p0 + p;
			if (!tB && nr == NR) {
				long off = pp * ldb + j0 + jr;
				if (b16)
					for (int g = 0; g < NR; g += 8) _mm256_storeu_ps(dst + p * NR + g, widen8(b16 + off + g));
				else
					memcpy(dst + p * NR, b + off, NR * sizeof(float));
				continue;
			}
			for (long j = 0; j < nr; j++) {
				long jj = j0 + jr + j, at = tB ? jj * ldb + pp : pp * ldb + jj;
				dst[p * NR + j] = b16 ? bf16f(b16[at]) : b[at];
			}
			for (long j = nr; j < NR; j++) dst[p * NR + j] = 0;
		}
		dst += kc * NR;
	}
}

// kernel: C tile [mr, nr] += alpha·Ap [kc][MR] · Bp [kc][NR].
__attribute__((target("avx512f")))
static void kernel(long kc, const float *Ap, const float *Bp, float *c, long ldc, long mr, long nr, float alpha) {
	__m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps(), c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps();
	__m512 c20 = _mm512_setzero_ps(), c21 = _mm512_setzero_ps(), c30 = _mm512_setzero_ps(), c31 = _mm512_setzero_ps();
	__m512 c40 = _mm512_setzero_ps(), c41 = _mm512_setzero_ps(), c50 = _mm512_setzero_ps(), c51 = _mm512_setzero_ps();
	__m512 c60 = _mm512_setzero_ps(), c61 = _mm512_setzero_ps(), c70 = _mm512_setzero_ps(), c71 = _mm512_setzero_ps();
	// Fetch the C tile now so that its cache and TLB misses overlap the
	// k loop: C rows of a large product sit in different pages, and
	// waiting for them at the end cost about a sixth of the GEMM's time.
	for (long i = 0; i < mr; i++) {
		_mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
		_mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
	}
	for (long p = 0; p < kc; p++) {
		__m512 b0 = _mm512_loadu_ps(Bp), b1 = _mm512_loadu_ps(Bp + 16);
		__m512 a;
		a = _mm512_set1_ps(Ap[0]); c00 = _mm512_fmadd_ps(a, b0, c00); c01 = _mm512_fmadd_ps(a, b1, c01);
		a = _mm512_set1_ps(Ap[1]); c10 = _mm512_fmadd_ps(a, b0, c10); c11 = _mm512_fmadd_ps(a, b1, c11);
		a = _mm512_set1_ps(Ap[2]); c20 = _mm512_fmadd_ps(a, b0, c20); c21 = _mm512_fmadd_ps(a, b1, c21);
		a = _mm512_set1_ps(Ap[3]); c30 = _mm512_fmadd_ps(a, b0, c30); c31 = _mm512_fmadd_ps(a, b1, c31);
		a = _mm512_set1_ps(Ap[4]); c40 = _mm512_fmadd_ps(a, b0, c40); c41 = _mm512_fmadd_ps(a, b1, c41);
		a = _mm512_set1_ps(Ap[5]); c50 = _mm512_fmadd_ps(a, b0, c50); c51 = _mm512_fmadd_ps(a, b1, c51);
		a = _mm512_set1_ps(Ap[6]); c60 = _mm512_fmadd_ps(a, b0, c60); c61 = _mm512_fmadd_ps(a, b1, c61);
		a = _mm512_set1_ps(Ap[7]); c70 = _mm512_fmadd_ps(a, b0, c70); c71 = _mm512_fmadd_ps(a, b1, c71);
		Ap += MR;
		Bp += NR;
	}
	float t[MR * NR];
	__m512 al = _mm512_set1_ps(alpha);
	__m512 acc[16] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71};
	if (mr == MR && nr == NR) {
		for (int i = 0; i < MR; i++) {
			float *ci = c + i * ldc;
			_mm512_storeu_ps(ci, _mm512_fmadd_ps(al, acc[2 * i], _mm512_loadu_ps(ci)));
			_mm512_storeu_ps(ci + 16, _mm512_fmadd_ps(al, acc[2 * i + 1], _mm512_loadu_ps(ci + 16)));
		}
		return;
	}
	for (int i = 0; i < MR; i++) {
		_mm512_storeu_ps(t + i * NR, acc[2 * i]);
		_mm512_storeu_ps(t + i * NR + 16, acc[2 * i + 1]);
	}
	for (long i = 0; i < mr; i++)
		for (long j = 0; j < nr; j++) c[i * ldc + j] += alpha * t[i * NR + j];
}

static __thread float *swapT;
static __thread long swapLen;

// hone_sgemm_avx512 reads B from b, or, when b16 is not NULL, from the
// bfloat16 matrix b16 (same layout and ldb), widened while packing.
static void hone_sgemm_avx512(int tA, int tB, long m, long n, long k, float alpha, const float *a, long lda,
                              const float *b, const uint16_t *b16, long ldb, float beta, float *c, long ldc) {
	// A narrow C (LoRA's rank-r products: n = r, m in the thousands) would
	// fill a quarter of each 32-wide tile. Computing Cᵀ = op(B)ᵀ·op(A)ᵀ
	// instead puts the long side across the tiles, and op(A)'s big operand
	// is then packed as B, with the vector transpose. (Not with a bfloat16
	// B, which would become the A operand: weight products are wide.)
	if (!b16 && n < NR / 2 && m >= 4 * NR) {
		if (swapLen < m * n) {
			free(swapT);
			swapT = aligned_alloc(64, (size_t)m * n * sizeof(float));
			if (!swapT) abort();
			swapLen = m * n;
		}
		hone_sgemm_avx512(!tB, !tA, n, m, k, alpha, b, ldb, a, NULL, lda, 0, swapT, m);
		for (long i = 0; i < m; i++)
			for (long j = 0; j < n; j++)
				c[i * ldc + j] = beta == 0 ? swapT[j * m + i] : swapT[j * m + i] + beta * c[i * ldc + j];
		return;
	}
	if (!packA) {
		packA = aligned_alloc(64, (size_t)MC * KC * sizeof(float));
		packB = aligned_alloc(64, (size_t)NC * KC * sizeof(float));
	}
	if (beta == 0) {
		for (long i = 0; i < m; i++) memset(c + i * ldc, 0, n * sizeof(float));
	} else if (beta != 1) {
		for (long i = 0; i < m; i++)
			for (long j = 0; j < n; j++) c[i * ldc + j] *= beta;
	}
	for (long jc = 0; jc < n; jc += NC) {
		long nc = n - jc < NC ? n - jc : NC;
		for (long pc = 0; pc < k; pc += KC) {
			long kc = k - pc < KC ? k - pc : KC;
			pack_b(packB, b, b16, ldb, tB, pc, kc, jc, nc);
			for (long ic = 0; ic < m; ic += MC) {
				long mc = m - ic < MC ? m - ic : MC;
				pack_a(packA, a, lda, tA, ic, mc, pc, kc);
				for (long jr = 0; jr < nc; jr += NR) {
					long nr = nc - jr < NR ? nc - jr : NR;
					for (long ir = 0; ir < mc; ir += MR) {
						long mr = mc - ir < MR ? mc - ir : MR;
						kernel(kc, packA + ir * kc, packB + jr * kc, c + (ic + ir) * ldc + jc + jr, ldc, mr, nr, alpha);
					}
				}
			}
		}
	}
}
// ---- vectorised element-wise kernels (same algorithm as exp32 in exp.go) ----

// exp16: e^x for 16 lanes, x ≤ 0 expected; 0 below −87 (as exp32).
__attribute__((target("avx512f")))
static inline __m512 exp16(__m512 x) {
	__m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.4426950408889634f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693145751953125f), x);
	r = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.428606765330187045e-06f), r);
	__m512 p = _mm512_set1_ps(1.0f / 720);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	__m512 e = _mm512_scalef_ps(p, k);
	__mmask16 lo = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
	return _mm512_mask_blend_ps(lo, e, _mm512_setzero_ps());
}

// sigmoid16: σ(g) through e^(−|g|) (never overflows).
__attribute__((target("avx512f")))
static inline __m512 sigmoid16(__m512 g) {
	__m512 ag = _mm512_abs_ps(g);
	__m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), ag));
	__m512 one = _mm512_set1_ps(1.0f);
	__m512 inv = _mm512_div_ps(one, _mm512_add_ps(one, e));
	__mmask16 neg = _mm512_cmp_ps_mask(g, _mm512_setzero_ps(), _CMP_LT_OQ);
	return _mm512_mask_mul_ps(inv, neg, e, inv); // g < 0: e/(1+e)
}

__attribute__((target("avx512f")))
static void hone_swiglu_fwd(float *out, const float *gate, const float *up, long n) {
	long i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 g = _mm512_loadu_ps(gate + i);
		_mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_mul_ps(g, sigmoid16(g)), _mm512_loadu_ps(up + i)));
	}
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		__m512 g = _mm512_maskz_loadu_ps(m, gate + i);
		_mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_mul_ps(g, sigmoid16(g)), _mm512_maskz_loadu_ps(m, up + i)));
	}
}

// dgate += d·u·s·(1 + g·(1 − s)),  dup += d·g·s
__attribute__((target("avx512f")))
static void hone_swiglu_bwd(float *dgate, float *dup, const float *dout, const float *gate, const float *up, long n) {
	__m512 one = _mm512_set1_ps(1.0f);
	for (long i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 g = _mm512_maskz_loadu_ps(m, gate + i), d = _mm512_maskz_loadu_ps(m, dout + i), u = _mm512_maskz_loadu_ps(m, up + i);
		__m512 s = sigmoid16(g);
		__m512 ds = _mm512_mul_ps(d, s);
		__m512 f = _mm512_fmadd_ps(g, _mm512_sub_ps(one, s), one);
		_mm512_mask_storeu_ps(dgate + i, m, _mm512_fmadd_ps(_mm512_mul_ps(ds, u), f, _mm512_maskz_loadu_ps(m, dgate + i)));
		_mm512_mask_storeu_ps(dup + i, m, _mm512_fmadd_ps(ds, g, _mm512_maskz_loadu_ps(m, dup + i)));
	}
}

// hone_row_max returns the largest of x[0..n) that is not NaN (−Inf for
// none), n > 0. vmaxps gives its second operand when either is NaN: with
// the running max second, a NaN entry leaves it as it is (first, a NaN
// would replace it, and the next entry would replace the NaN).
__attribute__((target("avx512f")))
static float hone_row_max(const float *x, long n) {
	__m512 mx = _mm512_set1_ps(-__builtin_inff());
	for (long i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
		mx = _mm512_mask_max_ps(mx, m, _mm512_maskz_loadu_ps(m, x + i), mx);
	}
	return _mm512_reduce_max_ps(mx);
}

// hone_exp_sums: s = Σ e^(x−mu), t = Σ e^(x−mu)·(x−mu), 16 float lanes
// summed in double at the end.
__attribute__((target("avx512f")))
static void hone_exp_sums(const float *x, long n, float mu, double *s, double *t) {
	__m512 vs = _mm512_setzero_ps(), vt = _mm512_setzero_ps(), vm = _mm512_set1_ps(mu);
	for (long i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm);
		__m512 e = _mm512_maskz_mov_ps(m, exp16(d));
		vs = _mm512_add_ps(vs, e);
		vt = _mm512_fmadd_ps(e, _mm512_maskz_mov_ps(m, d), vt);
	}
	float a[16], b[16];
	_mm512_storeu_ps(a, vs);
	_mm512_storeu_ps(b, vt);
	double ss = 0, tt = 0;
	for (int i = 0; i < 16; i++) { ss += a[i]; tt += b[i]; }
	*s = ss;
	*t = tt;
}

// hone_exp_shift: dst[i] = e^((x[i]−mu)·scale), returning Σ dst summed in
// double (two lanes of 8 per 16 values), so that a 151,936-entry row loses
// nothing to float32 accumulation. dst may be x, or NULL for the sum alone.
__attribute__((target("avx512f")))
static double hone_exp_shift(float *dst, const float *x, long n, float mu, float scale) {
	__m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
	__m512 vm = _mm512_set1_ps(mu), vs = _mm512_set1_ps(scale);
	for (long i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 e = _mm512_maskz_mov_ps(m, exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm), vs)));
		if (dst) _mm512_mask_storeu_ps(dst + i, m, e);
		s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
		s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
	}
	return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}

// hone_logprob_grad: row[j] = −dl·p − de·p·(lp + H), lp = row[j] − l, p = e^lp.
__attribute__((target("avx512f")))
static void hone_logprob_grad(float *row, long n, float l, float dl, float de, float H) {
	__m512 vl = _mm512_set1_ps(l), vdl = _mm512_set1_ps(dl), vde = _mm512_set1_ps(de), vH = _mm512_set1_ps(H);
	for (long i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 lp = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, row + i), vl);
		__m512 p = exp16(lp);
		__m512 g = _mm512_fmadd_ps(vde, _mm512_add_ps(lp, vH), vdl); // dl + de·(lp+H)
		_mm512_mask_storeu_ps(row + i, m, _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(p, g)));
	}
}

// RMSNorm rows, as RMSNormForward's and RMSNormBackward's Go loops compute
// them: the products in float, the sums of squares and dots in double (8
// double lanes each for the low and the high half of 16 floats, summed at
// the end: another order than the Go loop's, so rstd may move in its last
// bit), every other value one float operation at a time in the Go loop's
// order, not contracted into FMAs.
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

// hone_rms_fwd: for n rows of C values, rstd = 1/sqrt(Σx²/C + eps) and
// out = x·rstd·w.
__attribute__((target("avx512f")))
static void hone_rms_fwd(float *out, float *rstd, const float *x, const float *w, long n, long C, float eps) {
	for (long i = 0; i < n; i++) {
		const float *xi = x + i * C;
		float *oi = out + i * C;
		__m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
		for (long c = 0; c < C; c += 16) {
			__mmask16 m = C - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (C - c)) - 1);
			__m512 v = _mm512_maskz_loadu_ps(m, xi + c);
			__m512 q = _mm512_mul_ps(v, v);
			s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(q)));
			s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(q), 1))));
		}
		double ss = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
		float r = (float)(1 / __builtin_sqrt(ss / (double)C + (double)eps));
		rstd[i] = r;
		__m512 vr = _mm512_set1_ps(r);
		for (long c = 0; c < C; c += 16) {
			__mmask16 m = C - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (C - c)) - 1);
			__m512 v = _mm512_maskz_loadu_ps(m, xi + c);
			_mm512_mask_storeu_ps(oi + c, m, _mm512_mul_ps(_mm512_mul_ps(v, vr), _mm512_maskz_loadu_ps(m, w + c)));
		}
	}
}

// hone_rms_bwd: for n rows, m = (Σ d·w·x)·r/C·r and dinp += r·(d·w − x·m).
__attribute__((target("avx512f")))
static void hone_rms_bwd(float *dinp, const float *dout, const float *rstd, const float *x, const float *w, long n, long C) {
	for (long i = 0; i < n; i++) {
		const float *xi = x + i * C, *di = dout + i * C;
		float *gi = dinp + i * C;
		float r = rstd[i];
		__m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
		for (long c = 0; c < C; c += 16) {
			__mmask16 m = C - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (C - c)) - 1);
			__m512 q = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, di + c), _mm512_maskz_loadu_ps(m, w + c)),
			                         _mm512_maskz_loadu_ps(m, xi + c));
			s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(q)));
			s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(q), 1))));
		}
		double dot = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
		float mm = (float)(dot * (double)r / (double)C) * r;
		__m512 vr = _mm512_set1_ps(r), vm = _mm512_set1_ps(mm);
		for (long c = 0; c < C; c += 16) {
			__mmask16 m = C - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (C - c)) - 1);
			__m512 dw = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, di + c), _mm512_maskz_loadu_ps(m, w + c));
			__m512 xm = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, xi + c), vm);
			__m512 g = _mm512_mul_ps(vr, _mm512_sub_ps(dw, xm));
			_mm512_mask_storeu_ps(gi + c, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, gi + c), g));
		}
	}
}
#pragma GCC pop_options
#else
static void hone_sgemm_avx512(int tA, int tB, long m, long n, long k, float alpha, const float *a, long lda,
                              const float *b, const uint16_t *b16, long ldb, float beta, float *c, long ldc) { abort(); }
static void hone_swiglu_fwd(float *out, const float *gate, const float *up, long n) { abort(); }
static void hone_swiglu_bwd(float *dgate, float *dup, const float *dout, const float *gate, const float *up, long n) { abort(); }
static float hone_row_max(const float *x, long n) { abort(); }
static void hone_exp_sums(const float *x, long n, float mu, double *s, double *t) { abort(); }
static void hone_logprob_grad(float *row, long n, float l, float dl, float de, float H) { abort(); }
static double hone_exp_shift(float *dst, const float *x, long n, float mu, float scale) { abort(); }
static void hone_rms_fwd(float *out, float *rstd, const float *x, const float *w, long n, long C, float eps) { abort(); }
static void hone_rms_bwd(float *dinp, const float *dout, const float *rstd, const float *x, const float *w, long n, long C) { abort(); }
#endif
*/
import "C"

import "unsafe"

// hasAVX512 reports whether the CPU has AVX-512F, which the built-in GEMM
// and the vectorised element-wise kernels need.
func hasAVX512() bool { return C.hone_has_avx512() != 0 }

// avx512GEMM returns the built-in AVX-512 GEMM and its form reading a
// bfloat16 B. Only for a CPU with AVX-512F (hasAVX512).
func avx512GEMM() (sgemmFunc, sgemmB16Func) { return avx512Sgemm, avx512SgemmB16 }

// avx512Vec returns the AVX-512 element-wise kernels: the exp-heavy loops
// (SwiGLU, the vocabulary softmax) run ~5× faster than exp32 one value at
// a time. Only for a CPU with AVX-512F (hasAVX512).
func avx512Vec() vecKernels {
	return vecKernels{
		swigluFwd: func(out, gate, up []float32) {
			if len(out) > 0 {
				C.hone_swiglu_fwd(fp(out), fp(gate), fp(up), C.long(len(out)))
			}
		},
		swigluBwd: func(dgate, dup, dout, gate, up []float32) {
			if len(dgate) > 0 {
				C.hone_swiglu_bwd(fp(dgate), fp(dup), fp(dout), fp(gate), fp(up), C.long(len(dgate)))
			}
		},
		rowMax: func(x []float32) float32 { return float32(C.hone_row_max(fp(x), C.long(len(x)))) },
		expSums: func(x []float32, mu float32) (float64, float64) {
			var s, t C.double
			C.hone_exp_sums(fp(x), C.long(len(x)), C.float(mu), &s, &t)
			return float64(s), float64(t)
		},
		logprobGrad: func(row []float32, l, dl, de, H float32) {
			C.hone_logprob_grad(fp(row), C.long(len(row)), C.float(l), C.float(dl), C.float(de), C.float(H))
		},
		expShift: func(dst, x []float32, mu, scale float32) float64 {
			var d *C.float
			if dst != nil {
				d = fp(dst)
			}
			return float64(C.hone_exp_shift(d, fp(x), C.long(len(x)), C.float(mu), C.float(scale)))
		},
		rmsFwd: func(out, rstd, x, w []float32, C int, eps float32) {
			if n := len(rstd); n > 0 && C > 0 {
				_, _, _ = out[n*C-1], x[n*C-1], w[C-1]
				C.hone_rms_fwd(fp(out), fp(rstd), fp(x), fp(w), C.long(n), C.long(C), C.float(eps))
			}
		},
		rmsBwd: func(dinp, dout, rstd, x, w []float32, C int) {
			if n := len(rstd); n > 0 && C > 0 {
				_, _, _, _ = dinp[n*C-1], dout[n*C-1], x[n*C-1], w[C-1]
				C.hone_rms_bwd(fp(dinp), fp(dout), fp(rstd), fp(x), fp(w), C.long(n), C.long(C))
			}
		},
	}
}

// fp is the C pointer to x[0] (len(x) > 0).
func fp(x []float32) *C.float { return (*C.float)(unsafe.Pointer(&x[0])) }

// avx512Sgemm runs the C kernel above on one thread (sgemm splits large
// products over the workers). Slices are non-empty and k > 0.
func avx512Sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	C.hone_sgemm_avx512(cbool(tA), cbool(tB), C.long(m), C.long(n), C.long(k), C.float(alpha),
		(*C.float)(unsafe.Pointer(&a[0])), C.long(lda), (*C.float)(unsafe.Pointer(&b[0])), nil, C.long(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.long(ldc))
}

// avx512SgemmB16 is avx512Sgemm with a bfloat16 B, widened as it is packed.
func avx512SgemmB16(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	C.hone_sgemm_avx512(cbool(tA), cbool(tB), C.long(m), C.long(n), C.long(k), C.float(alpha),
		(*C.float)(unsafe.Pointer(&a[0])), C.long(lda), nil, (*C.uint16_t)(unsafe.Pointer(&b[0])), C.long(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.long(ldc))
}

func cbool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}
