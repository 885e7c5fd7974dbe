// Test harness: Hone's kernels (../*.cu) on the CPU through
// cpushim/cuda_cpu.h, driven by kernels/cuda's tests (shim_test.go).
//
// `kernels_main -list` prints the kernels it holds, one a line. Otherwise it
// reads launches from stdin, one after another until the end of its input
// (little endian, as Go's encoding/binary writes it), so that one process
// serves a whole test:
//
//	int32 len, the kernel's name (len bytes)
//	int32 grid x, y, z, block x, y, z, bytes of dynamic shared memory
//	int32 nargs, then per argument an int32 tag and its value:
//	  1 float32 array: int32 n, n values
//	  2 int32 array: int32 n, n values
//	  3 uint16 array: int32 n, n values
//	  4 int scalar: int32
//	  5 float scalar: float32
//	  6 null pointer
//	  7 the same memory as argument k: int32 k (an array argument before it)
//
// runs each, and answers each on stdout with an int32 status, an int32
// length and that many bytes of message, then, when the status is 0, every
// array argument (tags 1-3) in order as it is after the kernel. Each
// argument's tag must suit the kernel's parameter (float* an f32 array, int
// an int scalar, …). A failed launch is status 3 with the shim's message,
// and the next launch is read; bad input is status 2 and ends the process
// (exit 2), as the stream cannot be followed past it.
//
// A file that defines HONE_SHIM_KERNELS (a list of KERNEL(name) entries)
// and includes the sources of those kernels before including this one
// gets a harness of those kernels alone: the mutation tests build one a
// mutant, far quicker to compile than every kernel.
#include "cuda_cpu.h"
#ifndef HONE_SHIM_KERNELS
#include "../rmsnorm.cu"
#include "../rope.cu"
#include "../swiglu.cu"
#include "../embedding.cu"
#include "../attention_decode.cu"
#include "../adamw.cu"
#include "../elementwise.cu"
#include "../logprob_backward.cu"
#include "../geglu.cu"
#include "../misc.cu"
#include "../linear.cu"
#include "../softmax.cu"
#include "../logprob.cu"
#include "../attention.cu"
#include "../attention_tc.cu"
#include "../attention_fa2.cu"
#include "../attention_mma.cu"
#include "../attention_gemm.cu"
#include "../sumsquares.cu"
#include "../sample.cu"
#include "../gated_lora.cu"
#endif

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace {

struct Arg {
	int32_t tag = 0;
	std::vector<float> f;
	std::vector<int32_t> i;
	std::vector<uint16_t> u;
	int32_t iv = 0;
	float fv = 0;
	int32_t alias = -1;
};

void readAll(void *p, size_t n) {
	if (fread(p, 1, n, stdin) != n) throw std::runtime_error("short input");
}

template <class T>
T read() {
	T v;
	readAll(&v, sizeof v);
	return v;
}

template <class T>
void readArray(std::vector<T> &v) {
	int32_t n = read<int32_t>();
	if (n < 0) throw std::runtime_error("negative array length");
	v.resize(size_t(n));
	if (n > 0) readAll(v.data(), v.size() * sizeof(T));
}

// conv turns argument k into the kernel's parameter of type P.
template <class P>
P conv(std::vector<Arg> &args, size_t k) {
	Arg *a = &args[k];
	const std::string where = "argument " + std::to_string(k);
	if constexpr (std::is_pointer_v<P>) {
		using E = std::remove_cv_t<std::remove_pointer_t<P>>;
		if (a->tag == 6) return nullptr;
		if (a->tag == 7) a = &args[size_t(a->alias)];
		if constexpr (std::is_same_v<E, float>) {
			if (a->tag == 1) return a->f.data();
		} else if constexpr (std::is_same_v<E, int>) {
			if (a->tag == 2) return a->i.data();
		} else if constexpr (std::is_same_v<E, unsigned short>) {
			if (a->tag == 3) return a->u.data();
		}
		throw std::runtime_error(where + ": tag " + std::to_string(a->tag) + " does not suit the kernel's pointer parameter");
	} else if constexpr (std::is_same_v<P, int>) {
		if (a->tag == 4) return a->iv;
		throw std::runtime_error(where + ": the kernel wants an int");
	} else if constexpr (std::is_same_v<P, float>) {
		if (a->tag == 5) return a->fv;
		throw std::runtime_error(where + ": the kernel wants a float");
	} else {
		static_assert(std::is_pointer_v<P>, "a kernel parameter type the harness does not carry");
	}
}

template <class... P, size_t... I>
std::string launchIdx(void (*k)(P...), dim3 g, dim3 b, size_t shared, std::vector<Arg> &args, std::index_sequence<I...>) {
	return hone_cuda::launchShared(k, g, b, shared, conv<P>(args, I)...);
}

template <class... P>
std::string launchWith(void (*k)(P...), dim3 g, dim3 b, size_t shared, std::vector<Arg> &args) {
	if (args.size() != sizeof...(P))
		throw std::runtime_error(std::to_string(args.size()) + " arguments for a kernel of " + std::to_string(sizeof...(P)));
	return launchIdx(k, g, b, shared, args, std::index_sequence_for<P...>{});
}

struct Entry {
	const char *name;
	std::string (*run)(dim3, dim3, size_t, std::vector<Arg> &);
};

#define KERNEL(k) {#k, [](dim3 g, dim3 b, size_t s, std::vector<Arg> &a) { return launchWith(k, g, b, s, a); }}

const Entry kernels[] = {
#ifdef HONE_SHIM_KERNELS
    HONE_SHIM_KERNELS
#else
    KERNEL(rmsnorm_forward),
    KERNEL(rmsnorm_forward_bf16),
    KERNEL(rmsnorm_forward_add),
    KERNEL(rmsnorm_backward),
    KERNEL(rmsnorm_backward_bf16),
    KERNEL(rmsnorm_backward_dweight),
    KERNEL(rope_forward),
    KERNEL(rope_backward),
    KERNEL(rope_backward_set),
    KERNEL(swiglu_forward),
    KERNEL(swiglu_forward_bf16),
    KERNEL(swiglu_backward),
    KERNEL(swiglu_backward_set),
    KERNEL(swiglu_backward_set_bf16),
    KERNEL(embedding_forward),
    KERNEL(embedding_forward_bf16),
    KERNEL(embedding_backward),
    KERNEL(embedding_sort),
    KERNEL(attention_decode_append),
    KERNEL(attention_decode_batch),
    KERNEL(adamw),
    KERNEL(add),
    KERNEL(scale),
    KERNEL(axpy),
    KERNEL(scale_cols),
    KERNEL(logprob_dz),
    KERNEL(logprob_bwd_expect_bf16),
    KERNEL(geglu_forward),
    KERNEL(geglu_forward_bf16),
    KERNEL(geglu_backward),
    KERNEL(geglu_backward_set),
    KERNEL(geglu_backward_set_bf16),
    KERNEL(gated_lora_forward_swiglu),
    KERNEL(gated_lora_forward_geglu),
    KERNEL(gated_lora_backward_swiglu),
    KERNEL(gated_lora_backward_geglu),
    KERNEL(gated_lora_forward_swiglu_bf16in),
    KERNEL(gated_lora_forward_geglu_bf16in),
    KERNEL(gated_lora_backward_swiglu_bf16in),
    KERNEL(gated_lora_backward_geglu_bf16in),
    KERNEL(add_scalar),
    KERNEL(copy_f32),
    KERNEL(zero_f32),
    KERNEL(bias_forward),
    KERNEL(bias_backward),
    KERNEL(bf16_to_f32),
    KERNEL(f32_to_bf16),
    KERNEL(logsoftmax_forward),
    KERNEL(logsoftmax_backward),
    KERNEL(entropy_forward),
    KERNEL(entropy_backward),
    KERNEL(logprob_chunk),
    KERNEL(logprob_finish),
    KERNEL(expect_scale),
    KERNEL(logprob_expect),
    KERNEL(logprob_backward_expect),
    KERNEL(attention_forward),
    KERNEL(attention_backward_dq),
    KERNEL(attention_backward_dkdv),
    KERNEL(attention_tc_forward),
    KERNEL(attention_tc_backward_dq),
    KERNEL(attention_tc_backward_dkdv),
    KERNEL(attention_fa2_forward),
    KERNEL(attention_fa2_delta),
    KERNEL(attention_fa2_backward_dq),
    KERNEL(attention_fa2_backward_dkdv),
    KERNEL(attention_mma_forward),
    KERNEL(attention_mma_forward_k64),
    KERNEL(attention_mma_backward_dq),
    KERNEL(attention_mma_backward_dkdv),
    KERNEL(attention_mma_backward_dkdv_k64),
    KERNEL(attention_mma_backward_dq_k64),
    KERNEL(attention_gemm_gather),
    KERNEL(attention_gemm_scatter),
    KERNEL(attention_gemm_softmax),
    KERNEL(attention_gemm_dsoftmax),
    KERNEL(sum_squares_partial),  // double* parameters: listed, not driven (TestBackendSumSquares runs them)
    KERNEL(sum_squares_final),
    KERNEL(sum_squares_segments),
    KERNEL(choose_rows_max),  // listed, not driven: TestChooseRows runs the three through Backend.ChooseRows
    KERNEL(choose_rows_sum),  // double* parameters
    KERNEL(choose_rows),  // double* parameters
#endif
};

// readEOF reports whether stdin ends before the next launch.
bool readEOF() {
	int c = getc(stdin);
	if (c == EOF) return true;
	ungetc(c, stdin);
	return false;
}

void reply(int32_t status, const std::string &msg) {
	int32_t n = int32_t(msg.size());
	fwrite(&status, 4, 1, stdout);
	fwrite(&n, 4, 1, stdout);
	fwrite(msg.data(), 1, msg.size(), stdout);
}

// serveOne reads one launch, runs it and answers it; it returns false on
// bad input (answered with status 2).
bool serveOne() {
	std::vector<Arg> args;
	const Entry *entry = nullptr;
	dim3 grid, block;
	size_t shared = 0;
	try {
		std::string name(size_t(read<int32_t>()), '\0');
		readAll(name.data(), name.size());
		for (const Entry &e : kernels)
			if (name == e.name) entry = &e;
		if (!entry) throw std::runtime_error("no kernel " + name);
		int32_t geo[7];
		readAll(geo, sizeof geo);
		grid = dim3(geo[0], geo[1], geo[2]);
		block = dim3(geo[3], geo[4], geo[5]);
		if (geo[6] < 0) throw std::runtime_error("negative dynamic shared memory");
		shared = size_t(geo[6]);
		args.resize(size_t(read<int32_t>()));
		for (size_t k = 0; k < args.size(); k++) {
			Arg &a = args[k];
			a.tag = read<int32_t>();
			switch (a.tag) {
			case 1: readArray(a.f); break;
			case 2: readArray(a.i); break;
			case 3: readArray(a.u); break;
			case 4: a.iv = read<int32_t>(); break;
			case 5: a.fv = read<float>(); break;
			case 6: break;
			case 7:
				a.alias = read<int32_t>();
				if (a.alias < 0 || size_t(a.alias) >= k || args[size_t(a.alias)].tag < 1 || args[size_t(a.alias)].tag > 3)
					throw std::runtime_error("argument " + std::to_string(k) + ": alias of no array before it");
				break;
			default: throw std::runtime_error("argument " + std::to_string(k) + ": unknown tag " + std::to_string(a.tag));
			}
		}
		std::string err = entry->run(grid, block, shared, args);
		if (!err.empty()) {
			reply(3, err);
			return true;
		}
	} catch (const std::exception &e) {
		reply(2, std::string("kernels_main: ") + e.what());
		return false;
	}
	reply(0, "");
	for (const Arg &a : args) {
		if (a.tag == 1) fwrite(a.f.data(), 4, a.f.size(), stdout);
		if (a.tag == 2) fwrite(a.i.data(), 4, a.i.size(), stdout);
		if (a.tag == 3) fwrite(a.u.data(), 2, a.u.size(), stdout);
	}
	return true;
}

}  // namespace

int main(int argc, char **argv) {
	if (argc == 2 && strcmp(argv[1], "-list") == 0) {
		for (const Entry &e : kernels) printf("%s\n", e.name);
		return 0;
	}
	while (!readEOF()) {
		bool ok = serveOne();
		if (fflush(stdout) != 0) return 2;
		if (!ok) return 2;
	}
	return 0;
}
