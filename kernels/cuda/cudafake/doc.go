// Package cudafake stands in for the CUDA libraries in tests on machines
// without a GPU, in two ways:
//
//   - BuildLibs compiles C stand-ins for libcuda and libcublas (clib/*.c)
//     into shared libraries, so that the real run-time loader of
//     kernels/cuda and its calls through purego are exercised end to end:
//     symbol binding, argument passing, error names.
//   - Driver and BLAS implement kernels/cuda's Driver and BLAS interfaces in
//     Go, with device memory kept in Go slices, so that tests check buffer
//     bookkeeping, GEMM argument mapping and error paths, and inject
//     failures.
//
// Neither runs a CUDA kernel: what the fakes compute (the column-major GEMM)
// is written from the BLAS definition, not taken from cuBLAS.
package cudafake
