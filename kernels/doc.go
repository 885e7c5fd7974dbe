// Package kernels defines the compute operations Hone's transformer needs, as
// one interface, Backend, that the model (train/model) consumes and that each
// implementation (kernels/ref, kernels/cpu, later kernels/cuda) satisfies.
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
// Forward ops overwrite their outputs, unless stated (beta in Matmul).
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
// Plain slices are the simplest contract for a CPU. A CUDA backend needs
// device-resident buffers; the plan is a later Buffer type allocated by the
// backend (Alloc/Upload/Download) with the same op signatures taking Buffer
// instead of []float32. No Buffer type exists yet.
//
// What holds now: train/model's hot path (Forward, Backward, Step) touches
// activations, gradients, weights and the KV cache only through Backend ops.
// Copies and clears are Copy and Zero (the residual gradient, the gradient
// buffers backward ops accumulate into, new keys and values written into the
// cache); gathering rows is EmbeddingForward (each sequence's last hidden row
// in Step); Gemma's 1+w norm weights are AddScalar, its GeGLU is
// GeGLUForward/Backward and its sliding-window attention
// AttentionWindowForward/Backward. kerneltest checks each against ref.
//
// What the Buffer swap still has to carry, beyond changing the element type:
//   - Views. The model passes sub-slices everywhere: one slab carved into a
//     pass's buffers, xs[l] per layer, w.h[:N·C], a sequence's rows of q and
//     of the KV cache (k[start·KVD:]). A Buffer needs an offset view
//     (Slice(lo, hi)) that ops accept like a buffer of its own.
//   - Host-side allocations in the hot path: Linear.Backward's LoRA scratch
//     g [N, R], Step's last rows and logits, Model.hidden's returned rows.
//   - The edges, which stay host slices: token ids, positions, sequence
//     offsets and targets ([]int32 inputs); Forward's logprobs and entropies
//     and Step's logits (read back).
//   - The LoRA adapter's A, B and their gradients, host slices today:
//     Adapter.ZeroGrad clears them with Go's clear, and train/trainer sums
//     the gradient norm and checks the weights for NaN or Inf in Go loops
//     (AdamW and the clipping Scale are Backend ops already). Kept on a
//     device they need Zero and a norm / finiteness reduction op.
//   - The KV cache: model.Cache hands out []float32 (serve/engine's KVCache
//     and ContiguousCache grow and seed them with Go copies); on a device it
//     would hand out Buffers.
//
// Pure helpers that are not hot — RoPE inverse frequencies with llama3
// scaling (RoPEInvFreq), bfloat16 conversion — live in this package as plain
// functions.
package kernels
