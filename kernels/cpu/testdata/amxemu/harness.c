// The AMX bfloat16 GEMM on an emulated tile unit, for CPUs without AMX
// (TestBF16AMXEmulated builds it): the C of gemm_bf16.go is pasted where
// the marker line below stands, with its AMX_* macros and its
// ldtilecfg / tilerelease asm replaced by the functions below, which do
// what Intel's pseudo-code for TILELOADD, TILESTORED, TILEZERO and
// TDPBF16PS says on eight 16-row × 64-byte tiles. It then checks
// hone_bgemm's AMX kind against its portable kind on shapes off every
// tile, block and panel edge, through each way the backend calls it (A
// rounded inside, op(B) pre-packed, A rounded beforehand), beta 0 (C's old
// contents NaN) and 1, both layouts of B, and that nothing past column n
// of C's last row is written. Exit status 0 and "bad 0" when all agree.
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

static uint32_t emu_t[8][16][16];
static long emu_cfg, emu_rel, emu_dps;

static void emu_load(int t, const void *p, long stride) {
	for (int r = 0; r < 16; r++) memcpy(emu_t[t][r], (const char *)p + r * stride, 64);
}

static void emu_store(int t, void *p, long stride) {
	for (int r = 0; r < 16; r++) memcpy((char *)p + r * stride, emu_t[t][r], 64);
}

