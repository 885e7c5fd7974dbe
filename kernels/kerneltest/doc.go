// Package kerneltest is the conformance suite for kernels.Backend
// implementations: Run(t, backend) checks every op, forward and backward,
// against kernels/ref on a sweep of edge shapes drawn from a seeded source,
// plus property checks that hold for any correct backend (log-softmax rows
// exponentiate to 1, logprobs ≤ 0, entropy in [0, log V], one AdamW step
// computed by hand, decode equals training attention on the same tokens).
//
// Comparison: an element passes when |got − want| ≤ tol·(|want| + rms(want)),
// so that a sum with cancellation is judged against the size of its buffer,
// not of one element. tol is F32Tol for float32 weights; ops taking bfloat16
// weights are compared with F32Tol against ref on the same bf16 values (the
// conversion is exact) and with BF16Tol against ref's float32 op on the
// unrounded weights (the dtype's own error). A backend computing in
// kernels.PrecisionBF16 is checked the same way on activations rounded to
// bfloat16 as the mode rounds them, and against float32 with the mode's
// loose bound (kernels.Precision.Tolerance). Its attention may run on
// bfloat16 operands too (CUDA's tensor-core kernels): then its lse is
// checked against ref on the rounded q, k, v at F32Tol, and out and the
// gradients at the mode's loose bound (attnForward). Its Matmul may run on
// TF32 tensor cores (CUDA's does): checked at the mode's loose bound.
//
// Backward ops are checked with gradient buffers that start non-zero, so a
// backend that overwrites instead of accumulating fails.
package kerneltest
