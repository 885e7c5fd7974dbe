/* A stand-in for libcublasLt with the entry points kernels/cuda binds
   (blaslt.go), for tests on machines without a GPU: descriptors kept in
   malloc'd structs, the checks cuBLASLt makes or a GPU would fail on
   (layouts that do not make a product with the descriptor's operations,
   leading dimensions below the rows, types other than bfloat16 A and B
   with a float or bfloat16 C (and D) and CUBLAS_COMPUTE_32F, an algorithm
   the heuristic did not
   give for these descriptors, a workspace smaller than the algorithm
   needs), and the product from the definition in double on host memory
   (the fake driver's "device" memory), as fake_cublas.c's GemmEx computes
   it (a bfloat16 C read widened, D stored rounded to bfloat16), so that a
   GEMM gives the same bits through either library. Enum
   values and struct layouts from cublasLt.h (CUDA 11.8).

   With HONE_FAKE_CUDA_DEFERRED set to the path of the emulating libcuda
   (its deferred mode), the checks run at the call and the product on the
   driver's stream, through its hone_fake_cuda_submit, as fake_cublas.c's
   products.

   For the autotune (kernels/cuda/gemmlt.go) a test hook,
   hone_fake_cublaslt_set_algos, makes the heuristic offer several
   algorithms: algorithm i >= 1 cuts its K sums in i+1 parts, each summed
   in double and rounded to float, the parts added in float (a split-K
   reduction), so its bits differ from algorithm 0's; each product of
   algorithm i moves the driver's virtual clock on by the cost the test set
   (the driver's hone_fake_cuda_advance, on its stream), and algorithms the
   test marks fail with CUBLAS_STATUS_NOT_SUPPORTED. hone_fake_cublaslt_runs
   reads back the algorithms run. D may differ from C (out of place, the
   same layout): C is read (beta != 0 only), D written. */
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

/* The algorithms the heuristic offers (hone_fake_cublaslt_set_algos): how
   many, each one's cost in ms, those refusing (a bit mask), and the
   driver's clock. */
typedef int (*advance_t)(double);
static int algoCount = 1;
static double algoCost[32];
static unsigned algoUnsupported;
static advance_t advanceFn;

/* Every product run: algorithm * 2, plus 1 when out of place. */
static int runs[4096];
static int runCount;

static advance_t findAdvance(const char *driver) {
	void *lib = dlopen(driver, RTLD_NOW | RTLD_LOCAL);
	void *f = lib ? dlsym(lib, "hone_fake_cuda_advance") : NULL;
	advance_t a = NULL;
	if (f) memcpy(&a, &f, sizeof f);
	return a;
}

/* hone_fake_cublaslt_set_algos: the heuristic offers up to n (at most 32)
   algorithms; a product of algorithm i costs cost[i] ms (1 when i >= ncost)
   on the clock of the driver at path driver (NULL or "": no clock); the
   algorithms whose bit is set in unsupported fail with NOT_SUPPORTED. It
   clears the runs. Returns 0, or -1 when the driver has no
   hone_fake_cuda_advance or n is out of range. */
int hone_fake_cublaslt_set_algos(int n, const double *cost, int ncost, unsigned unsupported, const char *driver) {
	if (n < 0 || n > 32) return -1;
	algoCount = n, algoUnsupported = unsupported, runCount = 0;
	for (int i = 0; i < 32; i++) algoCost[i] = i < ncost ? cost[i] : 1;
	advanceFn = NULL;
	if (driver && *driver && !(advanceFn = findAdvance(driver))) return -1;
	return 0;
}

/* hone_fake_cublaslt_runs copies up to n runs into out and returns how
   many there were. */
int hone_fake_cublaslt_runs(int *out, int n) {
	for (int i = 0; i < runCount && i < n; i++) out[i] = runs[i];
	return runCount;
}

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
	if (a->type != 14 || b->type != 14 || (c->type != 0 && c->type != 14) || d->compute != 68 || d->scale != 0)
		return NOT_SUPPORTED;
	*m = dl->rows, *n = dl->cols, *k = ac;
	return OK;
}

/* The fake's algorithm number i: a fingerprint of i, the shapes and the
   workspace it needs (1 MiB, or the preference's maximum when that is
   less). */
static void fingerprint(algo_t *al, const desc_t *d, const layout_t *a, const layout_t *b, const layout_t *c,
                        uint64_t ws, int i) {
	memset(al, 0, sizeof *al);
	al->data[0] = 0x4c74616c676f;
	al->data[1] = (uint64_t)i << 8 | (uint64_t)d->ta << 1 | (uint64_t)d->tb;
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
	int offered = requested < algoCount ? requested : algoCount;
	for (int i = 0; i < offered; i++) {
		memset(&res[i], 0, sizeof res[i]);
		res[i].workspaceSize = p->maxWorkspace < (1u << 20) ? p->maxWorkspace : (1u << 20);
		fingerprint(&res[i].algo, d, a, b, c, res[i].workspaceSize, i);
		res[i].wavesCount = 1;
	}
	*count = offered;
	return OK;
}

