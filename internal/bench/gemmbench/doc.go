// Command gemmbench measures the matrix products of kernels/cpu: SGEMM
// GFLOP/s of OpenBLAS (cgo) against gonum's pure-Go Sgemm on large squares
// and on the Qwen2.5-0.5B shapes (T×896 · 896×4864 for the MLP, T×896 ·
// 896×151936 for the output layer, the latter both as plain GEMM over
// 4096-column chunks and as the fused chunked LogprobForward), and a decode
// pass — every weight matrix of the 0.5B model applied to one token — with
// float32 against bfloat16 weights, as an upper bound on decode tokens/s.
// Section bf16 times the MLP product on a bfloat16 weight (forward and the
// backward to the activation) with float32 and with bf16 compute side by
// side, on each bfloat16 micro-kernel the CPU has (AMX, AVX512-BF16; one it
// lacks is named with why):
//
//	go run ./internal/bench/gemmbench --sections bf16
//
// It prints the BLAS environment it ran under (OPENBLAS_* variables,
// GOMAXPROCS) and never changes it: run every contender in one process, and
// unset variables in the command line if wanted, for all contenders alike.
//
// Each figure is the best of --reps timed runs after one warm-up (the
// machine is shared; the best run is the least disturbed one).
//
//	go run ./internal/bench/gemmbench --quick
//	go run ./internal/bench/gemmbench --reps 5 --decode-layers 24
package main
