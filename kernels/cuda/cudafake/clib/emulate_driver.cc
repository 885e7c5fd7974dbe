// A stand-in for libcuda.so.1 that runs Hone's real kernels on the CPU
// (cudafake.BuildEmulatingLibs): BuildEmulatingLibs puts before this text
// what BuildEmulator compiles (the shim header, every .cu file and
// clib/emulate.cc, whose entries table and call templates it uses). One
// device, "Emulated CUDA Device 0", of compute capability 9.0. Device and
// managed memory are host memory (aligned_alloc, filled with 0xff bytes so
// that a caller relying on fresh memory being zero sees NaNs). A module is
// the PTX text the caller hands cuModuleLoadData: it must be PTX for sm_90
// (".target sm_90"), cuModuleGetFunction finds a kernel only when the
// module's text has its ".entry" and the emulator has the same kernel
// compiled, and cuLaunchKernel runs the compiled kernel with as many
// parameters as the PTX entry declares. A launch the shim refuses (a
// divergent barrier or shuffle, dynamic shared memory) is
// CUDA_ERROR_LAUNCH_FAILED with the shim's message on stderr.
#include <cstdint>
#include <cstdlib>
#include <map>

namespace {

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

struct Module {
	std::string ptx;
};

struct Function {
	const Entry *entry;
	int nparams;
};

std::mutex driverMu;              // guards what follows
bool initialized;
std::map<uintptr_t, size_t> allocs;  // live allocations: address → bytes
std::map<Module *, bool> modules;
std::map<Function *, Module *> functions;

// allocIn gives n bytes (256-aligned, filled with 0xff so that reading
// memory never written shows) and records them in table.
CUresult allocIn(std::map<uintptr_t, size_t> &table, void **p, size_t n) {
	if (n == 0) return 1;
	size_t rounded = (n + 255) / 256 * 256;
	void *q = aligned_alloc(256, rounded);
	if (!q) return 2;
	memset(q, 0xff, rounded);
	std::lock_guard<std::mutex> lk(driverMu);
	table[uintptr_t(q)] = n;
	*p = q;
	return 0;
}

CUresult alloc(CUdeviceptr *p, size_t n) {
	void *q = nullptr;
	CUresult r = allocIn(allocs, &q, n);
	if (r == 0) *p = CUdeviceptr(uintptr_t(q));
	return r;
}

// inside reports whether [p, p+n) lies in one live allocation; driverMu is held.
bool inside(CUdeviceptr p, size_t n) {
	auto it = allocs.upper_bound(uintptr_t(p));
	if (it == allocs.begin()) return false;
	--it;
	return uintptr_t(p) + n <= it->first + it->second;
}

// params counts the parameters of entry name in ptx, or -1 when ptx has no
// such entry.
int params(const std::string &ptx, const char *name) {
	std::string head = std::string(".entry ") + name + "(";
	size_t at = ptx.find(head);
	if (at == std::string::npos) return -1;
	size_t end = ptx.find(')', at);
	int n = 0;
	for (size_t i = ptx.find(".param", at); i < end; i = ptx.find(".param", i + 1)) n++;
	return n;
}

}  // namespace

extern "C" {

long hone_fake_cuda_live(void) {
	std::lock_guard<std::mutex> lk(driverMu);
	return long(allocs.size());
}

CUresult cuInit(unsigned flags) {
	if (flags != 0) return 1;
	std::lock_guard<std::mutex> lk(driverMu);
	initialized = true;
	return 0;
}

CUresult cuDriverGetVersion(int *v) {
	*v = 13000;
	return 0;
}

CUresult cuDeviceGetCount(int *n) {
	if (!initialized) return 3;
	*n = 1;
	return 0;
}

CUresult cuDeviceGet(int *d, int ordinal) {
	if (!initialized) return 3;
	if (ordinal != 0) return 101;
	*d = 0;
	return 0;
}

CUresult cuDeviceGetName(char *name, int len, int d) {
	snprintf(name, size_t(len), "Emulated CUDA Device %d", d);
	return 0;
}

CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
	if (!initialized) return 3;
	if (d != 0) return 101;
	if (attr == 75) *v = 9;
	else if (attr == 76) *v = 0;
	else return 1;
	return 0;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) {
	if (d != 0) return 101;
	*ctx = reinterpret_cast<void *>(uintptr_t(0x1000));
	return 0;
}

CUresult cuDevicePrimaryCtxRelease_v2(int d) { return d == 0 ? 0 : 101; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx ? 0 : 201; }
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return alloc(p, n); }

