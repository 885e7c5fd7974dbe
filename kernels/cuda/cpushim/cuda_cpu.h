// cuda_cpu.h: run the text of Hone's CUDA kernels on the CPU, for tests on
// machines without a GPU (issue #28). A test compiles a kernel's .cu file
// with g++ after this header and launches it with hone_cuda::launch.
//
// The model, and what it does not cover:
//   - one fiber (a ucontext with its own stack) per CUDA thread of a block,
//     all on the launching OS thread: a thread runs until it reaches a
//     barrier, a shuffle or its end, then the next one runs (in threadIdx
//     order). The blocks of a grid run one after another on the same fibers
//     (CUDA promises no order or concurrency between blocks, so a correct
//     kernel cannot tell), and the fibers and their stacks are kept for the
//     next launch: a launch makes no OS thread and no system call. On
//     x86-64 a switch between fibers saves and loads only what the ABI
//     says a call keeps (the callee-saved registers, the stack pointer,
//     MXCSR and the x87 control word: switchStacks), where glibc's
//     swapcontext also saves the signal mask with a system call each time;
//     elsewhere the fibers switch with swapcontext. A stack is 256 KiB with
//     a guard page below it;
//   - __shared__ is a static local: with one block running at a time, that
//     is one copy per block. Dynamic shared memory is declared with
//     HONE_DYNAMIC_SHARED(type, name) (common.cuh gives nvcc's extern
//     __shared__ form), not extern __shared__: here name is a pointer to
//     the launch's dynamic bytes (launchShared's sharedBytes), 16-byte
//     aligned, refilled with 0xff bytes before each block (a block that
//     reads what it did not write sees NaNs, never another block's
//     values), and ending where a PROT_NONE page begins, so that reading
//     or writing past the launch's bytes faults (exactly past them when
//     they are a multiple of 16; within the rounding up to 16 otherwise);
//   - __syncthreads() is a barrier over the block's threads, and the warp
//     shuffles (__shfl_sync, _up_, _down_, _xor_, full mask only) exchange
//     values through a per-warp buffer between two barriers over the warp's
//     lanes; warps are 32 lanes, the last one possibly partial;
//   - divergence fails loudly: a barrier or shuffle that not every thread of
//     its block or warp reaches (some finished the kernel, or wait elsewhere),
//     or that threads reach at different places in the source, stops the
//     launch and launch() returns a message naming the places. On a GPU the
//     same code is undefined behaviour that often returns wrong values;
//   - __syncwarp() is a barrier over the warp's lanes (full mask only);
//   - nvcuda::wmma (the m16n16k16 shapes with __nv_bfloat16 operands and a
//     float accumulator, what Hone's kernels use): every lane's fragment
//     holds the whole 16×16 tile (element (r, c) at x[16·r + c], so
//     num_elements is 256, not the device's 8), load/fill are done by each
//     lane, and load_matrix_sync, store_matrix_sync and mma_sync are warp
//     barriers like a shuffle (divergence fails the launch): mma_sync's
//     product is formed once per warp, by the first lane past the barrier,
//     and the other lanes copy it after checking their operands are the
//     same bits (a lane-dependent fragment is not emulated and fails the
//     launch). The k-sum runs in order in float after the accumulator's
//     value; the device's order is unspecified. __nv_bfloat16 is the upper
//     half of a float; __float2bfloat16_rn rounds to nearest even, as the
//     device does;
//   - the blocks run in order (x fastest), unless the environment sets
//     HONE_CUDA_SHIM_BLOCK_SEED to a nonzero integer: then each launch runs
//     them in a scrambled order drawn from it (BlockOrder), so that a test
//     can check a kernel does not depend on the order of its blocks (a
//     deterministic reduction: kernels/cuda's shim_test.go);
//   - no memory model: plain host memory, and the barriers order it;
//     atomicAdd (float) is atomic. Launches from several OS threads run one
//     at a time (a process-wide lock): the fibers and the __shared__
//     statics are the process's;
//   - a race detector, when the harness is built with -fsanitize=thread
//     (ThreadSanitizer; kernels/cuda's shim_tsan_test.go): each fiber is a
//     TSan fiber, and a switch between two CUDA threads orders nothing, so
//     two threads' accesses to the same memory, one a write, are reported
//     unless what orders them on a GPU orders them here: __syncthreads
//     (each thread releases at the barrier and acquires as it leaves it,
//     through an object of that barrier generation's parity) and
//     __syncwarp (the same over the warp's lanes). As the PTX ISA promises
//     ordering of bar.sync and bar.warp.sync only, a shuffle, wmma's calls,
//     mma.sync and ldmatrix wait for the warp but order no memory: code
//     that lets one of them stand for a __syncwarp is reported. atomicAdd
//     is a relaxed atomic (never reported against another atomicAdd, and
//     ordering nothing, as on a GPU). The shim's own state that passes
//     between fibers (barrier counters, shuffle and mma exchange slots, the
//     product mma_sync copies to the other lanes, threadIdx and blockDim,
//     the scheduler's fields) is hidden from TSan (Bookkeeping); the
//     kernel's accesses, ldmatrix's and wmma's loads and stores included,
//     are not (wmma's store is recorded for one lane an element, as a GPU
//     stores it). Not covered: the end of a block is ordered before the
//     next block starts (the blocks run one after another on the same
//     fibers, stacks and __shared__ statics), so races between blocks on
//     global memory are not detected. TSan judges the accesses that run,
//     whatever order the threads ran them in, so a race on a path the
//     test's shapes do not take is not seen, and it keeps the last four
//     accesses to an 8-byte word, so one of many threads' accesses to the
//     same word may be missed. __threadfence and the memory scopes are not
//     emulated (no kernel uses them).
#pragma once

