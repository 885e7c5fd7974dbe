// Test harness: launches one kernel of shim_kernels.cu, named by argv[1], on
// 2 blocks of 64 threads (with 256 bytes of dynamic shared memory for the
// dynamic_shared kernels), and prints its 2·4·64 outputs, one a line. A
// failed launch prints its message to stderr and exits 3.
#include "cuda_cpu.h"
#include "../mma.cuh"
#include "shim_kernels.cu"

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
	if (argc != 2) return 2;
	const struct {
		const char *name;
		void (*kernel)(float *);
		size_t shared;  // bytes of dynamic shared memory
	} kernels[] = {{"dynamic_shared", dynamic_shared, 256}, {"dynamic_shared_overrun", dynamic_shared_overrun, 256},
	               {"shuffles", shuffles}, {"shared_per_block", shared_per_block},
	               {"barrier_in_branch", barrier_in_branch}, {"barrier_two_places", barrier_two_places},
	               {"shuffle_in_branch", shuffle_in_branch}, {"shuffle_then_barrier", shuffle_then_barrier},
	               {"atomic_add", atomic_add}, {"wmma_product", wmma_product}, {"bf16_round", bf16_round},
	               {"wmma_in_branch", wmma_in_branch}, {"mma_product", mma_product},
	               {"ldmatrix_layout", ldmatrix_layout}, {"mma_in_branch", mma_in_branch},
	               {"race_block", race_block}, {"race_block_synced", race_block_synced},
	               {"race_warp", race_warp}, {"race_warp_synced", race_warp_synced},
	               {"race_after_barrier", race_after_barrier}, {"race_after_barrier_synced", race_after_barrier_synced},
	               {"race_after_atomic", race_after_atomic}, {"race_after_atomic_synced", race_after_atomic_synced},
	               {"race_after_shuffle", race_after_shuffle}, {"race_after_shuffle_synced", race_after_shuffle_synced}};
	std::vector<float> out(2 * 4 * 64);
	for (const auto &k : kernels) {
		if (strcmp(k.name, argv[1]) != 0) continue;
		std::string err = hone_cuda::launchShared(k.kernel, dim3(2), dim3(64), k.shared, out.data());
		if (!err.empty()) {
			fprintf(stderr, "%s\n", err.c_str());
			return 3;
		}
		for (float v : out) printf("%.9g\n", v);  // every float32 exactly
		return 0;
	}
	fprintf(stderr, "no kernel %s\n", argv[1]);
	return 2;
}
