//go:build cgo

package cpu

/*
#cgo CFLAGS: -O3
#include <stdint.h>
#include <stddef.h>
#include <string.h>

static inline float widen_bf16(uint16_t h) {
	union { uint32_t u; float f; } v = { .u = (uint32_t)h << 16 };
	return v.f;
}

// Plain C forms, the loops the vector forms must equal.
static void bf16_gemv_plain(float *out, const float *x, const uint16_t *w, long rows, long C) {
	for (long o = 0; o < rows; o++) {
		float s = 0;
		for (long c = 0; c < C; c++) s += x[c] * widen_bf16(w[o * C + c]);
		out[o] = s;
	}
}

static void f32_gemv_plain(float *out, const float *x, const float *w, long rows, long C, long ldw) {
	for (long o = 0; o < rows; o++) {
		float s = 0;
		for (long c = 0; c < C; c++) s += x[c] * w[o * ldw + c];
		out[o] = s;
	}
}

static void f32_gemvt_plain(float *out, const float *p, const float *v, long rows, long C, long ldv) {
	memset(out, 0, C * sizeof(float));
	for (long r = 0; r < rows; r++)
		for (long c = 0; c < C; c++) out[c] += p[r] * v[r * ldv + c];
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2,fma")))
static inline float hsum256(__m256 a) {
	__m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
	s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
	s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
	return _mm_cvtss_f32(s4);
}

__attribute__((target("avx2,fma")))
static inline __m256 load_bf16x8(const uint16_t *p) {
	__m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
}

// AVX2 + FMA: widen 8 bf16 at a time (zero-extend to 32 bits, shift left
// 16) and accumulate in two vector sums.
__attribute__((target("avx2,fma")))
static void bf16_gemv_avx2(float *out, const float *x, const uint16_t *w, long rows, long C) {
	for (long o = 0; o < rows; o++) {
		const uint16_t *row = w + o * C;
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		long c = 0;
		for (; c + 16 <= C; c += 16) {
			a0 = _mm256_fmadd_ps(load_bf16x8(row + c), _mm256_loadu_ps(x + c), a0);
			a1 = _mm256_fmadd_ps(load_bf16x8(row + c + 8), _mm256_loadu_ps(x + c + 8), a1);
		}
		for (; c + 8 <= C; c += 8) a0 = _mm256_fmadd_ps(load_bf16x8(row + c), _mm256_loadu_ps(x + c), a0);
		float s = hsum256(_mm256_add_ps(a0, a1));
		for (; c < C; c++) s += x[c] * widen_bf16(row[c]);
		out[o] = s;
	}
}

__attribute__((target("avx2,fma")))
static void f32_gemv_avx2(float *out, const float *x, const float *w, long rows, long C, long ldw) {
	for (long o = 0; o < rows; o++) {
		const float *row = w + o * ldw;
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		long c = 0;
		for (; c + 16 <= C; c += 16) {
			a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(x + c), a0);
			a1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 8), _mm256_loadu_ps(x + c + 8), a1);
		}
		for (; c + 8 <= C; c += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(x + c), a0);
		float s = hsum256(_mm256_add_ps(a0, a1));
		for (; c < C; c++) s += x[c] * row[c];
		out[o] = s;
	}
}

__attribute__((target("avx2,fma")))
static void f32_gemvt_avx2(float *out, const float *p, const float *v, long rows, long C, long ldv) {
	long c = 0;
	for (; c + 8 <= C; c += 8) {
		__m256 a = _mm256_setzero_ps();
		for (long r = 0; r < rows; r++)
			a = _mm256_fmadd_ps(_mm256_set1_ps(p[r]), _mm256_loadu_ps(v + r * ldv + c), a);
		_mm256_storeu_ps(out + c, a);
	}
	for (; c < C; c++) {
		float s = 0;
		for (long r = 0; r < rows; r++) s += p[r] * v[r * ldv + c];
		out[c] = s;
	}
}

static int has_avx2_fma(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
static void bf16_gemv_avx2(float *out, const float *x, const uint16_t *w, long rows, long C) {
	bf16_gemv_plain(out, x, w, rows, C);
}
static void f32_gemv_avx2(float *out, const float *x, const float *w, long rows, long C, long ldw) {
	f32_gemv_plain(out, x, w, rows, C, ldw);
}
static void f32_gemvt_avx2(float *out, const float *p, const float *v, long rows, long C, long ldv) {
	f32_gemvt_plain(out, p, v, rows, C, ldv);
}
static int has_avx2_fma(void) { return 0; }
#endif

static void bf16_gemv(float *out, const float *x, const uint16_t *w, long rows, long C, int simd) {
	if (simd) bf16_gemv_avx2(out, x, w, rows, C);
	else bf16_gemv_plain(out, x, w, rows, C);
}
static void f32_gemv(float *out, const float *x, const float *w, long rows, long C, long ldw, int simd) {
	if (simd) f32_gemv_avx2(out, x, w, rows, C, ldw);
	else f32_gemv_plain(out, x, w, rows, C, ldw);
}
static void f32_gemvt(float *out, const float *p, const float *v, long rows, long C, long ldv, int simd) {
	if (simd) f32_gemvt_avx2(out, p, v, rows, C, ldv);
	else f32_gemvt_plain(out, p, v, rows, C, ldv);
}
*/
import "C"

