/* A stand-in for libcublas with the entry points kernels/cuda binds, for
   tests on machines without a GPU: the column-major GEMMs of the BLAS
   reference, computed on host memory (the fake driver's "device" memory),
   with cuBLAS's argument checks on the leading dimensions; GemmEx and
   GemmStridedBatchedEx on float32 or bfloat16 operands (C float32, or
   bfloat16 with bfloat16 operands), and on float32 ones rounded to
   TF32.

   With HONE_FAKE_CUDA_DEFERRED set to the path of the emulating libcuda
   (clib/emulate_driver.cc: its deferred mode), a product is checked at the
   call and computed on the driver's stream, through its
   hone_fake_cuda_submit: at the driver's next synchronization point, in
   order with the kernel launches and memsets. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus_t;

/* submitFn is the emulating driver's hone_fake_cuda_submit, found by
   cublasCreate_v2 in the deferred mode; NULL otherwise. */
typedef int (*submit_t)(int (*)(void *), void *);
static submit_t submitFn;

/* findSubmit sets submitFn from HONE_FAKE_CUDA_DEFERRED; 0 when the mode
   is off or the driver was found. */
static int findSubmit(void) {
	const char *p = getenv("HONE_FAKE_CUDA_DEFERRED");
	if (!p || !*p) return 0;
	void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
	void *f = h ? dlsym(h, "hone_fake_cuda_submit") : NULL;
	if (!f) {
		fprintf(stderr, "fake libcublas: HONE_FAKE_CUDA_DEFERRED=%s: no hone_fake_cuda_submit: %s\n", p, dlerror());
		return 1;
	}
	memcpy(&submitFn, &f, sizeof f);
	return 0;
}

cublasStatus_t cublasCreate_v2(void **h) {
	if (findSubmit()) return 1;
	*h = malloc(1);
	return *h ? 0 : 3;
}

cublasStatus_t cublasDestroy_v2(void *h) {
	if (!h) return 1;
	free(h);
	return 0;
}

static int maxi(int a, int b) { return a > b ? a : b; }

static cublasStatus_t checkArgs(int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc) {
	if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1)) return 7;
	if (m < 0 || n < 0 || k < 0) return 7;
	if (lda < maxi(1, ta ? k : m) || ldb < maxi(1, tb ? n : k) || ldc < maxi(1, m)) return 7;
	return 0;
}

/* gemm: C = alpha·op(A)·op(B) + beta·C, column-major; beta == 0 ignores C. */
static void gemm(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc) {
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double s = 0;
			for (int l = 0; l < k; l++) {
				double a = ta ? A[l + (long)i * lda] : A[i + (long)l * lda];
				double b = tb ? B[j + (long)l * ldb] : B[l + (long)j * ldb];
				s += a * b;
			}
			float *c = &C[i + (long)j * ldc];
			*c = beta == 0 ? (float)(alpha * s) : (float)(alpha * s + beta * *c);
		}
}

static void gemmEx(int ta, int tb, int m, int n, int k, float al, const void *A, int at, int lda, long long oa,
                   const void *B, int bt, int ldb, long long ob, int round, float be, void *C, int ct, int ldc);

/* job is one call's products, its arguments copied at the call (alpha and
   beta are host values cuBLAS reads then): batch products, operand i at
   A + i·sa elements and so on; ex: GemmEx's (typed operands), else
   Sgemm's. */
typedef struct {
	int ex, ta, tb, m, n, k, at, bt, ct, lda, ldb, ldc, round, batch;
	float alpha, beta;
	const void *A, *B;
	void *C;
	long long sa, sb, sc;
} job_t;

