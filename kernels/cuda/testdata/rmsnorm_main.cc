// Test harness: rmsnorm.cu on the CPU through cpushim/cuda_cpu.h.
// stdin: int32 N, C, threads; float32 eps; inp [N*C]; weight [C] (little
// endian, as Go's encoding/binary writes them). stdout: out [N*C], rstd [N].
// A failed launch prints its message to stderr and exits 3.
#include "cuda_cpu.h"
#include "../rmsnorm.cu"

#include <cstdio>

static bool readAll(void *p, size_t n) { return fread(p, 1, n, stdin) == n; }

int main() {
	int32_t hdr[3];
	float eps;
	if (!readAll(hdr, sizeof hdr) || !readAll(&eps, sizeof eps)) return 2;
	const int N = hdr[0], C = hdr[1], threads = hdr[2];
	std::vector<float> inp(size_t(N) * C), weight(C), out(size_t(N) * C), rstd(N);
	if (!readAll(inp.data(), inp.size() * 4) || !readAll(weight.data(), weight.size() * 4)) return 2;
	std::string err = hone_cuda::launch(rmsnorm_forward, dim3(N), dim3(threads), out.data(), rstd.data(),
	                                    (const float *)inp.data(), (const float *)weight.data(), C, eps);
	if (!err.empty()) {
		fprintf(stderr, "%s\n", err.c_str());
		return 3;
	}
	fwrite(out.data(), 4, out.size(), stdout);
	fwrite(rstd.data(), 4, rstd.size(), stdout);
	return 0;
}
