// The C entry point of the CUDA emulator (cudafake.BuildEmulator): runs one
// launch of a kernel of kernels/cuda on the CPU through cpushim/cuda_cpu.h.
// BuildEmulator puts before this text the shim header, every .cu file and
// HONE_KERNELS(X), which applies X to the name of every kernel.
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

namespace {

// callIdx unpacks cuLaunchKernel's parameter array: params[i] points at the
// value of the kernel's i-th parameter, whatever its type.
template <class... P, size_t... I>
std::string callIdx(void (*k)(P...), dim3 g, dim3 b, size_t shared, void **params, std::index_sequence<I...>) {
	return hone_cuda::launchShared(k, g, b, shared, *static_cast<P *>(params[I])...);
}

template <class... P>
std::string call(void (*k)(P...), int nparams, dim3 g, dim3 b, size_t shared, void **params) {
	if (nparams != int(sizeof...(P)))
		return std::to_string(nparams) + " parameters for a kernel of " + std::to_string(sizeof...(P));
	return callIdx(k, g, b, shared, params, std::index_sequence_for<P...>{});
}

struct Entry {
	const char *name;
	std::string (*run)(int, dim3, dim3, size_t, void **);
};

#define HONE_ENTRY(k) {#k, [](int n, dim3 g, dim3 b, size_t s, void **p) { return call(k, n, g, b, s, p); }},
const Entry entries[] = {HONE_KERNELS(HONE_ENTRY)};

// One launch at a time in the process: the shim's __shared__ arrays are
// static locals, one copy per kernel.
std::mutex launchMu;

}  // namespace

// hone_emu_launch runs kernel name on grid geom[0..2] × block geom[3..5]
// with geom[6] bytes of dynamic shared memory (HONE_DYNAMIC_SHARED). It
// returns 0, or 1 with a message in msg.
extern "C" int hone_emu_launch(const char *name, const int *geom, void **params, int nparams, char *msg, int msgLen) {
	std::lock_guard<std::mutex> lk(launchMu);
	std::string err;
	const Entry *e = nullptr;
	for (const Entry &x : entries)
		if (strcmp(x.name, name) == 0) e = &x;
	if (!e) {
		err = std::string("no kernel ") + name;
	} else if (geom[6] < 0) {
		err = "negative dynamic shared memory";
	} else {
		err = e->run(nparams, dim3(unsigned(geom[0]), unsigned(geom[1]), unsigned(geom[2])),
		             dim3(unsigned(geom[3]), unsigned(geom[4]), unsigned(geom[5])), size_t(geom[6]), params);
	}
	if (err.empty()) return 0;
	snprintf(msg, size_t(msgLen), "%s", err.c_str());
	return 1;
}

// hone_emu_kernels writes the kernels' names, one a line, into buf (at
// most n bytes) and returns the bytes written.
extern "C" int hone_emu_kernels(char *buf, int n) {
	std::string s;
	for (const Entry &x : entries) s += std::string(x.name) + "\n";
	int k = int(s.size()) < n ? int(s.size()) : n;
	memcpy(buf, s.data(), size_t(k));
	return k;
}
