// Package cpu is the fast CPU implementation of kernels.Backend.
//
// Matrix products go through one internal routine, sgemm (row-major,
// C = α·op(A)·op(B) + β·C with leading dimensions), which is OpenBLAS's
// cblas_sgemm via cgo when the package is built with cgo (Debian
// libopenblas-dev; this is the only package of Hone that links C), and
// gonum's pure-Go Sgemm otherwise (CGO_ENABLED=0) or when Options.GEMM is
// "gonum". Both must pass kernels/kerneltest.
//
// What is built on sgemm:
//
//   - Linear layers: out[N,OC] = inp[N,C]·W[OC,C]ᵀ, backward as two GEMMs.
//   - Attention, per (sequence, head): S[Tq,Tk] = scale·Q_h·K_gᵀ as one GEMM
//     over strided views (lda = H·D, ldb = KVH·D), a causal row softmax in Go,
//     out_h = P·V_g as another GEMM (ldc = H·D). Backward recomputes P from
//     the saved lse and uses four GEMMs (dV += Pᵀ·dO, dP = dO·Vᵀ, dQ += dS·K,
//     dK += dSᵀ·Q). Scratch is Tq×Tk floats per call, never [H,T,T]. For a
//     few queries (decode) heads are split among the workers and scored with
//     the matrix-vector kernels instead, avoiding a BLAS call per head.
//   - The fused lm_head/log-softmax: logits of at most rowBlock rows ×
//     chunk vocabulary columns at a time, folded into a running max, Σexp
//     and Σexp·z per row (online logsumexp), so a 151,936-word vocabulary
//     never materialises as [N, V].
//
// bfloat16 weights: for a few rows (decode) a dedicated matrix-vector
// kernel reads the uint16 weights once and widens them in registers (C with
// AVX2/FMA under cgo when the CPU has them, plain Go otherwise) — decode is
// memory bound, so half the bytes is nearly twice the speed; for many rows,
// weight tiles are widened into a scratch buffer and fed to sgemm.
//
// Element-wise and row-wise ops (norms, RoPE, SwiGLU, softmax rows, AdamW)
// are plain Go split over rows by a small worker pool owned by the Backend
// value (Options.Workers goroutines, no globals); below Options.MinParallel
// units of work an op runs on the calling goroutine, so tiny ops pay no
// scheduling. sgemm is never called from pool workers: OpenBLAS has its own
// threads.
package cpu