static int runJob(void *p) {
	const job_t *j = p;
	for (int i = 0; i < j->batch; i++) {
		if (j->ex)
			gemmEx(j->ta, j->tb, j->m, j->n, j->k, j->alpha, j->A, j->at, j->lda, i * j->sa, j->B, j->bt, j->ldb,
			       i * j->sb, j->round, j->beta, (char *)j->C + i * j->sc * (j->ct == 14 ? 2 : 4), j->ct, j->ldc);
		else
			gemm(j->ta, j->tb, j->m, j->n, j->k, j->alpha, (const float *)j->A + i * j->sa, j->lda,
			     (const float *)j->B + i * j->sb, j->ldb, j->beta, (float *)j->C + i * j->sc, j->ldc);
	}
	return 0;
}

/* submit computes j now, or on the driver's stream in the deferred mode. */
static cublasStatus_t submit(const job_t *j) {
	job_t *c = malloc(sizeof *c);
	if (!c) return 3;
	*c = *j;
	if (!submitFn) {
		runJob(c);
		free(c);
		return 0;
	}
	return submitFn(runJob, c) ? 13 : 0; /* CUBLAS_STATUS_EXECUTION_FAILED */
}

cublasStatus_t cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                              const float *A, int lda, const float *B, int ldb, const float *beta,
                              float *C, int ldc) {
	if (!h) return 1;
	cublasStatus_t s = checkArgs(ta, tb, m, n, k, lda, ldb, ldc);
	if (s) return s;
	job_t j = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb, .ldc = ldc, .batch = 1,
	           .alpha = *alpha, .beta = *beta, .A = A, .B = B, .C = C};
	return submit(&j);
}

cublasStatus_t cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta,
                                         float *C, int ldc, long long sc, int batch) {
	if (!h) return 1;
	cublasStatus_t s = checkArgs(ta, tb, m, n, k, lda, ldb, ldc);
	if (s || batch < 0) return s ? s : 7;
	job_t j = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb, .ldc = ldc, .batch = batch,
	           .alpha = *alpha, .beta = *beta, .A = A, .B = B, .C = C, .sa = sa, .sb = sb, .sc = sc};
	return submit(&j);
}

/* The cudaDataType_t and cublasComputeType_t values GemmEx accepts
   (library_types.h, cublas_api.h): A and B both CUDA_R_32F (0) or both
   CUDA_R_16BF (14), C CUDA_R_32F, CUBLAS_COMPUTE_32F (68); A, B and C
   all CUDA_R_16BF, CUBLAS_COMPUTE_32F, the float32 result rounded to
   bfloat16 on store (bf16); or all three
   CUDA_R_32F with CUBLAS_COMPUTE_32F_FAST_TF32 (77), A and B rounded to
   TF32 first (tf32); anything else is CUBLAS_STATUS_NOT_SUPPORTED (15)
   here. */

/* tf32 rounds f to TF32 (10 mantissa bits), to nearest with ties to even:
   cudafake.RoundTF32, which says why that rounding (cuBLAS does not
   document the one FAST_TF32 applies). NaN and Inf pass unchanged. */
static float tf32(float f) {
	unsigned u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7f800000u) == 0x7f800000u) return f;
	u += 0x0fffu + ((u >> 13) & 1u);
	u &= ~0x1fffu;
	memcpy(&f, &u, sizeof f);
	return f;
}

static double elem(const void *p, int type, int round, long i) {
	if (type == 14) {
		unsigned u = (unsigned)((const unsigned short *)p)[i] << 16;
		float f;
		memcpy(&f, &u, sizeof f);
		return f;
	}
	return round ? tf32(((const float *)p)[i]) : ((const float *)p)[i];
}

/* bf16 rounds f to bfloat16's bits, to nearest with ties to even, a NaN
   quiet with its sign: kernels.BF16 (and bf16round.cuh). */
static unsigned short bf16(float f) {
	unsigned u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (unsigned short)(u >> 16);
}

/* gemmEx: one GemmEx product on operands of type at (= bt), rounded to
   TF32 when round, A from element oa, B from ob; C of type ct (float32,
   or bfloat16: read widened, the float32 result stored rounded). */
