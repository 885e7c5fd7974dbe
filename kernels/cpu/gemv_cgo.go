//go:build cgo

package cpu

/*
#cgo CFLAGS: -O3
#include <stdint.h>
#include <stddef.h>

// Plain C: out[o] = sum_c x[c] * widen(w[o*C + c]).
static void bf16_gemv_plain(float *out, const float *x, const uint16_t *w, long rows, long C) {
	for (long o = 0; o < rows; o++) {
		const uint16_t *row = w + o * C;
		float s = 0;
		for (long c = 0; c < C; c++) {
			union { uint32_t u; float f; } v = { .u = (uint32_t)row[c] << 16 };
			s += x[c] * v.f;
		}
		out[o] = s;
	}
}

#if defined(__x86_64__)
#include <immintrin.h>

// AVX2 + FMA: widen 8 bf16 at a time (zero-extend to 32 bits, shift left 16)
// and accumulate in two vector sums; the same sum as the plain loop up to
// the order of additions.
__attribute__((target("avx2,fma")))
static void bf16_gemv_avx2(float *out, const float *x, const uint16_t *w, long rows, long C) {
	for (long o = 0; o < rows; o++) {
		const uint16_t *row = w + o * C;
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		long c = 0;
		for (; c + 16 <= C; c += 16) {
			__m256i h0 = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(row + c)));
			__m256i h1 = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(row + c + 8)));
			a0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(h0, 16)), _mm256_loadu_ps(x + c), a0);
			a1 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(h1, 16)), _mm256_loadu_ps(x + c + 8), a1);
		}
		for (; c + 8 <= C; c += 8) {
			__m256i h0 = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(row + c)));
			a0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(h0, 16)), _mm256_loadu_ps(x + c), a0);
		}
		a0 = _mm256_add_ps(a0, a1);
		__m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
		s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
		s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
		float s = _mm_cvtss_f32(s4);
		for (; c < C; c++) {
			union { uint32_t u; float f; } v = { .u = (uint32_t)row[c] << 16 };
			s += x[c] * v.f;
		}
		out[o] = s;
	}
}

// AVX2 + FMA: out[o] = sum_c x[c] * w[o*C + c] for float32 weights.
__attribute__((target("avx2,fma")))
static void f32_gemv_avx2(float *out, const float *x, const float *w, long rows, long C) {
	for (long o = 0; o < rows; o++) {
		const float *row = w + o * C;
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		long c = 0;
		for (; c + 16 <= C; c += 16) {
			a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(x + c), a0);
			a1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 8), _mm256_loadu_ps(x + c + 8), a1);
		}
		for (; c + 8 <= C; c += 8) {
			a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(x + c), a0);
		}
		a0 = _mm256_add_ps(a0, a1);
		__m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
		s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
		s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
		float s = _mm_cvtss_f32(s4);
		for (; c < C; c++) s += x[c] * row[c];
		out[o] = s;
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
// AVX2 + FMA: out[o] = sum_c x[c] * w[o*C + c] for float32 weights.
__attribute__((target("avx2,fma")))
static void f32_gemv_avx2(float *out, const float *x, const float *w, long rows, long C) {
	for (long o = 0; o < rows; o++) {
		const float *row = w + o * C;
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
		long c = 0;
		for (; c + 16 <= C; c += 16) {
			a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(x + c), a0);
			a1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c + 8), _mm256_loadu_ps(x + c + 8), a1);
		}
		for (; c + 8 <= C; c += 8) {
			a0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + c), _mm256_loadu_ps(x + c), a0);
		}
		a0 = _mm256_add_ps(a0, a1);
		__m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
		s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
		s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
		float s = _mm_cvtss_f32(s4);
		for (; c < C; c++) s += x[c] * row[c];
		out[o] = s;
	}
}

static int has_avx2_fma(void) { return 0; }
#endif

static void f32_gemv(float *out, const float *x, const float *w, long rows, long C, int simd) {
	if (simd) {
		f32_gemv_avx2(out, x, w, rows, C);
		return;
	}
	for (long o = 0; o < rows; o++) {
		float s = 0;
		for (long c = 0; c < C; c++) s += x[c] * w[o * C + c];
		out[o] = s;
	}
}

static void bf16_gemv(float *out, const float *x, const uint16_t *w, long rows, long C, int simd) {
	if (simd) bf16_gemv_avx2(out, x, w, rows, C);
	else bf16_gemv_plain(out, x, w, rows, C);
}
*/
import "C"

import "unsafe"

// hasAVX2 is read once: the CPU does not change under a running process.
var hasAVX2 = C.has_avx2_fma() != 0

// bf16Gemv: out[o] = Σ_c x[c]·F32(w[o*C+c]) for o < len(out), in C (AVX2/FMA
// when the CPU has them). The loop it must equal is bf16GemvGo.
func bf16Gemv(out, x []float32, w []uint16, cols int) {
	if len(out) == 0 {
		return
	}
	if cols == 0 {
		clear(out)
		return
	}
	simd := C.int(0)
	if hasAVX2 {
		simd = 1
	}
	C.bf16_gemv((*C.float)(unsafe.Pointer(&out[0])), (*C.float)(unsafe.Pointer(&x[0])),
		(*C.uint16_t)(unsafe.Pointer(&w[0])), C.long(len(out)), C.long(cols), simd)
}

// f32Gemv: out[o] = Σ_c x[c]·w[o*C+c] for o < len(out), in C (AVX2/FMA when
// the CPU has them). The loop it must equal is f32GemvGo.
func f32Gemv(out, x, w []float32, cols int) {
	if len(out) == 0 {
		return
	}
	if cols == 0 {
		clear(out)
		return
	}
	simd := C.int(0)
	if hasAVX2 {
		simd = 1
	}
	C.f32_gemv((*C.float)(unsafe.Pointer(&out[0])), (*C.float)(unsafe.Pointer(&x[0])),
		(*C.float)(unsafe.Pointer(&w[0])), C.long(len(out)), C.long(cols), simd)
}