import "unsafe"

// gemvLevel is the instruction set the matrix-vector kernels can use on
// this CPU: 1 AVX2 + FMA, 0 plain C.
func gemvLevel() int { return int(C.has_avx2_fma()) }

// bf16Gemv: out[o] = Σ_c x[c]·F32(w[o*cols+c]) for o < len(out), in C
// (AVX2/FMA when f.gemv says the CPU has them). The loop it must equal is bf16GemvGo.
func (f features) bf16Gemv(out, x []float32, w []uint16, cols int) {
	if len(out) == 0 {
		return
	}
	if cols == 0 {
		clear(out)
		return
	}
	_ = w[(len(out)-1)*cols+cols-1]
	C.bf16_gemv((*C.float)(unsafe.Pointer(&out[0])), (*C.float)(unsafe.Pointer(&x[:cols][0])),
		(*C.uint16_t)(unsafe.Pointer(&w[0])), C.long(len(out)), C.long(cols), C.int(f.gemv))
}

// f32Gemv: out[o] = Σ_c x[c]·w[o*ldw+c] for o < len(out), in C. The loop it
// must equal is f32GemvGo.
func (f features) f32Gemv(out, x, w []float32, cols, ldw int) {
	if len(out) == 0 {
		return
	}
	if cols == 0 {
		clear(out)
		return
	}
	_ = w[(len(out)-1)*ldw+cols-1]
	C.f32_gemv((*C.float)(unsafe.Pointer(&out[0])), (*C.float)(unsafe.Pointer(&x[:cols][0])),
		(*C.float)(unsafe.Pointer(&w[0])), C.long(len(out)), C.long(cols), C.long(ldw), C.int(f.gemv))
}

// f32GemvT: out[c] = Σ_r p[r]·v[r*ldv+c] for c < len(out), r < len(p), in
// C. The loop it must equal is f32GemvTGo.
func (f features) f32GemvT(out, p, v []float32, ldv int) {
	if len(out) == 0 {
		return
	}
	if len(p) == 0 {
		clear(out)
		return
	}
	_ = v[(len(p)-1)*ldv+len(out)-1]
	C.f32_gemvt((*C.float)(unsafe.Pointer(&out[0])), (*C.float)(unsafe.Pointer(&p[0])),
		(*C.float)(unsafe.Pointer(&v[0])), C.long(len(p)), C.long(len(out)), C.long(ldv), C.int(f.gemv))
}