static float emu_bf(uint32_t h) {
	uint32_t u = (h & 0xffffu) << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

// emu_dp: tile c (16×16 float32) += tile a (16 rows × 16 pairs) · tile b
// (16 pairs × 16 columns), each pair the even element then the odd one.
static void emu_dp(int c, int a, int b) {
	emu_dps++;
	for (int m = 0; m < 16; m++)
		for (int k = 0; k < 16; k++)
			for (int n = 0; n < 16; n++) {
				float acc;
				memcpy(&acc, &emu_t[c][m][n], 4);
				uint32_t aw = emu_t[a][m][k], bw = emu_t[b][k][n];
				acc += emu_bf(aw) * emu_bf(bw);
				acc += emu_bf(aw >> 16) * emu_bf(bw >> 16);
				memcpy(&emu_t[c][m][n], &acc, 4);
			}
}

HONE_GEMM_BF16_C

static double rnd(unsigned *s) {
	*s = *s * 1103515245u + 12345u;
	return ((*s >> 8) & 0xffff) / 32768.0 - 1.0;
}

// check runs one case; mode 0: A rounded inside, 1: op(B) pre-packed (in
// two ranges of panels, one without the AVX2 packing), 2: A rounded
// beforehand in the AMX layout (its padding NaN first, then overwritten).
static int check(long m, long n, long k, int tB, float beta, int mode, unsigned seed) {
	long lda = k + 3, ldc = n + 5, ldb = tB ? k + 2 : n + 2, rowsB = tB ? n : k;
	float *a = malloc(sizeof(float) * m * lda), *want = malloc(sizeof(float) * m * ldc);
	float *got = malloc(sizeof(float) * m * ldc), *was = malloc(sizeof(float) * m * ldc);
	uint16_t *b = malloc(sizeof(uint16_t) * rowsB * ldb);
	for (long i = 0; i < m * lda; i++) a[i] = rnd(&seed);
	for (long i = 0; i < rowsB * ldb; i++) b[i] = bf16r(rnd(&seed));
	for (long i = 0; i < m * ldc; i++) {
		want[i] = got[i] = rnd(&seed);
		if (beta == 0) got[i] = NAN;
		was[i] = got[i];
	}
	hone_bgemm(0, 0, tB, m, n, k, a, lda, b, ldb, beta, want, ldc, NULL, NULL, 0);
	int fast = hone_has_avx2();
	if (mode == 0)
		hone_bgemm(2, fast, tB, m, n, k, a, lda, b, ldb, beta, got, ldc, NULL, NULL, 0);
	else if (mode == 1) {
		long w = hone_bprepack_words(n, k), panels = (n + BNR - 1) / BNR;
		uint32_t *pre = malloc(sizeof(uint32_t) * w);
		for (long i = 0; i < w; i++) pre[i] = 0x7fc07fc0;
		hone_bprepack(pre, b, ldb, tB, n, k, 0, panels / 2, fast);
		hone_bprepack(pre, b, ldb, tB, n, k, panels / 2, panels, 0);
		hone_bgemm(2, fast, 0, m, n, k, a, lda, NULL, 0, beta, got, ldc, pre, NULL, 0);
		free(pre);
	} else {
		long ld16 = hone_a16_ld(2, k), rows = hone_a16_rows(2, m);
		uint16_t *a16 = malloc(sizeof(uint16_t) * rows * ld16);
		for (long i = 0; i < m * ld16; i++) a16[i] = 0x7fc0;
		memset(a16 + m * ld16, 0, sizeof(uint16_t) * (rows - m) * ld16);
		hone_bround(fast, a16, ld16, a, lda, m, k);
		hone_bgemm(2, fast, tB, m, n, k, NULL, 0, b, ldb, beta, got, ldc, NULL, a16, ld16);
		free(a16);
	}
	int bad = 0;
	for (long i = 0; i < m && !bad; i++)
		for (long j = 0; j < ldc; j++) {
			float x = got[i * ldc + j], y = want[i * ldc + j];
			if (j >= n) {
				if (i == m - 1 && memcmp(&got[i * ldc + j], &was[i * ldc + j], 4) != 0) {
					printf("m=%ld n=%ld k=%ld tB=%d beta=%g mode=%d: wrote c[%ld,%ld], past column %ld\n", m, n, k, tB, beta, mode, i, j, n);
					bad = 1;
					break;
				}
				continue;
			}
			if (!(fabsf(x - y) <= 1e-5f * sqrtf((float)k) * (1 + fabsf(y)))) {
				printf("m=%ld n=%ld k=%ld tB=%d beta=%g mode=%d: c[%ld,%ld] = %g, portable %g\n", m, n, k, tB, beta, mode, i, j, x, y);
				bad = 1;
				break;
			}
		}
	free(a);
	free(b);
	free(want);
	free(got);
	free(was);
	return bad;
}

// check_rows runs the decode kernel hone_amx_rows against brows_portable on
// the same rounded activation, the output rows strided, nothing past them
// written.
static int check_rows(long N, long C, long rows, unsigned seed) {
	long ldo = rows + 3, panels = (N + BNR - 1) / BNR;
	float *x = malloc(sizeof(float) * N * C), *want = malloc(sizeof(float) * N * ldo), *got = malloc(sizeof(float) * N * ldo);
	uint16_t *w = malloc(sizeof(uint16_t) * rows * C), *x16 = malloc(sizeof(uint16_t) * N * C);
	uint32_t *xp = malloc(sizeof(uint32_t) * hone_bprepack_words(N, C));
	for (long i = 0; i < N * C; i++) x[i] = rnd(&seed);
	for (long i = 0; i < rows * C; i++) w[i] = bf16r(rnd(&seed));
	for (long i = 0; i < N * ldo; i++) want[i] = got[i] = -7;
	hone_bround(0, x16, C, x, C, N, C);
	hone_bprepack(xp, x16, C, 1, N, C, 0, panels, hone_has_avx2());
	brows_portable(want, ldo, x16, N, C, w, rows);
	hone_amx_rows(got, ldo, xp, N, C, w, rows);
	int bad = 0;
	for (long i = 0; i < N * ldo && !bad; i++)
		if (!(fabsf(got[i] - want[i]) <= 1e-5f * sqrtf((float)C) * (1 + fabsf(want[i])))) {
			printf("rows N=%ld C=%ld rows=%ld: out[%ld, %ld] = %g, portable %g\n", N, C, rows, i / ldo, i % ldo, got[i], want[i]);
			bad = 1;
		}
	free(x);
	free(want);
	free(got);
	free(w);
	free(x16);
	free(xp);
	return bad;
}

int main(void) {
	// Edges of 1–15 and 17–31 rows and columns, k short of, at and past a
	// multiple of 32 and of BKC = 256, more rows than AMC = 96, more
	// columns than ABN = 256 and BNC = 1024.
	static const long sh[][3] = {{1, 1, 1}, {13, 33, 3}, {97, 40, 1025}, {12, 1030, 130}, {100, 290, 7},
	                             {64, 64, 32}, {48, 80, 289}, {33, 17, 31}, {128, 96, 512}};
	int bad = 0, cases = 0;
	for (unsigned s = 0; s < sizeof sh / sizeof sh[0]; s++)
		for (int tB = 0; tB < 2; tB++)
			for (int beta = 0; beta < 2; beta++)
				for (int mode = 0; mode < 3; mode++) {
					bad += check(sh[s][0], sh[s][1], sh[s][2], tB, (float)beta, mode, 7 * s + 2 * tB + beta + 1);
					cases++;
				}
	// The decode kernel: inputs and weight rows off its 32 × 32 tiles, C
	// past BKC (the packed activation's slots).
	static const long rs[][3] = {{1, 32, 1}, {8, 96, 100}, {33, 64, 70}, {40, 288, 31}, {64, 32, 64}};
	for (unsigned s = 0; s < sizeof rs / sizeof rs[0]; s++) {
		bad += check_rows(rs[s][0], rs[s][1], rs[s][2], 11 * s + 5);
		cases++;
	}
	printf("cases %d bad %d ldtilecfg %ld tilerelease %ld tdpbf16ps %ld\n", cases, bad, emu_cfg, emu_rel, emu_dps);
	return bad != 0 || emu_cfg != cases || emu_rel != cases || emu_dps == 0;
}
