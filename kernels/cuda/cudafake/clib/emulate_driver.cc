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
// parameters as the PTX entry declares, and its dynamic shared memory
// (the kernel's HONE_DYNAMIC_SHARED buffer): up to 48 KiB, or up to what
// cuFuncSetAttribute's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
// (8) allowed the function, at most the 227 KiB a block can opt in to
// (cuDeviceGetAttribute 97), else CUDA_ERROR_INVALID_VALUE. A launch the
// shim refuses (a divergent barrier or shuffle) is CUDA_ERROR_LAUNCH_FAILED
// with the shim's message on stderr.
//
// The deferred mode: when HONE_FAKE_CUDA_DEFERRED is set (to this
// library's path) in the environment of the process that calls cuInit,
// the device is asynchronous as cudafake.Driver's SetDeferred makes the
// Go emulator (deferred.go, whose rules these are): cuLaunchKernel (its
// parameter values copied at the call), the stand-in cuBLAS's and
// cuBLASLt's products (queued through hone_fake_cuda_submit, which they
// find by dlopen of that path) and cuMemsetD32 on device memory only queue
// their work and return; the queue runs, in order, at cuCtxSynchronize,
// cuMemcpyDtoH and cuMemcpyHtoD (before the copy), cuMemsetD32 on managed
// memory (before the memset), cuMemFree and cuModuleUnload. Managed memory
// is host memory, so a host read that no synchronization point came before
// sees the values from before the queued work. A queued launch that fails
// is reported by the synchronization point that runs it
// (CUDA_ERROR_LAUNCH_FAILED), and the work queued after it is dropped.
//
// Events read a virtual clock in milliseconds that only
// hone_fake_cuda_advance moves, on the stream (the stand-in cuBLASLt calls
// it with the cost of each product of its algorithms): cuEventRecord
// takes the clock's reading when it runs on the stream, so in the
// deferred mode an event is pending until a synchronization point
// (cuEventSynchronize among them) runs the queue up to it, and
// cuEventElapsedTime of a pending event is CUDA_ERROR_NOT_READY.
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace {

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

struct Module {
	std::string ptx;
};

struct Function {
	const Entry *entry;
	std::vector<int> sizes;  // bytes of each parameter, from the PTX entry
	unsigned maxDynamic;     // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
};

const unsigned sharedDefault = 48 << 10, sharedOptin = 227 << 10;

std::mutex driverMu;              // guards what follows
bool initialized;
std::map<uintptr_t, size_t> allocs;  // live allocations: address → bytes
std::map<Module *, bool> modules;
std::map<Function *, Module *> functions;
std::set<uintptr_t> managed;  // the allocations of cuMemAllocManaged

// The deferred mode's queue (deferred is set by cuInit from the
// environment). queueMu guards the queue; flush runs it outside driverMu.
bool deferred;
std::mutex queueMu;
std::vector<std::function<CUresult()>> queue;

// submit runs w now, or queues it in the deferred mode.
CUresult submit(std::function<CUresult()> w) {
	if (!deferred) return w();
	std::lock_guard<std::mutex> lk(queueMu);
	queue.push_back(std::move(w));
	return 0;
}

// flush runs the queued work in order and returns its first failure,
// dropping what was queued after it.
CUresult flush() {
	std::vector<std::function<CUresult()>> q;
	{
		std::lock_guard<std::mutex> lk(queueMu);
		q.swap(queue);
	}
	for (auto &w : q) {
		CUresult r = w();
		if (r != 0) return r;
	}
	return 0;
}

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

// isManaged reports whether p lies in an allocation of cuMemAllocManaged;
// driverMu is held.
bool isManaged(CUdeviceptr p) {
	auto it = allocs.upper_bound(uintptr_t(p));
	if (it == allocs.begin()) return false;
	--it;
	return uintptr_t(p) < it->first + it->second && managed.count(it->first) > 0;
}

// params reads the sizes of the parameters of entry name in ptx (.u64 8
// bytes, .u32 and .f32 4, the types the kernels' PTX declares) into sizes;
// false when ptx has no such entry or a parameter of another type.
bool params(const std::string &ptx, const char *name, std::vector<int> *sizes) {
	std::string head = std::string(".entry ") + name + "(";
	size_t at = ptx.find(head);
	if (at == std::string::npos) return false;
	size_t end = ptx.find(')', at);
	for (size_t i = ptx.find(".param", at); i < end; i = ptx.find(".param", i + 1)) {
		std::string t = ptx.substr(i + 6, 6);
		if (t == " .u64 " || t == " .s64 ") sizes->push_back(8);
		else if (t == " .u32 " || t == " .f32 " || t == " .s32 ") sizes->push_back(4);
		else {
			fprintf(stderr, "emulated libcuda: kernel %s: parameter type%s not handled\n", name, t.c_str());
			return false;
		}
	}
	return true;
}

}  // namespace

