// Package cpu is the fast CPU implementation of kernels.Backend.
//
// Matrix products go through one internal routine, sgemm (row-major,
// C = α·op(A)·op(B) + β·C with leading dimensions). Options.GEMM picks what
// runs it: by default a built-in blocked AVX-512 kernel in C (cgo, on CPUs
// with AVX-512F — OpenBLAS 0.3.21 does not know the newest CPUs and falls
// back to its SSE3 kernels on them, several times slower), else OpenBLAS's
// cblas_sgemm via cgo (Debian libopenblas-dev), else gonum's pure-Go Sgemm
// (CGO_ENABLED=0, or "gonum"). Every choice must pass kernels/kerneltest.
// Large products are split into blocks of rows or columns computed
// concurrently by the worker pool, each a single-threaded call
// (Options.SplitGEMM: automatic for the built-in kernel and for OpenBLAS
// running one thread; a multi-threaded OpenBLAS parallelises inside the
// call instead).
//
// What is built on sgemm:
//
//   - Linear layers: out[N,OC] = inp[N,C]·W[OC,C]ᵀ, backward as two GEMMs.
//   - Attention, per (sequence, head), in causal blocks of 64 query rows
//     that multiply only the keys they can see: S = scale·Q_h·K_gᵀ as a GEMM
//     over strided views (lda = H·D, ldb = KVH·D), a causal row softmax
//     (ExpShift's vectorised exp), out_h = P·V_g as another GEMM
//     (ldc = H·D). Backward recomputes P from the saved lse: P, dP = dO·Vᵀ
//     and dQ += dS·K by query blocks, then dV += Pᵀ·dO and dK += dSᵀ·Q by
//     key blocks, each over the queries that see them. Scratch is 2·T×T
//     floats per worker, never [H,T,T]. For a few queries (decode) heads are
//     split among the workers and scored with the matrix-vector kernels
//     instead, avoiding a BLAS call per head.
//   - Sliding-window attention (AttentionWindowForward/Backward, Gemma 3's
//     local layers): blocks of 64 queries of one sequence and kv head against
//     the keys the block can see, gathered into contiguous tiles, scored and
//     combined with Matmul, the masked softmax in Go; where no sequence is
//     longer than the window it is the causal attention above.
//   - The fused lm_head/log-softmax: logits of at most rowBlock rows ×
//     chunk vocabulary columns at a time, folded into a running max, Σexp
//     and Σexp·z per row (online logsumexp), so a 151,936-word vocabulary
//     never materialises as [N, V].
//
// Decode-sized products (at most 64 input rows, the LM head included) skip
// sgemm: the "rows" kernels read each weight row once for all inputs, in
// register tiles, float32 or bfloat16 weights widened in registers (C with
// AVX-512 or AVX2 as New finds the CPU, plain Go without cgo) — decode is
// memory bound, so half the bytes is nearly twice the speed. For more rows,
// the built-in AVX-512 GEMM reads bfloat16 weights itself, widening them as
// it packs its B panels; with OpenBLAS or gonum, bfloat16 weight tiles are
// widened into a scratch buffer and fed to sgemm.
//
// A LoRA update's products against its rank (at most 16) skip sgemm too,
// once the other two sides have 64 or more: x·Aᵀ and dout·B go to
// skinnyNT (rows of the big operand against the rank's rows, r vector
// sums a row), DB += doutᵀ·u and DA += gᵀ·x to skinnyTN (2·r column sums
// kept in registers down the long side), AVX-512 in C where the rows
// kernels have it, plain C or Go otherwise (skinny.go). The blocked GEMM
// padded the rank to its tile and repacked the big operand; these read it
// once.
//
// In the bf16 compute mode (Options.Compute = kernels.PrecisionBF16) every
// product with a frozen bfloat16 weight — LinearForwardBF16,
// LinearBackwardBF16's dinp, and the lm_head's logits, expect and dhidden
// products in the Logprob*BF16 ops — rounds its float32 operand to bfloat16
// (nearest even) and runs a blocked bfloat16 GEMM in C: operands packed as
// k-pairs, a 32×32 AMX micro-kernel (tdpbf16ps on 16×16 float32 tiles)
// where the CPU has AMX-BF16 and Linux grants the tile state, else a 12×32
// AVX512-BF16 one (vdpbf16ps, float32 accumulation), or on request a
// portable micro-kernel doing the same arithmetic in plain C for CPUs
// without the instructions (tests); Options.BF16Kernel forces one. The
// activation is rounded once per call into bfloat16 rows that the
// micro-kernel broadcasts from; only B is packed. Decode-sized products (8
// to 64 rows) skip packing: a 4×6-tile dot-product kernel reads the weight
// rows in place (on AMX, the weight rows are the A tiles and the rounded
// activation is packed as B instead); under 8 rows the float32 rows kernels
// run on the rounded activation. LoRA, attention, norms and the optimizer stay float32.
//
// Element-wise and row-wise ops (norms, RoPE, SwiGLU, softmax rows, AdamW)
// are split over rows by a small worker pool owned by the Backend value
// (Options.Workers goroutines, no globals); SwiGLU, RMSNorm's rows and the
// vocabulary softmax rows have AVX-512 forms under cgo, the rest is plain
// Go. Below
// Options.MinParallel units of work an op runs on the calling goroutine, so
// tiny ops pay no scheduling. RowMax and ExpShift (a sampler's softmax of
// one logits row) always run on the calling goroutine.
//
// New reads the CPU's instruction sets once and the Backend keeps them with
// the GEMM it picked: the package holds no state, so two backends with
// different Options run side by side, each as configured.
package cpu
