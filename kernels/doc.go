// Package kernels defines the compute operations Hone's transformer needs, as
// one interface, Backend, that the model (train/model) consumes and that each
// implementation (kernels/ref, kernels/cpu, kernels/cuda) satisfies.
//
// # Tensor conventions
//
// Buffers are plain []float32 (or []uint16 holding bfloat16 bits) owned by the
// caller; every op takes its sizes explicitly. Storage is row-major, the last
// index fastest. Names used once and everywhere:
//
//	N   rows = tokens (B sequences of T tokens, packed: N = Σ lengths)
//	C   channels (hidden size) of the input;  OC output channels
//	H   query heads;  KVH key/value heads (H % KVH == 0, GQA group H/KVH)
//	D   head dimension;  R = 2·len(invFreq) rotary dims (R ≤ D, R even)
//	V   vocabulary size
//
// Activations are token-major: x[N, C], q[N, H, D], k/v[N, KVH, D]. Weights
// use the PyTorch nn.Linear layout weight[OC, C] (out = inp·weightᵀ + bias),
// so Hugging Face checkpoint tensors are used as stored; the embedding table
// and lm_head are [V, C].
//
// # Argument order
//
// Forward:  outputs, saved activations, inputs and weights, then sizes.
// Backward: input gradients (named dX), the incoming gradient dout, saved
// activations, forward inputs and weights, then sizes.
//
// Backward ops ACCUMULATE into their gradient outputs (dX += …), as in
// llm.c: residual branches then need no extra add, and the caller zeroes the
// gradient buffers once per step. A gradient output may be nil when the caller
// does not need it (frozen weights under LoRA), where the op's doc says so.
// Where the model takes a gradient fresh, optional interfaces let a device
// backend write it instead of zeroing it and accumulating (GatedSetter,
// RoPESetter; the functions SwiGLUBackwardSet, GeGLUBackwardSet and
// RoPEBackwardSet zero and accumulate on the others, the same values), and
// LinearManyBF16er multiplies one input by several bfloat16 weights
// (LinearForwardBF16Many), LinearAdderBF16 adds those products onto
// outputs that hold the LoRA update already (whose rank-r product then
// writes them without reading them), DoutRounder's gated backward writes
// the bf16 roundings of dgate and dup that its LinearBackwardBF16Rounded
// multiplies, InputRounder's RMSNorm and gated forward write the bf16
// roundings of their outputs that its LinearForwardBF16Rounded
// multiplies, LoRAManyForwarder runs the LoRA forward of several
// projections of one input together (x read once for their x·Aᵀ
// products), and LoRAManyBackwarder runs the LoRA backward of several
// projections of one input together (x read once for their DA products,
// dx written once for their rank-r products), which LoRARoundedBackwarder
// runs on DoutRounder's bf16 roundings of their douts (so that the gated
// backward writes no float32 dgate and dup), and LoRAInputRounder's
// MatmulBF16 multiplies bfloat16 operands (the down projection's DA on the
// bf16 act the gated backward rewrites), and NormInputRounder's backward
// recompute of a block's normed input writes it as bf16 only, which its
// LoRABackwardManyInputBF16 takes for the DA products of q, k, v and of
// gate, up: on kernels/cuda each spares
// a pass over an activation, or moves it into a compute-bound GEMM
// (train/model's TestStepTraffic7B counts them).
// Forward ops overwrite their outputs, unless stated (beta in Matmul,
// LinearAdderBF16).
// Outputs must not alias inputs unless the op's doc allows it.
//
// # Errors
//
// Buffer lengths shorter than the sizes imply, negative sizes and token ids
// outside [0, V) are programming errors: ops panic with a message naming the
// op and the buffer (the gonum BLAS convention), they never read or write out
// of range silently. The model validates user input (token ids, configs)
// before it reaches a kernel.
//
// # Devices (the seam for CUDA)
//
// Buffers stay plain slices on every backend. A backend that can only reach
// memory it allocated itself implements Allocator (kernels/cuda: CUDA
// managed memory, whose addresses are valid on the host and on the GPU),
// and every float32 or bfloat16 buffer that reaches one of its ops comes
// from AllocF32 or AllocBF16 with that backend (make on ref and cpu, at no
// cost). Views are sub-slices, as everywhere.
//
// What holds now:
//   - train/model allocates through its backend everything an op sees: the
//     weights (one slab for the matrices, each norm weight, bias and RoPE
//     table), the activation slabs of passes (pooled; Pass.Release hands
//     one back), the LoRA scratch (g [N, R] of the LoRA backward, carved
//     from the pass's slab at the adapter's largest rank), Step's last rows
//     and logits (the same slab, on a HostCopier; else an allocation of
//     their own), and ContiguousCache's keys and values
//     (grown with Copy). Model.Close, FreeLogits and ContiguousCache.Close
//     and Truncate(seq, 0) give the memory back. Its hot path (Forward,
//     Backward, Step) touches activations, gradients, weights and the KV
//     cache only through Backend ops: copies and clears are Copy and Zero,
//     gathering rows is EmbeddingForward, Gemma's 1+w norm weights are
//     AddScalar.
//   - The LoRA adapter is placed on the model's backend (Adapter.Place,
//     Adapter.Free); ZeroGrad is Zero. train/trainer keeps the AdamW
//     moments there too (AdamW.Free), and computes the gradient norm and
//     the updated weights' NaN/Inf check with SumSquares (a non-finite
//     value makes the sum non-finite), so only those sums come back to the
//     host.
//   - serve/engine's KVCache allocates rows through the model's backend,
//     grows, forks and seeds them with Copy, and frees them on Free,
//     eviction and Close (when the engine's loop ends). serve/adapters
//     places each adapter it loads on the model's backend and frees a
//     step it drops once no request holds it (reference counted: the
//     engine's Request.Done releases it); the rest and the model are freed
//     by Server.Shutdown.
//   - kerneltest allocates the suite's and the goldens' buffers through
//     the backend under test, and kerneltest.Resident is a checking
//     backend (an Allocator over Go memory) whose ops panic, naming the op
//     and the argument, on a float32 or bfloat16 buffer outside its live
//     allocations (and CopyToHost on a destination inside one). The model's tests (every family's PyTorch goldens
//     included), a LoRA training step with the optimizer (train/trainer)
//     and continuous-batching decode with the KV cache (serve/engine) run
//     behind it and end with no allocation live.
//
// The edges stay host memory and are read or written by the host: token
// ids, positions, sequence offsets and targets ([]int32, which a device
// backend copies in itself), loading and saving weights and adapters,
// Forward's logprobs and entropies and Step's logits (read back: a
// backend that is a HostCopier copies them in one bulk transfer to host
// memory of its own, kernels/cuda with cuMemcpyDtoH into page-locked
// memory where a host read of managed memory would fault each page over;
// the sampler reads that copy; a backend that is a RowChooser, kernels/cuda,
// chooses greedy and plain temperature-sampled tokens where the logits
// live instead, serve/engine's decode then copying only the rows its host
// sampler needs, model.StepDevice leaving the logits in the backend's
// memory),
// Backward's incoming gradients (copied into the pass's memory first), and
// the sampler's rows: RowMax and ExpShift are the host's row ops and take
// any slice.
//
// A backend whose ops may return before the device has finished them
// (kernels/cuda stream-ordered) is a Synchronizer, and the host waits for
// it (Synchronize) before it reads or writes such memory in place: that
// happens at the end of train/model's Forward (Pass.Logprob and
// Pass.Entropy are read in place) and Backward (its copies of the incoming
// gradients are host writes; the adapter's gradients are readable on
// return), in the model's, the adapter's and train/trainer's optimizer's
// Tensors (loading, saving, filling and merging weights, the checkpoint's
// moments), Adapter.ToPEFT and Place, and Model.ToBF16. CopyToHost,
// SumSquares, SumSquaresMany (SumSquaresManyer: many tensors' sums with
// one wait) and SumSquaresSegments (SumSquaresSegmenter: many segments of
// one allocation, one launch and one wait, which train/trainer's gradient
// norm and weight check use over a flat adapter)
// order themselves after the queued ops; so do the backend's frees.
//
// Pure helpers that are not hot — RoPE inverse frequencies with llama3
// scaling (RoPEInvFreq), bfloat16 conversion — live in this package as plain
// functions.
package kernels