extern "C" {

long hone_fake_cuda_live(void) {
	std::lock_guard<std::mutex> lk(driverMu);
	return long(allocs.size());
}

// hone_fake_cuda_submit is how the stand-in cuBLAS and cuBLASLt put a
// product on the stream: run(arg) now, or, in the deferred mode, at the
// next synchronization point; arg is free'd after (or when dropped).
int hone_fake_cuda_submit(int (*run)(void *), void *arg) {
	std::shared_ptr<void> a(arg, free);
	return submit([run, a]() { return run(a.get()); });
}

CUresult cuInit(unsigned flags) {
	if (flags != 0) return 1;
	std::lock_guard<std::mutex> lk(driverMu);
	initialized = true;
	const char *d = getenv("HONE_FAKE_CUDA_DEFERRED");
	deferred = d && *d;
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
	else if (attr == 97) *v = int(sharedOptin);
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
CUresult cuCtxSynchronize(void) { return flush(); }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return alloc(p, n); }

// Only CU_MEM_ATTACH_GLOBAL (1) is accepted, as the backend asks for it.
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags) {
	if (flags != 1) return 1;
	CUresult r = alloc(p, n);
	if (r == 0) {
		std::lock_guard<std::mutex> lk(driverMu);
		managed.insert(uintptr_t(*p));
	}
	return r;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	if (CUresult r = flush()) return r;  // cuMemFree waits for the device
	std::lock_guard<std::mutex> lk(driverMu);
	auto it = allocs.find(uintptr_t(p));
	if (it == allocs.end()) return 1;
	allocs.erase(it);
	managed.erase(uintptr_t(p));
	free(reinterpret_cast<void *>(uintptr_t(p)));
	return 0;
}

// cuMemsetD32 on device memory is queued in the deferred mode; on managed
// memory it runs after the queued work, before it returns (fully
// synchronous on a Unified Memory region).
CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned v, size_t n) {
	bool onManaged;
	{
		std::lock_guard<std::mutex> lk(driverMu);
		if (!inside(p, 4 * n)) return 1;
		onManaged = isManaged(p);
	}
	auto set = [p, v, n]() -> CUresult {
		unsigned *q = reinterpret_cast<unsigned *>(uintptr_t(p));
		for (size_t i = 0; i < n; i++) q[i] = v;
		return 0;
	};
	if (onManaged) {
		if (CUresult r = flush()) return r;
		return set();
	}
	return submit(set);
}

// cuMemcpyHtoD from pageable memory: a stream sync before the copy.
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	{
		std::lock_guard<std::mutex> lk(driverMu);
		if (!inside(dst, n)) return 1;
	}
	if (CUresult r = flush()) return r;
	memcpy(reinterpret_cast<void *>(uintptr_t(dst)), src, n);
	return 0;
}

// cuMemcpyDtoH: after the work queued before it.
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	{
		std::lock_guard<std::mutex> lk(driverMu);
		if (!inside(src, n)) return 1;
	}
	if (CUresult r = flush()) return r;
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
	{
		std::lock_guard<std::mutex> lk(driverMu);
		if (!modules.count(mod)) return 400;
	}
	if (CUresult r = flush()) return r;  // its queued launches run first
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
	std::vector<int> sizes;
	if (!params(mod->ptx, name, &sizes)) return 500;  // CUDA_ERROR_NOT_FOUND
	const Entry *e = nullptr;
	for (const Entry &x : entries)
		if (strcmp(x.name, name) == 0) e = &x;
	if (!e) {
		fprintf(stderr, "emulated libcuda: kernel %s is in the PTX but not in the emulator\n", name);
		return 500;
	}
	Function *fn = new Function{e, sizes, sharedDefault};
	functions[fn] = mod;
	*f = fn;
	return 0;
}

