/* A stand-in for libcuda.so.1 with the entry points kernels/cuda binds, for
   tests on machines without a GPU. "Device memory" is host memory from
   malloc; HONE_FAKE_CUDA_DEVICES (default 1) sets how many devices it
   reports (0: cuInit fails with CUDA_ERROR_NO_DEVICE, as the real driver
   does on a machine without a GPU). One kernel exists in any module whose
   image starts with "//fake": fill(float *p, float v, int n) sets
   p[i] = v for every i < n covered by the grid (one thread per element).
   Events read a virtual clock in milliseconds that only
   hone_fake_cuda_advance moves (the stand-in cuBLASLt calls it with the
   cost of each product of its algorithms, fake_cublaslt.c), so that what
   times work with events sees deterministic figures; everything here runs
   at the call, so an event completes when it is recorded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

static int initialized;
static int deviceOverride = -1; /* set by hone_fake_cuda_set_devices */
static long live;               /* allocations not yet freed */

static int devices(void) {
	if (deviceOverride >= 0) return deviceOverride;
	const char *s = getenv("HONE_FAKE_CUDA_DEVICES");
	return s ? atoi(s) : 1;
}

/* Test hooks, not part of the CUDA API: set the device count (a negative n
   goes back to the environment) and read the number of live allocations. */
void hone_fake_cuda_set_devices(int n) { deviceOverride = n; }
long hone_fake_cuda_live(void) { return live; }

/* hone_fake_cuda_set_stub(1) makes the library answer as the CUDA
   toolkit's link-time stub of libcuda (…/stubs/libcuda.so) does on a
   machine without the driver: CUDA_ERROR_STUB_LIBRARY (34) from cuInit
   and from cuGetErrorName and cuGetErrorString, which name nothing. */
static int stub;
void hone_fake_cuda_set_stub(int on) { stub = on; }

CUresult cuInit(unsigned flags) {
	if (stub) return 34;
	if (flags != 0) return 1;
	if (devices() == 0) return 100;
	initialized = 1;
	return 0;
}

/* The driver's CUDA version, 1000·major + 10·minor: 13.0 unless
   HONE_FAKE_CUDA_VERSION says another. */
CUresult cuDriverGetVersion(int *v) {
	const char *s = getenv("HONE_FAKE_CUDA_VERSION");
	*v = s ? atoi(s) : 13000;
	return 0;
}

CUresult cuDeviceGetCount(int *n) {
	if (!initialized) return 3;
	*n = devices();
	return 0;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	if (!initialized) return 3;
	if (ordinal < 0 || ordinal >= devices()) return 101;
	*d = ordinal;
	return 0;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	snprintf(name, (size_t)len, "Fake CUDA Device %d", d);
	return 0;
}

/* Compute capability 9.0 (attributes 75 and 76, major and minor) and
   227 KiB of shared memory a block can opt in to (97). */
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	if (!initialized) return 3;
	if (d < 0 || d >= devices()) return 101;
	if (attr == 75) *v = 9;
	else if (attr == 76) *v = 0;
	else if (attr == 97) *v = 227 << 10;
	else return 1;
	return 0;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
	*ctx = (void *)(uintptr_t)(0x1000 + d);
	return 0;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx ? 0 : 201; }
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	if (n == 0) return 1;
	void *q = malloc(n);
	if (!q) return 2;
	*p = (CUdeviceptr)(uintptr_t)q;
	live++;
	return 0;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	if (!p) return 1;
	free((void *)(uintptr_t)p);
	live--;
	return 0;
}

/* Managed memory is host memory here as well: only CU_MEM_ATTACH_GLOBAL (1)
   is accepted, as the backend asks for it. */
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags) {
	if (flags != 1) return 1;
	return cuMemAlloc_v2(p, n);
}

CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned v, size_t n) {
	if (!p) return 1;
	unsigned *q = (unsigned *)(uintptr_t)p;
	for (size_t i = 0; i < n; i++) q[i] = v;
	return 0;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	memcpy((void *)(uintptr_t)dst, src, n);
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return 0;
}

CUresult cuModuleLoadData(void **m, const void *image) {
	if (strncmp((const char *)image, "//fake", 6) != 0) return 200;
	*m = (void *)(uintptr_t)0x2000;
	return 0;
}

CUresult cuModuleUnload(void *m) { return m ? 0 : 400; }

CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
	if (!m) return 400;
	if (strcmp(name, "fill") != 0) return 500;
	*f = (void *)(uintptr_t)0x3000;
	return 0;
}

/* The fill kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8),
   up to the opt-in limit; fill uses no shared memory. */
CUresult cuFuncSetAttribute(void *f, int attr, int value) {
	if (f != (void *)(uintptr_t)0x3000) return 400;
	if (attr != 8 || value < 0 || value > 227 << 10) return 1;
	return 0;
}

/* launchable reports whether a launch is within what every device since
   compute capability 3.0 allows, which the driver checks
   (CUDA_ERROR_INVALID_VALUE past it): grid x up to 2^31-1, y and z up to
   65535; block x and y up to 1024, z up to 64, 1024 threads in all (the
   product taken in 64 bits: in 32 it wraps, 65536 x 65536 x 1 to 0). */
static int launchable(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz) {
	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return 0;
	if (gx > 0x7fffffffu || gy > 65535 || gz > 65535 || bx > 1024 || by > 1024 || bz > 64) return 0;
	return (unsigned long long)bx * by * bz <= 1024;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
	(void)shared; (void)stream; (void)extra;
	if (f != (void *)(uintptr_t)0x3000) return 400;
	if (!launchable(gx, gy, gz, bx, by, bz)) return 1;
	float *p = (float *)(uintptr_t)*(CUdeviceptr *)params[0];
	float v = *(float *)params[1];
	int n = *(int *)params[2];
	unsigned long long threads = (unsigned long long)gx * bx;
	for (unsigned long long i = 0; i < threads && i < (unsigned long long)n; i++) p[i] = v;
	return 0;
}

static const struct { int code; const char *name, *text; } errs[] = {
	{0, "CUDA_SUCCESS", "no error"},
	{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	{201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{600, "CUDA_ERROR_NOT_READY", "device not ready"},
};

static int lookup(CUresult r) {
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].code == r) return (int)i;
	return -1;
}

CUresult cuGetErrorName(CUresult r, const char **s) {
	if (stub) return 34;
	int i = lookup(r);
	if (i < 0) return 1;
	*s = errs[i].name;
	return 0;
}

CUresult cuGetErrorString(CUresult r, const char **s) {
	if (stub) return 34;
	int i = lookup(r);
	if (i < 0) return 1;
	*s = errs[i].text;
	return 0;
}

/* Page-locked host memory is host memory from malloc, counted as live. */
CUresult cuMemAllocHost_v2(void **p, size_t n) {
	if (n == 0) return 1;
	void *q = malloc(n);
	if (!q) return 2;
	*p = q;
	live++;
	return 0;
}

CUresult cuMemFreeHost(void *p) {
	if (!p) return 1;
	free(p);
	live--;
	return 0;
}

/* The stream's virtual clock (ms) and the events: CU_EVENT_DEFAULT (0)
   only, as the backend asks for it; an event never recorded has no time
   (CUDA_ERROR_INVALID_HANDLE from cuEventElapsedTime, as the driver). */
static double clockMs;
enum { EVENT_MAGIC = 0x45564e54 };
typedef struct { int magic, recorded; double at; } event_t;

int hone_fake_cuda_advance(double ms) {
	clockMs += ms;
	return 0;
}

CUresult cuEventCreate(event_t **e, unsigned flags) {
	if (!initialized) return 3;
	if (flags != 0) return 1;
	*e = calloc(1, sizeof **e);
	if (!*e) return 2;
	(*e)->magic = EVENT_MAGIC;
	live++;
	return 0;
}

CUresult cuEventRecord(event_t *e, void *stream) {
	if (!e || e->magic != EVENT_MAGIC) return 400;
	if (stream) return 400; /* the backend records on the default stream only */
	e->recorded = 1, e->at = clockMs;
	return 0;
}

CUresult cuEventSynchronize(event_t *e) { return e && e->magic == EVENT_MAGIC ? 0 : 400; }

CUresult cuEventElapsedTime(float *ms, event_t *start, event_t *end) {
	if (!start || start->magic != EVENT_MAGIC || !end || end->magic != EVENT_MAGIC) return 400;
	if (!start->recorded || !end->recorded) return 400;
	*ms = (float)(end->at - start->at);
	return 0;
}

CUresult cuEventDestroy_v2(event_t *e) {
	if (!e || e->magic != EVENT_MAGIC) return 400;
	e->magic = 0;
	free(e);
	live--;
	return 0;
}
