/* A stand-in for libcublasLt with the entry points kernels/cuda binds
   (blaslt.go), for tests on machines without a GPU: descriptors kept in
   malloc'd structs, the checks cuBLASLt makes or a GPU would fail on
   (layouts that do not make a product with the descriptor's operations,
   leading dimensions below the rows, types other than bfloat16 A and B
   with float C and CUBLAS_COMPUTE_32F, an algorithm the heuristic did not
   give for these descriptors, a workspace smaller than the algorithm
   needs), and the product from the definition in double on host memory
   (the fake driver's "device" memory), as fake_cublas.c's GemmEx computes
   it, so that a GEMM gives the same bits through either library. Enum
   values and struct layouts from cublasLt.h (CUDA 11.8).

   With HONE_FAKE_CUDA_DEFERRED set to the path of the emulating libcuda
   (its deferred mode), the checks run at the call and the product on the
   driver's stream, through its hone_fake_cuda_submit, as fake_cublas.c's
   products. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus_t;

enum { OK = 0, NOT_INITIALIZED = 1, ALLOC_FAILED = 3, INVALID_VALUE = 7, NOT_SUPPORTED = 15 };
enum { MAGIC = 0x4c74 };

typedef struct { int magic, compute, scale, ta, tb; } desc_t;
typedef struct { int magic, type; uint64_t rows, cols; int64_t ld; } layout_t;
typedef struct { int magic; uint64_t maxWorkspace; } pref_t;
typedef struct { uint64_t data[8]; } algo_t;
typedef struct {
	algo_t algo;
	size_t workspaceSize;
	cublasStatus_t state;
	float wavesCount;
	int reserved[4];
} heuristic_t;

/* submitFn is the emulating driver's hone_fake_cuda_submit, found by
   cublasLtCreate in the deferred mode; NULL otherwise. */
typedef int (*submit_t)(int (*)(void *), void *);
static submit_t submitFn;

cublasStatus_t cublasLtCreate(void **h) {
	const char *p = getenv("HONE_FAKE_CUDA_DEFERRED");
	if (p && *p) {
		void *lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
		void *f = lib ? dlsym(lib, "hone_fake_cuda_submit") : NULL;
		if (!f) {
			fprintf(stderr, "fake libcublasLt: HONE_FAKE_CUDA_DEFERRED=%s: no hone_fake_cuda_submit: %s\n", p, dlerror());
			return NOT_INITIALIZED;
		}
		memcpy(&submitFn, &f, sizeof f);
	}
	*h = malloc(1);
	return *h ? OK : ALLOC_FAILED;
}

cublasStatus_t cublasLtDestroy(void *h) {
	if (!h) return NOT_INITIALIZED;
	free(h);
	return OK;
}

cublasStatus_t cublasLtMatmulDescCreate(desc_t **d, int compute, int scale) {
	*d = calloc(1, sizeof **d);
	if (!*d) return ALLOC_FAILED;
	(*d)->magic = MAGIC, (*d)->compute = compute, (*d)->scale = scale;
	return OK;
}

cublasStatus_t cublasLtMatmulDescDestroy(desc_t *d) {
	if (!d || d->magic != MAGIC) return INVALID_VALUE;
	d->magic = 0;
	free(d);
	return OK;
}

/* TRANSA = 3, TRANSB = 4, int32_t. */
cublasStatus_t cublasLtMatmulDescSetAttribute(desc_t *d, int attr, const void *buf, size_t size) {
	if (!d || d->magic != MAGIC || size != sizeof(int32_t)) return INVALID_VALUE;
	int32_t v;
	memcpy(&v, buf, sizeof v);
	if (v != 0 && v != 1) return INVALID_VALUE;
	if (attr == 3) d->ta = v;
	else if (attr == 4) d->tb = v;
	else return INVALID_VALUE;
	return OK;
}