#include <math.h>
#include <stdint.h>

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
// libtsan's annotations (no header declares them): while a fiber's count of
// Begins exceeds its Ends, its reads and writes are not recorded.
extern "C" void AnnotateIgnoreReadsBegin(const char *file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char *file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char *file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char *file, int line);
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct uint3 {
	unsigned x, y, z;
};

struct dim3 {
	unsigned x, y, z;
	dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;
constexpr int warpSize = 32;

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }

// __fmul_rn is a product rounded on its own (never fused into an add).
inline float __fmul_rn(float a, float b) {
	volatile float p = a * b;
	return p;
}

inline float __uint_as_float(unsigned u) {
	float f;
	std::memcpy(&f, &u, sizeof f);
	return f;
}

inline unsigned __float_as_uint(float f) {
	unsigned u;
	std::memcpy(&u, &f, sizeof u);
	return u;
}

// atomicAdd adds v to *addr atomically and returns the value before, as
// CUDA's does: the threads of a block run at once, so a scatter-add needs
// it here too (a compare-and-swap loop on the float's bits). Relaxed, as
// CUDA's atomicAdd is: it orders no other memory access, so under
// ThreadSanitizer it is atomic against another atomicAdd (never reported)
// but does not hide a missing barrier between the threads that call it.
inline float atomicAdd(float *addr, float v) {
	uint32_t *p = reinterpret_cast<uint32_t *>(addr);
	uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
	for (;;) {
		float f = __uint_as_float(old), sum = f + v;
		uint32_t bits;
		std::memcpy(&bits, &sum, sizeof bits);
		if (__atomic_compare_exchange_n(p, &old, bits, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return f;
	}
}

namespace hone_cuda {

// Diverged unwinds a thread out of its kernel once the launch has failed.
struct Diverged {};

// Bookkeeping, while it lives, hides the calling fiber's reads and writes
// from ThreadSanitizer (not its acquires and releases): the shim's own
// state that passes between fibers with no barrier between (the barrier
// counters, the exchange slots, the scheduler's fields, threadIdx and the
// other launch variables, which are one per OS thread here) would
// otherwise be reported as the kernel's races. Without TSan it is empty.
struct Bookkeeping {
#if defined(__SANITIZE_THREAD__)
	Bookkeeping() {
		AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
		AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
	}
	~Bookkeeping() {
		AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
		AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
	}
#else
	Bookkeeping() {}  // not trivial: g++ would call a guard unused
	~Bookkeeping() {}
#endif
	Bookkeeping(const Bookkeeping &) = delete;
	Bookkeeping &operator=(const Bookkeeping &) = delete;
};

// release and acquire order memory for ThreadSanitizer through the object
// at p, as a barrier or the end of a block orders it on a GPU; without TSan
// they are nothing (one OS thread runs every fiber in turn).
inline void release(void *p) {
#if defined(__SANITIZE_THREAD__)
	__tsan_release(p);
#else
	(void)p;
#endif
}
inline void acquire(void *p) {
#if defined(__SANITIZE_THREAD__)
	__tsan_acquire(p);
#else
	(void)p;
#endif
}

// Barrier counts the arrivals of its members (the block's threads, or one
// warp's lanes) at one place in the source.
struct Barrier {
	int members = 0;
	int arrived = 0;
	int finished = 0;  // members that returned from the kernel
	long generation = 0;
	const char *file = nullptr;
	int line = 0;
	std::string name;  // "__syncthreads", "warp 2 shuffle"
	// The objects ThreadSanitizer orders a generation through (release
	// and acquire): generation g's is sync[g % 2], so that a member already
	// at the next generation (it arrived last and ran on) does not hand its
	// later accesses to the members still leaving this one.
	uint64_t sync[2] = {};
};

#if defined(__x86_64__)
// Context is a suspended fiber, or the scheduler while a fiber runs: its
// stack pointer, below which switchStacks left what it restores.
struct Context {
	void *sp = nullptr;
};

// switchStacks suspends the caller into *save and resumes the context
// whose stack pointer is load: it pushes the registers the SysV ABI has a
// call keep (rbp, rbx, r12–r15) and MXCSR and the x87 control word, saves
// the stack pointer, and pops the other context's in reverse, returning
// where that one called switchStacks (or into fiberStart, for a new
// fiber). No system call: glibc's swapcontext saves and loads the signal
// mask with one on every switch, which was most of the emulated tests'
// time in the kernel.
__attribute__((naked, noinline)) inline void switchStacks(void ** /*save*/, void * /*load*/) {
	asm volatile(
	    "pushq %rbp\n\t"
	    "pushq %rbx\n\t"
	    "pushq %r12\n\t"
	    "pushq %r13\n\t"
	    "pushq %r14\n\t"
	    "pushq %r15\n\t"
	    "subq $8, %rsp\n\t"
	    "stmxcsr (%rsp)\n\t"
	    "fnstcw 4(%rsp)\n\t"
	    "movq %rsp, (%rdi)\n\t"
	    "movq %rsi, %rsp\n\t"
	    "ldmxcsr (%rsp)\n\t"
	    "fldcw 4(%rsp)\n\t"
	    "addq $8, %rsp\n\t"
	    "popq %r15\n\t"
	    "popq %r14\n\t"
	    "popq %r13\n\t"
	    "popq %r12\n\t"
	    "popq %rbx\n\t"
	    "popq %rbp\n\t"
	    "ret\n\t");
}

// fiberStart is where a new fiber's first switchStacks returns to: it
// calls r13 (fiberMain) with r12 (the fiber's thread number), which
// newContext put in the registers' slots; fiberMain never returns.
__attribute__((naked, noinline)) inline void fiberStart() {
	asm volatile(
	    "movq %r12, %rdi\n\t"
	    "callq *%r13\n\t"
	    "ud2\n\t");
}

// newContext makes c start fiberMain(t) on the stack [stack, stack+size)
// when first switched to: the frame switchStacks pops, with fiberStart as
// its return address and, after that return, the stack pointer 16-byte
// aligned as a call site needs it.
inline void newContext(Context &c, void *stack, size_t size, void (*fiberMain)(unsigned), unsigned t) {
	uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t(15);
	uint64_t *ret = reinterpret_cast<uint64_t *>(top - 24);  // ≡ 8 mod 16: after ret, rsp is aligned
	uint32_t mxcsr;
	uint16_t fpcw;
	asm volatile("stmxcsr %0" : "=m"(mxcsr));
	asm volatile("fnstcw %0" : "=m"(fpcw));
	ret[0] = reinterpret_cast<uint64_t>(&fiberStart);
	ret[-1] = 0;                                          // rbp
	ret[-2] = 0;                                          // rbx
	ret[-3] = t;                                          // r12: fiberMain's argument
	ret[-4] = reinterpret_cast<uint64_t>(fiberMain);      // r13
	ret[-5] = 0;                                          // r14
	ret[-6] = 0;                                          // r15
	ret[-7] = uint64_t(mxcsr) | uint64_t(fpcw) << 32;     // MXCSR, then the x87 control word
	c.sp = &ret[-7];
}

// switchContext suspends the caller into from and resumes to.
inline void switchContext(Context &from, Context &to) { switchStacks(&from.sp, to.sp); }
#else
// Context is a suspended fiber, or the scheduler while a fiber runs.
struct Context {
	ucontext_t uc;
};

// newContext makes c start fiberMain(t) on the stack [stack, stack+size)
// when first switched to.
inline void newContext(Context &c, void *stack, size_t size, void (*fiberMain)(unsigned), unsigned t) {
	getcontext(&c.uc);
	c.uc.uc_stack.ss_sp = stack;
	c.uc.uc_stack.ss_size = size;
	c.uc.uc_link = nullptr;  // fiberMain never returns
	makecontext(&c.uc, reinterpret_cast<void (*)()>(fiberMain), 1, t);
}

// switchContext suspends the caller into from and resumes to.
inline void switchContext(Context &from, Context &to) { swapcontext(&from.uc, &to.uc); }
#endif

// Fiber is one CUDA thread's context and stack, kept across blocks and
// launches.
struct Fiber {
	Context ctx;
	void *mem = nullptr;  // the mapping: a guard page, then the stack
	size_t size = 0;
	void *stack = nullptr;  // the stack's lowest address (above the guard page)
	uint3 idx{};                       // its threadIdx in the launch
	bool done = true;                  // returned from the kernel of this block
	const struct Barrier *on = nullptr;  // the barrier it waits at, or null
	long gen = 0;                        // on's generation when it came
#if defined(__SANITIZE_THREAD__)
	void *tsan = nullptr;  // its ThreadSanitizer fiber
#endif
};

// Sched runs the fibers of the process's launches, one launch at a time
// (under its lock), on the launching OS thread.
struct Sched {
	Context main;
	std::vector<std::unique_ptr<Fiber>> fibers;
	unsigned cur = 0;  // the fiber running
	void (*body)(void *, unsigned) = nullptr;  // runs the kernel as thread t
	void *arg = nullptr;
	std::mutex mu;  // held by the running launch
	// The dynamic shared memory of the running launch (setDynamic): bytes
	// at dyn, which end where the PROT_NONE page after dynMem's first
	// dynSize bytes begins.
	void *dynMem = nullptr;
	size_t dynSize = 0;
	unsigned char *dyn = nullptr;
	size_t dynBytes = 0;
#if defined(__SANITIZE_ADDRESS__)
	const void *mainBottom = nullptr;  // the launching thread's stack, for ASan
	size_t mainSize = 0;
#endif
#if defined(__SANITIZE_THREAD__)
	void *mainTsan = nullptr;  // the launching thread's ThreadSanitizer fiber
#endif
	// What orders (for ThreadSanitizer) the end of a block's threads before
	// the scheduler, and so before the next block and the launch's return.
	uint64_t grid = 0;
};

inline Sched *const sched = new Sched;  // never freed: fibers park in it between launches

// setDynamic makes s.dyn the launch's bytes of dynamic shared memory: the
// last bytes (rounded up to 16) before a PROT_NONE page, in a mapping kept
// for the next launches and grown when one asks for more. With 0 bytes,
// s.dyn is the guard page itself.
inline void setDynamic(Sched &s, size_t bytes) {
	const size_t page = size_t(sysconf(_SC_PAGESIZE)), rounded = (bytes + 15) / 16 * 16;
	if (s.dynMem == nullptr || rounded > s.dynSize) {
		if (s.dynMem != nullptr) munmap(s.dynMem, s.dynSize + page);
		const size_t size = (rounded + page - 1) / page * page;
		s.dynMem = mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (s.dynMem == MAP_FAILED) {
			s.dynMem = nullptr;
			throw std::bad_alloc();
		}
		s.dynSize = size;
		mprotect(static_cast<char *>(s.dynMem) + size, page, PROT_NONE);  // reading past the bytes faults
	}
	s.dyn = static_cast<unsigned char *>(s.dynMem) + s.dynSize - rounded;
	s.dynBytes = bytes;
}

// dynamicShared is the running block's dynamic shared memory
// (HONE_DYNAMIC_SHARED), and dynamicSharedBytes its size: the launch's.
inline void *dynamicShared() { return sched->dyn; }
inline size_t dynamicSharedBytes() { return sched->dynBytes; }

// toMain switches from the running fiber back to the scheduler.
inline void toMain() {
	Sched &s = *sched;
#if defined(__SANITIZE_THREAD__)
	// No order: a fiber's accesses reach the next fiber the scheduler
	// resumes only through a barrier or the end of the block.
	__tsan_switch_to_fiber(s.mainTsan, __tsan_switch_to_fiber_no_sync);
#endif
#if defined(__SANITIZE_ADDRESS__)
	void *fake = nullptr;
	__sanitizer_start_switch_fiber(&fake, s.mainBottom, s.mainSize);
	switchContext(s.fibers[s.cur]->ctx, s.main);
	__sanitizer_finish_switch_fiber(fake, &s.mainBottom, &s.mainSize);
#else
	switchContext(s.fibers[s.cur]->ctx, s.main);
#endif
}

// Block is the state the threads of the running block share.
struct Block {
	int running = 0;  // threads neither waiting at a barrier nor finished
	bool broken = false;
	std::string error;
	Barrier block;
	std::vector<Barrier> warps;
	std::vector<std::vector<uint64_t>> exchange;  // per warp, one slot per lane

	// WmmaSlot is a warp's mma_sync in progress: the barrier generation it
	// belongs to, the operands of the lane that formed the product (bytes),
	// and the product.
	struct WmmaSlot {
		long gen = -1;
		std::vector<unsigned char> in, out;
	};
	std::vector<WmmaSlot> wmma;  // per warp

	std::string where(const Barrier &b) const {
		return b.name + " at " + b.file + ":" + std::to_string(b.line);
	}

	// fail records the first failure and wakes every waiting thread.
	void fail(const std::string &msg) {
		if (!broken) {
			broken = true;
			error = msg;
		}
	}

	// stuck describes every barrier with threads waiting at it.
	std::string stuck() const {
		std::string s;
		if (block.arrived > 0) s += "; " + std::to_string(block.arrived) + " of " + std::to_string(block.members) + " threads wait at " + where(block);
		for (const Barrier &w : warps)
			if (w.arrived > 0) s += "; " + std::to_string(w.arrived) + " of " + std::to_string(w.members) + " lanes wait at " + where(w);
		return s;
	}

	// wait blocks the calling thread at b (reached at file:line) until all
	// of b's members arrive, or fails the launch on divergence. orders:
	// whether it orders the members' memory accesses (for ThreadSanitizer),
	// as bar.sync (__syncthreads) and bar.warp.sync (__syncwarp) do on a
	// GPU; a shuffle, wmma's calls, mma.sync and ldmatrix wait for the warp
	// but order no memory (the PTX ISA promises it only of the barriers).
	void wait(Barrier &b, const char *file, int line, bool orders) {
		Bookkeeping ignore;
		if (broken) throw Diverged{};
		if (b.arrived > 0 && (b.line != line || std::strcmp(b.file, file) != 0)) {
			fail("divergent " + b.name + ": reached at " + file + ":" + std::to_string(line) + " while others wait at " + b.file + ":" + std::to_string(b.line));
			throw Diverged{};
		}
		if (b.arrived == 0) {
			b.file = file;
			b.line = line;
		}
		if (b.finished > 0) {
			fail("divergent " + b.name + " at " + file + ":" + std::to_string(line) + ": " + std::to_string(b.finished) + " of " + std::to_string(b.members) + " members already returned from the kernel");
			throw Diverged{};
		}
		const long gen = b.generation;
		if (orders) release(&b.sync[gen & 1]);  // what this member did before the barrier
		if (++b.arrived == b.members) {
			b.arrived = 0;
			b.generation++;
			running += b.members - 1;  // the others can go on
			if (orders) acquire(&b.sync[gen & 1]);  // what every member did before it
			return;
		}
		running--;
		if (running == 0) {
			fail("divergent barriers: no thread can go on" + stuck());
			throw Diverged{};
		}
		Fiber &f = *sched->fibers[sched->cur];
		f.on = &b;
		f.gen = gen;
		toMain();  // the scheduler comes back when b's generation moved on, or the launch broke
		f.on = nullptr;
		if (broken && b.generation == gen) throw Diverged{};
		if (orders) acquire(&b.sync[gen & 1]);
	}

	// leave marks a thread of warp w finished.
	void leave(int w) {
		Bookkeeping ignore;
		running--;
		block.finished++;
		warps[w].finished++;
		if (broken) return;
		if (block.arrived > 0 || warps[w].arrived > 0) {
			fail("divergent barrier: a thread returned from the kernel while others wait" + stuck());
		} else if (running == 0 && !stuck().empty()) {
			fail("divergent barriers: no thread can go on" + stuck());
		}
	}
};

inline thread_local Block *current = nullptr;

inline unsigned flatThread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

inline void syncthreads(const char *file, int line) { current->wait(current->block, file, line, true); }

// shuffle is every warp shuffle: lane src(lane) of the caller's warp (or
// the caller itself when src returns a lane outside the warp).
template <class T, class Src>
T shuffle(unsigned mask, T v, Src src, const char *file, int line) {
	static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable<T>::value, "shuffle of a type the shim does not carry");
	Bookkeeping ignore;  // the exchange: the kernel's values, not its memory
	Block &b = *current;
	unsigned lane = flatThread() % warpSize, w = flatThread() / warpSize;
	Barrier &bar = b.warps[w];
	unsigned full = bar.members == 32 ? 0xffffffffu : (1u << bar.members) - 1;
	if ((mask & full) != full) {
		b.fail("shuffle at " + std::string(file) + ":" + std::to_string(line) + ": partial mask " + std::to_string(mask) + " is not emulated");
		throw Diverged{};
	}
	uint64_t slot = 0;
	std::memcpy(&slot, &v, sizeof v);
	b.exchange[w][lane] = slot;
	b.wait(bar, file, line, false);  // every lane has written
	int s = src(int(lane));
	if (s >= 0 && s < bar.members) std::memcpy(&v, &b.exchange[w][s], sizeof v);
	b.wait(bar, file, line, false);  // every lane has read
	return v;
}

// segment is the first lane of lane's width-wide segment.
inline int segment(int lane, int width) { return lane / width * width; }

template <class T>
T shfl(const char *f, int l, unsigned mask, T v, int srcLane, int width = warpSize) {
	return shuffle(mask, v, [&](int lane) { return segment(lane, width) + srcLane % width; }, f, l);
}
template <class T>
T shfl_up(const char *f, int l, unsigned mask, T v, unsigned delta, int width = warpSize) {
	return shuffle(mask, v, [&](int lane) { return lane - segment(lane, width) >= int(delta) ? lane - int(delta) : lane; }, f, l);
}
template <class T>
T shfl_down(const char *f, int l, unsigned mask, T v, unsigned delta, int width = warpSize) {
	return shuffle(mask, v, [&](int lane) { return lane - segment(lane, width) + int(delta) < width ? lane + int(delta) : lane; }, f, l);
}
template <class T>
T shfl_xor(const char *f, int l, unsigned mask, T v, int laneMask, int width = warpSize) {
	return shuffle(mask, v, [&](int lane) { int s = lane ^ laneMask; return segment(s, width) == segment(lane, width) ? s : lane; }, f, l);
}

// syncwarp is a barrier over the calling thread's warp.
inline void syncwarp(const char *file, int line) {
	Block &b = *current;
	b.wait(b.warps[flatThread() / warpSize], file, line, true);
}

// newBlock is the shared state of one block of n threads.
inline std::unique_ptr<Block> newBlock(unsigned n) {
	auto b = std::make_unique<Block>();
	b->running = int(n);
	b->block.members = int(n);
	b->block.name = "__syncthreads";
	unsigned nw = (n + warpSize - 1) / warpSize;
	b->warps = std::vector<Barrier>(nw);
	b->exchange.assign(nw, std::vector<uint64_t>(warpSize));
	b->wmma.resize(nw);
	for (unsigned w = 0; w < nw; w++) {
		b->warps[w].members = int(n - w * warpSize < unsigned(warpSize) ? n - w * warpSize : warpSize);
		b->warps[w].name = "warp " + std::to_string(w) + " shuffle";
	}
	return b;
}

// fiberMain is the life of a fiber: run the kernel as thread t of each
// block it is resumed for, then hand back to the scheduler.
inline void fiberMain(unsigned t) {
#if defined(__SANITIZE_ADDRESS__)
	__sanitizer_finish_switch_fiber(nullptr, &sched->mainBottom, &sched->mainSize);
#endif
	for (;;) {
		try {
			sched->body(sched->arg, t);
		} catch (const Diverged &) {
		}
		{
			Bookkeeping ignore;
			current->leave(int(t / warpSize));
			sched->fibers[t]->done = true;
		}
		release(&sched->grid);  // the scheduler acquires it when the block has ended
		toMain();
	}
}

constexpr size_t fiberStack = 256 << 10;

// fiber returns fiber t of s, made on first use.
inline Fiber &fiber(Sched &s, unsigned t) {
	while (s.fibers.size() <= t) {
		unsigned i = unsigned(s.fibers.size());
		auto f = std::make_unique<Fiber>();
		size_t page = size_t(sysconf(_SC_PAGESIZE));
		f->size = fiberStack + page;
		f->mem = mmap(nullptr, f->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (f->mem == MAP_FAILED) throw std::bad_alloc();
		mprotect(f->mem, page, PROT_NONE);  // a stack overflow faults
		f->stack = static_cast<char *>(f->mem) + page;
		newContext(f->ctx, f->stack, fiberStack, fiberMain, i);
#if defined(__SANITIZE_THREAD__)
		f->tsan = __tsan_create_fiber(0);
		__tsan_set_fiber_name(f->tsan, ("CUDA thread " + std::to_string(i) + " of the block (flat)").c_str());
#endif
		s.fibers.push_back(std::move(f));
	}
	return *s.fibers[t];
}

// resume runs fiber t of s until it waits or ends; threadIdx (one per OS
// thread) is the fiber's while it runs.
inline void resume(Sched &s, unsigned t) {
	s.cur = t;
	Fiber &f = *s.fibers[t];
	threadIdx = f.idx;
#if defined(__SANITIZE_THREAD__)
	// Ordered: the fiber sees what the scheduler did and saw (the launch's
	// arguments, the blocks that ended), never what another fiber did since.
	__tsan_switch_to_fiber(f.tsan, 0);
#endif
#if defined(__SANITIZE_ADDRESS__)
	void *fake = nullptr;
	__sanitizer_start_switch_fiber(&fake, f.stack, fiberStack);
	switchContext(s.main, f.ctx);
	__sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#else
	switchContext(s.main, f.ctx);
#endif
}

// Launch holds one launch's kernel and arguments, for the fibers.
template <class K, class Tuple>
struct Launch {
	K kernel;
	Tuple args;
	dim3 grid, block;
	unsigned long long index;  // of the block running

	static void run(void *p, unsigned t) {
		Launch &l = *static_cast<Launch *>(p);
		{
			Bookkeeping ignore;  // one blockDim (…) per OS thread, written by each fiber
			blockDim = l.block;
			gridDim = l.grid;
			unsigned long long i = l.index;
			blockIdx = {unsigned(i % l.grid.x), unsigned(i / l.grid.x % l.grid.y), unsigned(i / l.grid.x / l.grid.y)};
		}
		std::apply(l.kernel, l.args);
	}
};

// BlockOrder is the order a launch runs its n blocks in: the i-th block
// run is (a·i + b) mod n, a permutation since a is coprime to n. a = 1,
// b = 0 (in order) unless HONE_CUDA_SHIM_BLOCK_SEED is set; then a and b
// are drawn from the seed and the count of launches so far.
struct BlockOrder {
	unsigned long long a = 1, b = 0, n = 1;

	static unsigned long long seed() {
		static const unsigned long long s = [] {
			const char *v = getenv("HONE_CUDA_SHIM_BLOCK_SEED");
			return v ? strtoull(v, nullptr, 10) : 0ull;
		}();
		return s;
	}
	static unsigned long long mix(unsigned long long x) {  // splitmix64's finaliser
		x += 0x9e3779b97f4a7c15ull;
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
		return x ^ (x >> 31);
	}
	static unsigned long long gcd(unsigned long long x, unsigned long long y) {
		while (y) {
			unsigned long long t = x % y;
			x = y;
			y = t;
		}
		return x;
	}
	BlockOrder(unsigned long long blocks, unsigned long long launch) : n(blocks) {
		if (seed() == 0 || n < 2) return;
		const unsigned long long m = mix(seed() ^ mix(launch));
		a = 1 + m % (n - 1);
		while (gcd(a, n) != 1) a = a % (n - 1) + 1;
		b = mix(m) % n;
	}
	unsigned long long at(unsigned long long i) const {
		return (unsigned long long)(((unsigned __int128)a * i + b) % n);
	}
};

// launchShared runs kernel<<<grid, block, sharedBytes>>>(args...) and
// returns "" or what went wrong (a divergent barrier, a block too large),
// naming the block. The blocks run in turn (x fastest), each on the
// block's n fibers, which this OS thread switches between at barriers and
// shuffles until all n end; each block's HONE_DYNAMIC_SHARED buffer is
// sharedBytes of 0xff bytes when it starts.
template <class... Params, class... Args>
std::string launchShared(void (*kernel)(Params...), dim3 grid, dim3 block, size_t sharedBytes, Args... args) {
	const unsigned n = block.x * block.y * block.z;
	if (n == 0 || n > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0) return "launch: bad geometry";
	const unsigned long long blocks = (unsigned long long)grid.x * grid.y * grid.z;
	Sched &s = *sched;
	std::lock_guard<std::mutex> lk(s.mu);
	Bookkeeping ignore;  // the scheduler's: the kernel's accesses are the fibers'
#if defined(__SANITIZE_THREAD__)
	s.mainTsan = __tsan_get_current_fiber();
#endif
	setDynamic(s, sharedBytes);
	using L = Launch<void (*)(Params...), std::tuple<Args...>>;
	L l{kernel, std::tuple<Args...>(args...), grid, block, 0};
	s.body = &L::run;
	s.arg = &l;
	for (unsigned t = 0; t < n; t++) fiber(s, t).idx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
	static unsigned long long launches = 0;  // guarded by s.mu
	const BlockOrder order(blocks, launches++);
	for (unsigned long long k = 0; k < blocks; k++) {
		const unsigned long long i = order.at(k);
		l.index = i;
		if (sharedBytes > 0) memset(s.dyn, 0xff, sharedBytes);
		std::unique_ptr<Block> b = newBlock(n);
		current = b.get();
		for (unsigned t = 0; t < n; t++) {
			s.fibers[t]->done = false;
			s.fibers[t]->on = nullptr;
		}
		for (;;) {  // rounds over the fibers that can go on
			bool ran = false, left = false;
			for (unsigned t = 0; t < n; t++) {
				Fiber &f = *s.fibers[t];
				if (f.done) continue;
				left = true;
				if (f.on && f.on->generation == f.gen && !b->broken) continue;
				resume(s, t);
				ran = true;
			}
			if (!left) break;
			if (!ran) {  // wait() and leave() catch this first; a guard
				b->fail("divergent barriers: no thread can go on" + b->stuck());
			}
		}
		acquire(&s.grid);  // every thread of the block has ended
		if (b->broken) {
			unsigned x = unsigned(i % grid.x), y = unsigned(i / grid.x % grid.y), z = unsigned(i / grid.x / grid.y);
			std::string err = "block (" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + "): " + b->error;
			current = nullptr;
			return err;
		}
	}
	current = nullptr;
	return "";
}

// launch is launchShared without dynamic shared memory.
template <class... Params, class... Args>
std::string launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
	return launchShared(kernel, grid, block, 0, args...);
}

}  // namespace hone_cuda

// HONE_DYNAMIC_SHARED declares the launch's dynamic shared memory as name,
// an array of type (see the header's comment; nvcc's form is in common.cuh).
#define HONE_DYNAMIC_SHARED(type, name) type *const name = static_cast<type *>(hone_cuda::dynamicShared())

#define __syncthreads() hone_cuda::syncthreads(__FILE__, __LINE__)
#define __shfl_sync(...) hone_cuda::shfl(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) hone_cuda::shfl_up(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) hone_cuda::shfl_down(__FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) hone_cuda::shfl_xor(__FILE__, __LINE__, __VA_ARGS__)
#define __syncwarp(...) hone_cuda::syncwarp(__FILE__, __LINE__)

// __nv_bfloat16: the upper 16 bits of a float32.
struct __nv_bfloat16 {
	unsigned short bits;
};

// __float2bfloat16_rn rounds to nearest, ties to even (a NaN stays a quiet
// NaN), as the device and kernels.BF16 do.
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
	unsigned b = __float_as_uint(f);
	if ((b & 0x7fffffffu) > 0x7f800000u) return {(unsigned short)((b >> 16) | 0x40u)};
	b += 0x7fffu + ((b >> 16) & 1u);
	return {(unsigned short)(b >> 16)};
}