// cuFuncSetAttribute of CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
// only (the kernels' static shared memory is not counted against the limit).
CUresult cuFuncSetAttribute(void *f, int attr, int value) {
	Function *fn = static_cast<Function *>(f);
	std::lock_guard<std::mutex> lk(driverMu);
	if (!functions.count(fn)) return 400;
	if (attr != 8 || value < 0 || unsigned(value) > sharedOptin) return 1;
	fn->maxDynamic = unsigned(value) > sharedDefault ? unsigned(value) : sharedDefault;
	return 0;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **kparams, void **extra) {
	Function *fn = static_cast<Function *>(f);
	{
		std::lock_guard<std::mutex> lk(driverMu);
		if (!functions.count(fn)) return 400;
		if (shared > fn->maxDynamic) {
			fprintf(stderr, "emulated libcuda: cuLaunchKernel %s: %u bytes of dynamic shared memory, more than the %u allowed\n",
			        fn->entry->name, shared, fn->maxDynamic);
			return 1;
		}
	}
	if (stream || extra) return 1;
	// What every device since compute capability 3.0 allows, as the driver
	// checks it: grid x up to 2^31-1, y and z up to 65535; block x and y up
	// to 1024, z up to 64, 1024 threads in all (in 64 bits: in 32 the
	// product wraps, 65536 x 65536 x 1 to 0).
	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return 1;
	if (gx > 0x7fffffffu || gy > 65535 || gz > 65535 || bx > 1024 || by > 1024 || bz > 64) return 1;
	if (uint64_t(bx) * by * bz > 1024) return 1;
	std::vector<int> geom = {int(gx), int(gy), int(gz), int(bx), int(by), int(bz), int(shared)};
	const char *name = fn->entry->name;
	int nparams = int(fn->sizes.size());
	if (!deferred) {
		char msg[4096];
		if (hone_emu_launch(name, geom.data(), kparams, nparams, msg, int(sizeof msg)) != 0) {
			fprintf(stderr, "emulated libcuda: cuLaunchKernel %s: %s\n", name, msg);
			return 719;  // CUDA_ERROR_LAUNCH_FAILED
		}
		return 0;
	}
	// The parameter values as they are now (cuLaunchKernel copies them):
	// one 8-byte slot each.
	std::vector<uint64_t> vals(fn->sizes.size());
	for (size_t i = 0; i < vals.size(); i++) memcpy(&vals[i], kparams[i], size_t(fn->sizes[i]));
	return submit([name, nparams, geom, vals]() mutable -> CUresult {
		std::vector<void *> ps(vals.size());
		for (size_t i = 0; i < vals.size(); i++) ps[i] = &vals[i];
		char msg[4096];
		if (hone_emu_launch(name, geom.data(), ps.data(), nparams, msg, int(sizeof msg)) != 0) {
			fprintf(stderr, "emulated libcuda: cuLaunchKernel %s (queued): %s\n", name, msg);
			return 719;  // CUDA_ERROR_LAUNCH_FAILED
		}
		return 0;
	});
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
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
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

// The stream's virtual clock (ms), moved and read only by work on the
// stream, which runs in order, and the events, shared with the work that
// records them so that destroying an event with its record still queued
// is safe.
struct Event {
	bool recorded = false, done = false;
	double at = 0;
};
static double clockMs;
static std::map<Event *, std::shared_ptr<Event>> events;

int hone_fake_cuda_advance(double ms) {
	return submit([ms]() -> CUresult {
		clockMs += ms;
		return 0;
	});
}

// Only CU_EVENT_DEFAULT (0) is accepted, as the backend asks for it.
CUresult cuEventCreate(void **e, unsigned flags) {
	if (!initialized) return 3;
	if (flags != 0) return 1;
	auto ev = std::make_shared<Event>();
	std::lock_guard<std::mutex> lk(driverMu);
	events[ev.get()] = ev;
	*e = ev.get();
	return 0;
}

CUresult cuEventRecord(void *e, void *stream) {
	std::shared_ptr<Event> ev;
	{
		std::lock_guard<std::mutex> lk(driverMu);
		auto it = events.find(static_cast<Event *>(e));
		if (it == events.end() || stream) return 400;
		ev = it->second;
		ev->recorded = true, ev->done = false;
	}
	return submit([ev]() -> CUresult {
		std::lock_guard<std::mutex> lk(driverMu);
		ev->done = true, ev->at = clockMs;
		return 0;
	});
}

// cuEventSynchronize runs the whole queue (a superset of the work before
// the event; the Go fake stops at the event).
CUresult cuEventSynchronize(void *e) {
	{
		std::lock_guard<std::mutex> lk(driverMu);
		if (!events.count(static_cast<Event *>(e))) return 400;
	}
	return flush();
}

CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
	std::lock_guard<std::mutex> lk(driverMu);
	auto s = events.find(static_cast<Event *>(start)), t = events.find(static_cast<Event *>(end));
	if (s == events.end() || t == events.end() || !s->second->recorded || !t->second->recorded) return 400;
	if (!s->second->done || !t->second->done) return 600;  // CUDA_ERROR_NOT_READY
	*ms = float(t->second->at - s->second->at);
	return 0;
}

CUresult cuEventDestroy_v2(void *e) {
	std::lock_guard<std::mutex> lk(driverMu);
	return events.erase(static_cast<Event *>(e)) ? 0 : 400;
}

}  // extern "C"
