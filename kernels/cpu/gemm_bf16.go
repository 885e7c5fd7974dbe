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
// row-major C[m,n] = op(B)-product of A[m,k] (float32, rounded to bfloat16
// nearest-even as it is packed) and B (bfloat16 bits), float32 accumulation:
//
//	C = A·Bᵀ + beta·C   (tB: B is [n,k], a linear layer's weight [OC,C])
//	C = A·B  + beta·C   (!tB: B is [k,n], the same weight in LinearBackward)
//
// beta is 0 (C overwritten, old contents ignored) or 1. k is consumed in
// pairs, as vdpbf16ps does: lane j of a 16-float accumulator gains
// a[2p+1]·b[2p+1][j] then a[2p]·b[2p][j]. Packed operands interleave those
// pairs: A in MR-row panels of 32-bit words [kc/2][MR] (the pair of row i),
// B in NR-column panels [kc/2][NR] (the pair of column j); an odd k is
// padded with a zero pair half.
//
// Two micro-kernels read the same packed panels:
//   - native: AVX512-BF16, MR×NR = 12×32 in 24 zmm accumulators, per k pair
//     two 64-byte loads of B, twelve 32-bit broadcasts of A, 24 vdpbf16ps;
//   - portable: the same arithmetic in plain C (two fmaf per pair, the odd
//     half first, as the instruction does), for CPUs without AVX512-BF16.
//     It is the tested stand-in: the packing, blocking and edge handling it
//     shares with the native kernel are checked on any CPU. It does not
//     flush denormals as vdpbf16ps does (inputs below 2⁻¹²⁶ count as zero
//     there), which no tolerance here can see.

#define BMR 12
#define BNR 32
#define BKC 512   // k per block (256 pairs): A panel 12 KB, B panel 32 KB
#define BMC 96    // rows of A per block: 96 KB packed, in L2
#define BNC 1024  // columns of B per block: 1 MB packed

