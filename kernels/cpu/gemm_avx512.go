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
#define NC 2048

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

// pack_a: rows [i0, i0+mc) × cols [p0, p0+kc) of op(A) into MR-row panels [kc][MR].
static void pack_a(float *dst, const float *a, long lda, int tA, long i0, long mc, long p0, long kc) {
	for (long ir = 0; ir < mc; ir += MR) {
		long mr = mc - ir < MR ? mc - ir : MR;
		for (long p = 0; p < kc; p++) {
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
static void pack_b(float *dst, const float *b, long ldb, int tB, long p0, long kc, long j0, long nc) {
	for (long jr = 0; jr < nc; jr += NR) {
		long nr = nc - jr < NR ? nc - jr : NR;
		for (long p = 0; p < kc; p++) {
			long pp = p0 + p;
			if (!tB && nr == NR) {
				memcpy(dst + p * NR, b + pp * ldb + j0 + jr, NR * sizeof(float));
				continue;
			}
			for (long j = 0; j < nr; j++) {
				long jj = j0 + jr + j;
				dst[p * NR + j] = tB ? b[jj * ldb + pp] : b[pp * ldb + jj];
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

static void hone_sgemm_avx512(int tA, int tB, long m, long n, long k, float alpha, const float *a, long lda,
                              const float *b, long ldb, float beta, float *c, long ldc) {
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
			pack_b(packB, b, ldb, tB, pc, kc, jc, nc);
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
#else
static void hone_sgemm_avx512(int tA, int tB, long m, long n, long k, float alpha, const float *a, long lda,
                              const float *b, long ldb, float beta, float *c, long ldc) { abort(); }
#endif
*/
import "C"

import "unsafe"

// avx512 is the built-in AVX-512 GEMM, nil when the CPU lacks AVX-512F.
var avx512 sgemmFunc

func init() {
	if C.hone_has_avx512() != 0 {
		avx512 = avx512Sgemm
	}
}

// avx512Sgemm runs the C kernel above on one thread (sgemm splits large
// products over the workers). Slices are non-empty and k > 0.
func avx512Sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	C.hone_sgemm_avx512(cbool(tA), cbool(tB), C.long(m), C.long(n), C.long(k), C.float(alpha),
		(*C.float)(unsafe.Pointer(&a[0])), C.long(lda), (*C.float)(unsafe.Pointer(&b[0])), C.long(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.long(ldc))
}

func cbool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}