static void gemmEx(int ta, int tb, int m, int n, int k, float al, const void *A, int at, int lda, long long oa,
                   const void *B, int bt, int ldb, long long ob, int round, float be, void *C, int ct, int ldc) {
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double sum = 0;
			for (int l = 0; l < k; l++)
				sum += elem(A, at, round, oa + (ta ? l + (long)i * lda : i + (long)l * lda)) *
				       elem(B, bt, round, ob + (tb ? j + (long)l * ldb : l + (long)j * ldb));
			long ci = i + (long)j * ldc;
			float v = be == 0 ? (float)(al * sum) : (float)(al * sum + be * (float)elem(C, ct, 0, ci));
			if (ct == 14)
				((unsigned short *)C)[ci] = bf16(v);
			else
				((float *)C)[ci] = v;
		}
}

/* checkTypes returns 15 for the type combinations above that GemmEx does
   not accept, else 0; *round says whether A and B are rounded to TF32. */
static cublasStatus_t checkTypes(int at, int bt, int ct, int compute, int *round) {
	*round = compute == 77 && at == 0;
	int bf16C = ct == 14 && at == 14 && compute == 68;
	return (at != bt || (at != 0 && at != 14) || (ct != 0 && !bf16C) || (compute != 68 && !*round)) ? 15 : 0;
}

cublasStatus_t cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A,
                            int at, int lda, const void *B, int bt, int ldb, const void *beta, void *C, int ct,
                            int ldc, int compute, int algo) {
	if (!h) return 1;
	cublasStatus_t s = checkArgs(ta, tb, m, n, k, lda, ldb, ldc);
	if (s) return s;
	int round;
	if ((s = checkTypes(at, bt, ct, compute, &round))) return s;
	(void)algo;
	job_t j = {.ex = 1, .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .at = at, .bt = bt, .ct = ct, .lda = lda, .ldb = ldb,
	           .ldc = ldc, .round = round, .batch = 1, .alpha = *(const float *)alpha, .beta = *(const float *)beta,
	           .A = A, .B = B, .C = C};
	return submit(&j);
}

/* cublasGemmStridedBatchedEx: GemmEx on batch products, operand i at
   A + i·sa elements (of A's type), and so on. */
cublasStatus_t cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                                          const void *A, int at, int lda, long long sa, const void *B, int bt,
                                          int ldb, long long sb, const void *beta, void *C, int ct, int ldc,
                                          long long sc, int batch, int compute, int algo) {
	if (!h) return 1;
	cublasStatus_t s = checkArgs(ta, tb, m, n, k, lda, ldb, ldc);
	if (s || batch < 0) return s ? s : 7;
	int round;
	if ((s = checkTypes(at, bt, ct, compute, &round))) return s;
	(void)algo;
	job_t j = {.ex = 1, .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .at = at, .bt = bt, .ct = ct, .lda = lda, .ldb = ldb,
	           .ldc = ldc, .round = round, .batch = batch, .alpha = *(const float *)alpha,
	           .beta = *(const float *)beta, .A = A, .B = B, .C = C, .sa = sa, .sb = sb, .sc = sc};
	return submit(&j);
}

const char *cublasGetStatusName(cublasStatus_t s) {
	switch (s) {
	case 0: return "CUBLAS_STATUS_SUCCESS";
	case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
	case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
	case 7: return "CUBLAS_STATUS_INVALID_VALUE";
	case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
	case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
	default: return "CUBLAS_STATUS_UNKNOWN";
	}
}

const char *cublasGetStatusString(cublasStatus_t s) {
	switch (s) {
	case 0: return "success";
	case 1: return "the library was not initialized";
	case 3: return "the resource allocation failed";
	case 7: return "an invalid numeric value was used as an argument";
	case 13: return "the GPU program failed to execute";
	case 15: return "the functionality requested is not supported";
	default: return "unknown error";
	}
}