// Only CU_MEM_ATTACH_GLOBAL (1) is accepted, as the backend asks for it.
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags) {
	if (flags != 1) return 1;
	return alloc(p, n);
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	std::lock_guard<std::mutex> lk(driverMu);
	auto it = allocs.find(uintptr_t(p));
	if (it == allocs.end()) return 1;
	allocs.erase(it);
	free(reinterpret_cast<void *>(uintptr_t(p)));
	return 0;
}

CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned v, size_t n) {
	std::lock_guard<std::mutex> lk(driverMu);
	if (!inside(p, 4 * n)) return 1;
	unsigned *q = reinterpret_cast<unsigned *>(uintptr_t(p));
	for (size_t i = 0; i < n; i++) q[i] = v;
	return 0;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	std::lock_guard<std::mutex> lk(driverMu);
	if (!inside(dst, n)) return 1;
	memcpy(reinterpret_cast<void *>(uintptr_t(dst)), src, n);
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	std::lock_guard<std::mutex> lk(driverMu);
	if (!inside(src, n)) return 1;
	memcpy(dst, reinterpret_cast<const void *>(uintptr_t(src)), n);
	return 0;
}

CUresult cuModuleLoadData(void **m, const void *image) {
	std::string ptx(static_cast<const char *>(image));
	if (ptx.find(".target sm_90") == std::string::npos) return 200;  // CUDA_ERROR_INVALID_IMAGE
	Module *mod = new Module{ptx};
	std::lock_guard<std::mutex> lk(driverMu);
	modules[mod] = true;
	*m = mod;
	return 0;
}

CUresult cuModuleUnload(void *m) {
	Module *mod = static_cast<Module *>(m);
	std::lock_guard<std::mutex> lk(driverMu);
	if (!modules.erase(mod)) return 400;
	for (auto it = functions.begin(); it != functions.end();) {
		if (it->second == mod) {
			delete it->first;
			it = functions.erase(it);
		} else {
			++it;
		}
	}
	delete mod;
	return 0;
}

CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
	Module *mod = static_cast<Module *>(m);
	std::lock_guard<std::mutex> lk(driverMu);
	if (!modules.count(mod)) return 400;
	int n = params(mod->ptx, name);
	if (n < 0) return 500;  // CUDA_ERROR_NOT_FOUND
	const Entry *e = nullptr;
	for (const Entry &x : entries)
		if (strcmp(x.name, name) == 0) e = &x;
	if (!e) {
		fprintf(stderr, "emulated libcuda: kernel %s is in the PTX but not in the emulator\n", name);
		return 500;
	}
	Function *fn = new Function{e, n};
	functions[fn] = mod;
	*f = fn;
	return 0;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **kparams, void **extra) {
	Function *fn = static_cast<Function *>(f);
	{
		std::lock_guard<std::mutex> lk(driverMu);
		if (!functions.count(fn)) return 400;
	}
	if (stream || extra) return 1;
	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024) return 1;
	int geom[7] = {int(gx), int(gy), int(gz), int(bx), int(by), int(bz), int(shared)};
	char msg[4096];
	if (hone_emu_launch(fn->entry->name, geom, kparams, fn->nparams, msg, int(sizeof msg)) != 0) {
		fprintf(stderr, "emulated libcuda: cuLaunchKernel %s: %s\n", fn->entry->name, msg);
		return 719;  // CUDA_ERROR_LAUNCH_FAILED
	}
	return 0;
}

struct ErrName {
	int code;
	const char *name, *text;
};

static const ErrName errs[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
};

CUresult cuGetErrorName(CUresult r, const char **s) {
	for (const ErrName &e : errs)
		if (e.code == r) {
			*s = e.name;
			return 0;
		}
	return 1;
}

CUresult cuGetErrorString(CUresult r, const char **s) {
	for (const ErrName &e : errs)
		if (e.code == r) {
			*s = e.text;
			return 0;
		}
	return 1;
}

// Page-locked host memory is host memory (aligned_alloc, 0xff bytes as
// device memory), kept apart from the device's allocations.
static std::map<uintptr_t, size_t> hostAllocs;

CUresult cuMemAllocHost_v2(void **p, size_t n) { return allocIn(hostAllocs, p, n); }

CUresult cuMemFreeHost(void *p) {
	std::lock_guard<std::mutex> lk(driverMu);
	auto it = hostAllocs.find(uintptr_t(p));
	if (it == hostAllocs.end()) return 1;
	hostAllocs.erase(it);
	free(p);
	return 0;
}

}  // extern "C"