static double bf16(const void *p, long i) {
	unsigned u = (unsigned)((const unsigned short *)p)[i] << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* bf16round rounds f to bfloat16's bits, to nearest with ties to even, a
   NaN quiet with its sign: kernels.BF16 (fake_cublas.c's bf16). */
static unsigned short bf16round(float f) {
	unsigned u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (unsigned short)(u >> 16);
}

/* job is one product's arguments, copied at the call (the descriptors may
   be destroyed before the product runs in the deferred mode); split is the
   algorithm's number of K parts (1: one double sum); cbf16: C and D hold
   bfloat16 values. */
typedef struct {
	uint64_t m, n, k, split;
	int ta, tb, cbf16;
	long lda, ldb, ldc;
	float alpha, beta;
	const void *A, *B;
	const void *C;
	void *D;
} job_t;

static int runJob(void *p) {
	const job_t *j = p;
	uint64_t chunk = (j->k + j->split - 1) / j->split;
	for (uint64_t c = 0; c < j->n; c++)
		for (uint64_t i = 0; i < j->m; i++) {
			double sum = 0;
			float acc = 0;
			for (uint64_t l0 = 0; l0 < j->k; l0 += chunk) {
				double part = 0;
				for (uint64_t l = l0; l < j->k && l < l0 + chunk; l++)
					part += bf16(j->A, j->ta ? (long)l + (long)i * j->lda : (long)i + (long)l * j->lda) *
					        bf16(j->B, j->tb ? (long)c + (long)l * j->ldb : (long)l + (long)c * j->ldb);
				if (j->split <= 1 || j->k < 2) sum = part;
				else acc += (float)part;
			}
			if (j->split > 1 && j->k >= 2) sum = acc;
			long ci = (long)i + (long)c * j->ldc;
			float old = 0;
			if (j->beta != 0) old = j->cbf16 ? (float)bf16(j->C, ci) : ((const float *)j->C)[ci];
			float v = j->beta == 0 ? (float)(j->alpha * sum) : (float)(j->alpha * sum + j->beta * old);
			if (j->cbf16)
				((unsigned short *)j->D)[ci] = bf16round(v);
			else
				((float *)j->D)[ci] = v;
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
	int algo = (int)(al->data[1] >> 8);
	algo_t want;
	fingerprint(&want, d, a, b, c, al->data[7], algo);
	if (memcmp(&want, al, sizeof want) || algo >= algoCount) return INVALID_VALUE;
	if (algoUnsupported >> algo & 1) return NOT_SUPPORTED;
	if (wsSize < al->data[7] || (wsSize && !ws)) return INVALID_VALUE;
	if (stream) return NOT_SUPPORTED;
	job_t *j = malloc(sizeof *j);
	if (!j) return ALLOC_FAILED;
	*j = (job_t){.m = m, .n = n, .k = k, .split = (uint64_t)algo + 1, .ta = d->ta, .tb = d->tb, .cbf16 = c->type == 14, .lda = (long)a->ld,
	             .ldb = (long)b->ld, .ldc = (long)dl->ld, .alpha = *(const float *)alpha, .beta = *(const float *)beta,
	             .A = A, .B = B, .C = C, .D = D};
	if (runCount < (int)(sizeof runs / sizeof *runs)) runs[runCount] = algo * 2 + (C != D);
	runCount++;
	if (!submitFn) {
		runJob(j);
		free(j);
	} else if (submitFn(runJob, j)) {
		return 13; /* CUBLAS_STATUS_EXECUTION_FAILED */
	}
	return advanceFn ? (advanceFn(algoCost[algo]) ? 13 : OK) : OK;
}

static const char *names[] = {[0] = "CUBLAS_STATUS_SUCCESS", [1] = "CUBLAS_STATUS_NOT_INITIALIZED",
                              [3] = "CUBLAS_STATUS_ALLOC_FAILED", [7] = "CUBLAS_STATUS_INVALID_VALUE",
                              [13] = "CUBLAS_STATUS_EXECUTION_FAILED", [15] = "CUBLAS_STATUS_NOT_SUPPORTED"};

const char *cublasLtGetStatusName(cublasStatus_t s) {
	return s >= 0 && s < (int)(sizeof names / sizeof *names) && names[s] ? names[s] : "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasLtGetStatusString(cublasStatus_t s) { return cublasLtGetStatusName(s); }