static int hone_has_avx512bf16(void) {
#if defined(__x86_64__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16");
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

// bpack_a: rows [i0, i0+mc) × k [p0, p0+kc) of A into BMR-row panels of
// pairs [kcp][BMR] (kcp = (kc+1)/2), rounding to bfloat16; rows past mc and
// a k past kc are zero.
static void bpack_a(uint32_t *dst, const float *a, long lda, long i0, long mc, long p0, long kc) {
	long kcp = (kc + 1) / 2;
	for (long ir = 0; ir < mc; ir += BMR) {
		long mr = mc - ir < BMR ? mc - ir : BMR;
		for (long i = 0; i < BMR; i++) {
			if (i >= mr) {
				for (long q = 0; q < kcp; q++) dst[q * BMR + i] = 0;
				continue;
			}
			const float *src = a + (i0 + ir + i) * lda + p0;
			long q = 0;
			for (; 2 * q + 1 < kc; q++)
				dst[q * BMR + i] = (uint32_t)bf16r(src[2 * q]) | (uint32_t)bf16r(src[2 * q + 1]) << 16;
			if (q < kcp) dst[q * BMR + i] = (uint32_t)bf16r(src[2 * q]);
		}
		dst += kcp * BMR;
	}
}

// bpack_b: k [p0, p0+kc) × columns [j0, j0+nc) of op(B) into BNR-column
// panels of pairs [kcp][BNR]; columns past nc and a k past kc are zero.
// tB (B [n,k]): the pair of column j is two adjacent bfloat16 of row j, one
// 32-bit word. !tB (B [k,n]): it interleaves rows 2q and 2q+1.
static void bpack_b(uint32_t *dst, const uint16_t *b, long ldb, int tB, long p0, long kc, long j0, long nc) {
	long kcp = (kc + 1) / 2;
	for (long jr = 0; jr < nc; jr += BNR) {
		long nr = nc - jr < BNR ? nc - jr : BNR;
		if (tB) {
			for (long j = 0; j < nr; j++) {
				const uint16_t *src = b + (j0 + jr + j) * ldb + p0;
				long q = 0;
				for (; 2 * q + 1 < kc; q++) {
					uint32_t w;
					memcpy(&w, src + 2 * q, sizeof w);
					dst[q * BNR + j] = w;
				}
				if (q < kcp) dst[q * BNR + j] = src[2 * q];
			}
		} else {
			for (long q = 0; q < kcp; q++) {
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
		dst += kcp * BNR;
	}
}

// bstore adds (or, first, writes) the tile t [BMR][BNR] into C's mr×nr corner.
static inline void bstore(const float *t, float *c, long ldc, long mr, long nr, int overwrite) {
	for (long i = 0; i < mr; i++) {
		float *ci = c + i * ldc;
		const float *ti = t + i * BNR;
		if (overwrite)
			for (long j = 0; j < nr; j++) ci[j] = ti[j];
		else
			for (long j = 0; j < nr; j++) ci[j] += ti[j];
	}
}

// bkernel_portable: t [BMR][BNR] = Ap [kcp][BMR] · Bp [kcp][BNR] in pairs.
static void bkernel_portable(long kcp, const uint32_t *Ap, const uint32_t *Bp, float *t) {
	for (long x = 0; x < BMR * BNR; x++) t[x] = 0;
	for (long q = 0; q < kcp; q++) {
		const uint32_t *ap = Ap + q * BMR, *bp = Bp + q * BNR;
		float b0[BNR], b1[BNR];
		for (long j = 0; j < BNR; j++) {
			b0[j] = bf16w((uint16_t)bp[j]);
			b1[j] = bf16w((uint16_t)(bp[j] >> 16));
		}
		for (long i = 0; i < BMR; i++) {
			float a0 = bf16w((uint16_t)ap[i]), a1 = bf16w((uint16_t)(ap[i] >> 16));
			float *ti = t + i * BNR;
			for (long j = 0; j < BNR; j++) ti[j] = fmaf(a0, b0[j], fmaf(a1, b1[j], ti[j]));
		}
	}
}

#if defined(__x86_64__)
#include <immintrin.h>

// bkernel_native is bkernel_portable on AVX512-BF16.
__attribute__((target("avx512f,avx512bw,avx512bf16")))
static void bkernel_native(long kcp, const uint32_t *Ap, const uint32_t *Bp, float *t) {
	__m512 c[BMR][2];
#pragma GCC unroll 12
	for (int i = 0; i < BMR; i++) c[i][0] = c[i][1] = _mm512_setzero_ps();
	for (long q = 0; q < kcp; q++) {
		__m512bh b0 = (__m512bh)_mm512_loadu_si512(Bp + q * BNR);
		__m512bh b1 = (__m512bh)_mm512_loadu_si512(Bp + q * BNR + 16);
		const uint32_t *ap = Ap + q * BMR;
#pragma GCC unroll 12
		for (int i = 0; i < BMR; i++) {
			__m512bh a = (__m512bh)_mm512_set1_epi32((int)ap[i]);
			c[i][0] = _mm512_dpbf16_ps(c[i][0], a, b0);
			c[i][1] = _mm512_dpbf16_ps(c[i][1], a, b1);
		}
	}
#pragma GCC unroll 12
	for (int i = 0; i < BMR; i++) {
		_mm512_storeu_ps(t + i * BNR, c[i][0]);
		_mm512_storeu_ps(t + i * BNR + 16, c[i][1]);
	}
}
#else
static void bkernel_native(long kcp, const uint32_t *Ap, const uint32_t *Bp, float *t) { abort(); }
#endif

static __thread uint32_t *bpackA, *bpackB;

// hone_bgemm: see the comment at the top. native picks the micro-kernel.
static void hone_bgemm(int native, int tB, long m, long n, long k, const float *a, long lda,
                       const uint16_t *b, long ldb, float beta, float *c, long ldc) {
	if (!bpackA) {
		bpackA = aligned_alloc(64, sizeof(uint32_t) * BMC * (BKC / 2));
		bpackB = aligned_alloc(64, sizeof(uint32_t) * BNC * (BKC / 2));
		if (!bpackA || !bpackB) abort();
	}
	float t[BMR * BNR] __attribute__((aligned(64)));
	for (long jc = 0; jc < n; jc += BNC) {
		long nc = n - jc < BNC ? n - jc : BNC;
		for (long pc = 0; pc < k; pc += BKC) {
			long kc = k - pc < BKC ? k - pc : BKC, kcp = (kc + 1) / 2;
			int first = pc == 0 && beta == 0;
			bpack_b(bpackB, b, ldb, tB, pc, kc, jc, nc);
			for (long ic = 0; ic < m; ic += BMC) {
				long mc = m - ic < BMC ? m - ic : BMC;
				bpack_a(bpackA, a, lda, ic, mc, pc, kc);
				for (long jr = 0; jr < nc; jr += BNR) {
					long nr = nc - jr < BNR ? nc - jr : BNR;
					for (long ir = 0; ir < mc; ir += BMR) {
						long mr = mc - ir < BMR ? mc - ir : BMR;
						const uint32_t *Ap = bpackA + (ir / BMR) * kcp * BMR, *Bp = bpackB + (jr / BNR) * kcp * BNR;
						if (native)
							bkernel_native(kcp, Ap, Bp, t);
						else
							bkernel_portable(kcp, Ap, Bp, t);
						bstore(t, c + (ic + ir) * ldc + jc + jr, ldc, mr, nr, first);
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

// bgemmFunc computes, for row-major matrices with leading dimensions,
//
//	c[i,j] = Σ_p bf16(a[i,p])·op(b)[p,j] + beta·c[i,j]
//
// with float32 accumulation, op(b)[p,j] = b[j*ldb+p] when tB (b [n,k]) or
// b[p*ldb+j] (b [k,n]); beta is 0 (c's old contents ignored) or 1.
// Slices are non-empty and m, n, k > 0.
type bgemmFunc func(tB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int)

// bf16GEMM returns the bfloat16 GEMM: the AVX512-BF16 micro-kernel when
// native (only on a CPU with hasAVX512BF16), else the portable one.
func bf16GEMM(native bool) bgemmFunc {
	nat := cbool(native)
	return func(tB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
		C.hone_bgemm(nat, cbool(tB), C.long(m), C.long(n), C.long(k),
			(*C.float)(unsafe.Pointer(&a[0])), C.long(lda), (*C.uint16_t)(unsafe.Pointer(&b[0])), C.long(ldb),
			C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.long(ldc))
	}
}