inline float __bfloat162float(__nv_bfloat16 h) { return __uint_as_float((unsigned)h.bits << 16); }

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

// fragment holds the whole 16×16 tile in every lane: element (r, c) at
// x[16·r + c] (see the header's comment). Only m16n16k16 is emulated.
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
	static_assert(M == 16 && N == 16 && K == 16, "the shim emulates m16n16k16 fragments only");
	static_assert(std::is_same<T, __nv_bfloat16>::value != std::is_same<Use, accumulator>::value,
	              "the shim emulates __nv_bfloat16 matrix_a/matrix_b and float accumulators");
	enum { num_elements = 256 };
	T x[256];
};

template <class Use, class T, class L>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, const T &v) {
	for (int e = 0; e < 256; e++) f.x[e] = v;
}

inline float widen(__nv_bfloat16 h) { return __bfloat162float(h); }
inline float widen(float f) { return f; }

// at waits at the warp barrier of the calling lane (reached at file:line).
inline void at(const char *file, int line) {
	hone_cuda::Block &b = *hone_cuda::current;
	b.wait(b.warps[hone_cuda::flatThread() / warpSize], file, line, false);
}

// load_matrix_sync of an operand: row_major reads (r, c) at p[r·ldm + c],
// col_major at p[c·ldm + r].
template <class Use, class L>
inline void load_matrix_sync_at(const char *file, int line, fragment<Use, 16, 16, 16, __nv_bfloat16, L> &f,
                                const __nv_bfloat16 *p, unsigned ldm) {
	static_assert(std::is_same<L, row_major>::value || std::is_same<L, col_major>::value, "an operand fragment needs a layout");
	at(file, line);
	for (int r = 0; r < 16; r++)
		for (int c = 0; c < 16; c++) f.x[16 * r + c] = std::is_same<L, row_major>::value ? p[r * ldm + c] : p[c * ldm + r];
}