cublasStatus_t cublasLtMatrixLayoutCreate(layout_t **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
	if (ld < (int64_t)(rows > 1 ? rows : 1)) return INVALID_VALUE;
	*l = calloc(1, sizeof **l);
	if (!*l) return ALLOC_FAILED;
	(*l)->magic = MAGIC, (*l)->type = type, (*l)->rows = rows, (*l)->cols = cols, (*l)->ld = ld;
	return OK;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(layout_t *l) {
	if (!l || l->magic != MAGIC) return INVALID_VALUE;
	l->magic = 0;
	free(l);
	return OK;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(pref_t **p) {
	*p = calloc(1, sizeof **p);
	if (!*p) return ALLOC_FAILED;
	(*p)->magic = MAGIC;
	return OK;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(pref_t *p) {
	if (!p || p->magic != MAGIC) return INVALID_VALUE;
	p->magic = 0;
	free(p);
	return OK;
}

/* MAX_WORKSPACE_BYTES = 1, uint64_t; MIN_ALIGNMENT_{A,B,C,D}_BYTES = 5..8,
   uint32_t, a power of two. */
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(pref_t *p, int attr, const void *buf, size_t size) {
	if (!p || p->magic != MAGIC) return INVALID_VALUE;
	if (attr == 1) {
		if (size != sizeof(uint64_t)) return INVALID_VALUE;
		memcpy(&p->maxWorkspace, buf, sizeof p->maxWorkspace);
		return OK;
	}
	if (attr >= 5 && attr <= 8) {
		uint32_t v;
		if (size != sizeof v) return INVALID_VALUE;
		memcpy(&v, buf, sizeof v);
		return v && !(v & (v - 1)) ? OK : INVALID_VALUE;
	}
	return INVALID_VALUE;
}

/* shape checks the descriptors and sets m, n, k. */
static cublasStatus_t shape(const desc_t *d, const layout_t *a, const layout_t *b, const layout_t *c,
                            const layout_t *dl, uint64_t *m, uint64_t *n, uint64_t *k) {
	if (!d || d->magic != MAGIC || !a || a->magic != MAGIC || !b || b->magic != MAGIC || !c || c->magic != MAGIC ||
	    !dl || dl->magic != MAGIC)
		return INVALID_VALUE;
	if (c->rows != dl->rows || c->cols != dl->cols || c->ld != dl->ld || c->type != dl->type) return NOT_SUPPORTED;
	uint64_t ar = d->ta ? a->cols : a->rows, ac = d->ta ? a->rows : a->cols;
	uint64_t br = d->tb ? b->cols : b->rows, bc = d->tb ? b->rows : b->cols;
	if (ar != dl->rows || bc != dl->cols || ac != br) return INVALID_VALUE;
	if (a->type != 14 || b->type != 14 || c->type != 0 || d->compute != 68 || d->scale != 0) return NOT_SUPPORTED;
	*m = dl->rows, *n = dl->cols, *k = ac;
	return OK;
}

/* The fake's algorithm: a fingerprint of the shapes and the workspace it
   needs (1 MiB, or the preference's maximum when that is less). */
static void fingerprint(algo_t *al, const desc_t *d, const layout_t *a, const layout_t *b, const layout_t *c,
                        uint64_t ws) {
	memset(al, 0, sizeof *al);
	al->data[0] = 0x4c74616c676f;
	al->data[1] = (uint64_t)d->ta << 1 | (uint64_t)d->tb;
	al->data[2] = c->rows, al->data[3] = c->cols, al->data[4] = d->ta ? a->rows : a->cols;
	al->data[5] = (uint64_t)a->ld, al->data[6] = (uint64_t)b->ld << 32 | (uint64_t)c->ld;
	al->data[7] = ws;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(void *h, desc_t *d, layout_t *a, layout_t *b, layout_t *c, layout_t *dl,
                                              pref_t *p, int requested, heuristic_t *res, int *count) {
	if (!h) return NOT_INITIALIZED;
	if (!p || p->magic != MAGIC || requested < 1) return INVALID_VALUE;
	uint64_t m, n, k;
	cublasStatus_t s = shape(d, a, b, c, dl, &m, &n, &k);
	if (s) return s;
	memset(res, 0, sizeof *res);
	res->workspaceSize = p->maxWorkspace < (1u << 20) ? p->maxWorkspace : (1u << 20);
	fingerprint(&res->algo, d, a, b, c, res->workspaceSize);
	res->wavesCount = 1;
	*count = 1;
	return OK;
}

static double bf16(const void *p, long i) {
	unsigned u = (unsigned)((const unsigned short *)p)[i] << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* job is one product's arguments, copied at the call (the descriptors may
   be destroyed before the product runs in the deferred mode). */
typedef struct {
	uint64_t m, n, k;
	int ta, tb;
	long lda, ldb, ldc;
	float alpha, beta;
	const void *A, *B;
	float *D;
} job_t;

static int runJob(void *p) {
	const job_t *j = p;
	for (uint64_t c = 0; c < j->n; c++)
		for (uint64_t i = 0; i < j->m; i++) {
			double sum = 0;
			for (uint64_t l = 0; l < j->k; l++)
				sum += bf16(j->A, j->ta ? (long)l + (long)i * j->lda : (long)i + (long)l * j->lda) *
				       bf16(j->B, j->tb ? (long)c + (long)l * j->ldb : (long)l + (long)c * j->ldb);
			float *o = &j->D[i + c * j->ldc];
			*o = j->beta == 0 ? (float)(j->alpha * sum) : (float)(j->alpha * sum + j->beta * *o);
		}
	return 0;
}

cublasStatus_t cublasLtMatmul(void *h, desc_t *d, const void *alpha, const void *A, layout_t *a, const void *B,
                              layout_t *b, const void *beta, const void *C, layout_t *c, void *D, layout_t *dl,
                              const algo_t *al, void *ws, size_t wsSize, void *stream) {
	if (!h) return NOT_INITIALIZED;
	uint64_t m, n, k;
	cublasStatus_t s = shape(d, a, b, c, dl, &m, &n, &k);
	if (s) return s;
	if (!al) return INVALID_VALUE;
	algo_t want;
	fingerprint(&want, d, a, b, c, al->data[7]);
	if (memcmp(&want, al, sizeof want)) return INVALID_VALUE;
	if (wsSize < al->data[7] || (wsSize && !ws)) return INVALID_VALUE;
	if (C != D || stream) return NOT_SUPPORTED;
	job_t *j = malloc(sizeof *j);
	if (!j) return ALLOC_FAILED;
	*j = (job_t){.m = m, .n = n, .k = k, .ta = d->ta, .tb = d->tb, .lda = (long)a->ld, .ldb = (long)b->ld,
	             .ldc = (long)dl->ld, .alpha = *(const float *)alpha, .beta = *(const float *)beta, .A = A, .B = B, .D = D};
	if (!submitFn) {
		runJob(j);
		free(j);
		return OK;
	}
	return submitFn(runJob, j) ? 13 : OK; /* CUBLAS_STATUS_EXECUTION_FAILED */
}

static const char *names[] = {[0] = "CUBLAS_STATUS_SUCCESS", [1] = "CUBLAS_STATUS_NOT_INITIALIZED",
                              [3] = "CUBLAS_STATUS_ALLOC_FAILED", [7] = "CUBLAS_STATUS_INVALID_VALUE",
                              [13] = "CUBLAS_STATUS_EXECUTION_FAILED", [15] = "CUBLAS_STATUS_NOT_SUPPORTED"};

const char *cublasLtGetStatusName(cublasStatus_t s) {
	return s >= 0 && s < (int)(sizeof names / sizeof *names) && names[s] ? names[s] : "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasLtGetStatusString(cublasStatus_t s) { return cublasLtGetStatusName(s); }
