// Package cudafake stands in for the CUDA libraries in tests on machines
// without a GPU, in three ways:
//
//   - BuildLibs compiles C stand-ins for libcuda, libcublas and
//     libcublasLt (clib/*.c)
//     into shared libraries, so that the real run-time loader of
//     kernels/cuda and its calls through purego are exercised end to end:
//     symbol binding, argument passing, error names.
//   - Driver, BLAS and BLASLt implement kernels/cuda's Driver, BLAS and
//     BLASLt interfaces in Go, with device memory kept in Go slices, so that tests check buffer
//     bookkeeping, GEMM argument mapping and error paths, and inject
//     failures.
//   - NewEmulatedDriver is that Driver as an emulated device: its memory is
//     host memory at real addresses (mmap), managed memory included, and
//     its launches run kernels/cuda's own .cu kernels on the CPU in this
//     process, compiled by BuildEmulator with g++ through
//     kernels/cuda/cpushim/cuda_cpu.h and loaded with LoadEmulator.
//   - BuildEmulatingLibs joins the two: a libcuda.so.1 stand-in whose
//     memory is host memory, which loads the embedded PTX and runs the
//     same kernels on the CPU at each cuLaunchKernel, beside the C
//     libcublas stand-in, so that a whole command runs with --device cuda
//     through the real loader.
//
// The fake BLAS's column-major GEMM is written from the BLAS definition, not
// taken from cuBLAS (BLASLt's cublasLtMatmul computes the same product, so
// the two give the same bits with its default single algorithm; with
// BLASLt.SetAlgos, or the C stand-in's hone_fake_cublaslt_set_algos, its
// heuristic offers several, whose bits differ and whose runs cost what
// the test says on the stream's virtual clock, which CUDA events read:
// events.go); BuildLibs's C stand-in for libcuda runs one toy kernel only.
// Managed memory (MemAllocManaged) is host memory at a real address in every
// mode of the Go Driver.
package cudafake