// load_matrix_sync of an accumulator, in the layout given.
inline void load_matrix_sync_at(const char *file, int line, fragment<accumulator, 16, 16, 16, float> &f, const float *p,
                                unsigned ldm, layout_t layout) {
	at(file, line);
	for (int r = 0; r < 16; r++)
		for (int c = 0; c < 16; c++) f.x[16 * r + c] = layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
}

// store_matrix_sync: every lane stores the whole tile. Under
// ThreadSanitizer a lane's store of element e is recorded only when e ≡
// lane (mod the warp's lanes), as on a GPU one lane stores each element:
// the lanes' stores of the same values are not each other's races, but a
// read of the tile by another lane or warp must still be ordered after it.
inline void store_matrix_sync_at(const char *file, int line, float *p, const fragment<accumulator, 16, 16, 16, float> &f,
                                 unsigned ldm, layout_t layout) {
	at(file, line);
	auto store = [&](int mod, int lane) {
		for (int r = 0; r < 16; r++)
			for (int c = 0; c < 16; c++)
				if (mod == 1 || (16 * r + c) % mod == lane) (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[16 * r + c];
	};
#if defined(__SANITIZE_THREAD__)
	{
		hone_cuda::Bookkeeping ignore;
		store(1, 0);
	}
	store(hone_cuda::current->warps[hone_cuda::flatThread() / warpSize].members, int(hone_cuda::flatThread() % warpSize));
#else
	store(1, 0);
#endif
}

// mma_sync: d = a·b + c, float accumulation; formed once per warp (see the
// header's comment).
template <class LA, class LB>
inline void mma_sync_at(const char *file, int line, fragment<accumulator, 16, 16, 16, float> &d,
                        const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LA> &a,
                        const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LB> &b,
                        const fragment<accumulator, 16, 16, 16, float> &c) {
	hone_cuda::Block &blk = *hone_cuda::current;
	const unsigned w = hone_cuda::flatThread() / warpSize;
	hone_cuda::Barrier &bar = blk.warps[w];
	at(file, line);
	hone_cuda::Bookkeeping ignore;  // the warp's slot; the fragments are the lanes' own
	const long gen = bar.generation;  // this call's: the barrier cannot move on before every lane is past it
	std::vector<unsigned char> in(sizeof a.x + sizeof b.x + sizeof c.x);
	std::memcpy(in.data(), a.x, sizeof a.x);
	std::memcpy(in.data() + sizeof a.x, b.x, sizeof b.x);
	std::memcpy(in.data() + sizeof a.x + sizeof b.x, c.x, sizeof c.x);
	hone_cuda::Block::WmmaSlot &s = blk.wmma[w];
	if (s.gen == gen) {
		if (s.in != in) {
			blk.fail("mma_sync at " + std::string(file) + ":" + std::to_string(line) +
			         ": the lanes' fragments differ (a lane-dependent fragment is not emulated)");
			throw hone_cuda::Diverged{};
		}
		std::memcpy(d.x, s.out.data(), sizeof d.x);
		return;
	}
	float prod[256];
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++) {
			float acc = c.x[16 * i + j];
			for (int k = 0; k < 16; k++) acc += widen(a.x[16 * i + k]) * widen(b.x[16 * k + j]);
			prod[16 * i + j] = acc;
		}
	s.gen = gen;
	s.in = std::move(in);
	s.out.assign(reinterpret_cast<unsigned char *>(prod), reinterpret_cast<unsigned char *>(prod) + sizeof prod);
	std::memcpy(d.x, prod, sizeof d.x);
}

}  // namespace wmma
}  // namespace nvcuda

#define load_matrix_sync(...) load_matrix_sync_at(__FILE__, __LINE__, __VA_ARGS__)
#define store_matrix_sync(...) store_matrix_sync_at(__FILE__, __LINE__, __VA_ARGS__)
#define mma_sync(...) mma_sync_at(__FILE__, __LINE__, __VA_ARGS__)
