// Package cuda is the start of Hone's CUDA backend (issue #28): run-time
// bindings to the CUDA Driver API, cuBLAS and cuBLASLt, a device probe, device and
// managed buffers, row-major GEMMs on cuBLAS, module loading and kernel
// launch, and Backend: a kernels.Backend and kernels.Allocator whose
// buffers are CUDA managed memory (plain slices, valid on host and device)
// and whose ops run on the device (Ops' kernels, cuBLAS), each synchronized
// before it returns by default, or only queued in the stream-ordered mode
// (below; not yet run on a GPU). It ran on one H200 once (make gpu-check; figures in
// gpucheck/RESULTS.md): every hardware test and the model goldens passed.
// Its tests here use the fakes of kernels/cuda/cudafake, among them an emulated device whose managed memory
// is host memory and whose launches run the .cu kernels on the CPU
// in-process, on which Backend runs (backend_test.go; train/model runs its
// PyTorch model goldens on it, train/trainer LoRA AdamW steps). hone-train
// and hone-serve run on Backend with --device cuda (--cuda-attention calls
// SetAttentionKernel, --cuda-sync edges SetSyncEachOp(false)); their tests
// do so on cudafake.BuildEmulatingLibs's stand-in libraries.
//
// # Kernels
//
// Kernel sources are CUDA C++ beside this file (rmsnorm.cu: RMSNorm forward
// and backward; rope.cu: RoPE; swiglu.cu: SwiGLU (and geglu.cu: GeGLU),
// whose _set_bf16 backward also writes dgate and dup rounded to bfloat16
// for the bf16 precision's LinearBackwardBF16Rounded (kernels.DoutRounder;
// not run on a GPU yet), and whose forward_bf16, like rmsnorm.cu's, its
// output rounded for LinearForwardBF16Rounded (kernels.InputRounder; not
// run on a GPU yet); embedding.cu: embedding
// and its backward, deterministic without atomics (a rank sort of the
// ids, then one block per run of equal ids and column chunk summing its
// rows in token order: kernels/ref's sums bit for bit, run after run; the
// CPU shim checks it with its blocks in scrambled orders); adamw.cu: the AdamW step; elementwise.cu:
// add, scale, axpy; sumsquares.cu: SumSquares, a fixed-tree reduction in
// double, and SumSquaresSegments, the same sums for many segments of one
// allocation in one launch (not run on a GPU yet); sample.cu: kernels.RowChooser's ChooseRows (Backend.ChooseRows,
// choose.go), a decode step's tokens chosen where the logits live — each
// row split into chunks over several blocks (three launches: the chunks'
// max and argmax, their sums of exponentials, then one block a choice
// combining them in a fixed order) for the max and argmax, the
// log-sum-exp, and a draw by the inverse CDF of softmax(row/T) at a
// uniform the host drew, so that 4 values a row come back instead of the
// row (not run on a GPU yet; TestChooseRowsOnHardware times it against
// CopyToHost and the host's argmax, and against one block a row); softmax.cu: log-softmax and entropy over full rows;
// logprob.cu: the online logsumexp of the chunked logprob forward, whose
// chunks' logits and expect are cuBLAS GEMMs, and LogprobBackwardExpect;
// attention.cu: causal grouped-query attention over packed sequences, with
// a sliding window, over a KV cache (decode), and its backward without
// atomics, flash-attention style — key tiles in shared memory, an online
// softmax, f32 on CUDA cores); attention_tc.cu: the same training
// attention forward and backward on bf16 tensor cores (nvcuda::wmma
// m16n16k16, float accumulation; q, k, v, dout, P and dS rounded to
// bfloat16 as they enter a product, softmax and lse in float32), which Ops
// runs in the bf16 precision for head dims a multiple of 16 up to 128
// (attnTC; other dims, decode and the f32 precision run attention.cu);
// attention_fa2.cu: a second tensor-core training attention laid out as
// FlashAttention-2 (per-warp rows whose scores, P and output stay in
// fragments, double-buffered key/value tiles, δ precomputed once a call),
// the same rounding points, picked by Ops.SetAttentionKernel("tc2"); it has
// run only on the CPU shim so far, so attention_tc.cu stays the default
// until TestAttentionTC2OnHardware shows it correct and faster;
// attention_mma.cu: a third, FlashAttention-2 as its authors wrote it
// (mma.sync m16n8k16 on register fragments loaded with ldmatrix, mma.cuh,
// which cpushim emulates by the PTX ISA's fragment layouts; the softmax
// on the score accumulators, P from them into A fragments without shared
// memory), the same rounding points, picked by
// Ops.SetAttentionKernel("tc3"); "tc3k64" takes its forward's key and
// value tiles 64 keys at a time (attention_mma_forward_k64, FlashAttention-2's
// tile on sm_80/sm_90, in 68 KiB of dynamic shared memory: HONE_DYNAMIC_SHARED,
// which Kernel.Launch opts in past 48 KiB with cuFuncSetAttribute) and its
// backward's key and query tiles 64 at a time (84 KiB, the same bits); CPU
// shim only so far (TestAttentionTC3OnHardware checks both and times them against
// tc1, tc2 and gemm);
// attention_gemm.cu: the layout and row kernels of a third training
// attention of the bf16 precision, picked by
// Ops.SetAttentionKernel("gemm") (ops_attention_gemm.go): per (sequence, KV
// head) entry, q, k, v (and dout) gathered into dense bfloat16 operands
// padded to the longest sequence of their run (the sequences taken
// longest first), the G query heads of a KV head as extra rows; scores and, in the backward, dP and the products
// with P and dS as cublasGemmStridedBatchedEx calls (bf16 operands,
// float32 accumulation), one per row block of 128 positions over only the
// keys the block's rows see (the causal upper triangle and what a window
// hides are skipped: 43.75% fewer GEMM FLOPs at the 7B shape), dk and dv
// summed over the blocks with beta 1; a masked softmax writing P and lse,
// and the backward's row kernel writing P and dS; the results scattered
// back (dq, dk, dv accumulated); tc1's rounding points (the forward's P
// rounded normalized) and bounds, runs of entries whose largest row block
// fits a 1 GiB score scratch, tc1 only where one row block of one sequence
// does not (about 100k tokens at G = 7). It has
// run only on the CPU shim (its GEMMs from the BLAS definition) and the
// emulated device, so tc1 stays the default until
// TestAttentionGEMMOnHardware times it;
// attention_decode.cu: a decode step of many sequences at once, each over
// its own KV cache (AttentionDecodeBatch: an append kernel, then one
// attention launch whose grid covers every sequence and KV head; the
// caches reach it as a table of offsets, the op's int32 edge); with
// helpers in common.cuh and attention.cuh. Ops launches them on device
// buffers with a fixed geometry per op (its plan* functions). Their text is
// tested on the CPU by compiling it with g++ through cpushim/cuda_cpu.h (one
// fiber per CUDA thread on the launching OS thread, barriers, warp shuffles,
// an nvcuda::wmma emulation, divergent barriers, shuffles and wmma calls
// fail the launch) and running Ops' plans on kerneltest's
// conformance cases against kernels/ref (shim_test.go); built with
// -fsanitize=thread, the shim reports a shared-memory race that a missing
// __syncthreads or __syncwarp leaves, as racecheck does on a GPU, and the
// kernels run clean under it (shim_tsan_test.go); the same cases run
// on a device in the hardware tests (hardware_test.go), which passed on an
// H200 (gpucheck/RESULTS.md).
//
// `make ptx` compiles them ahead of time with nvcc (Debian's
// nvidia-cuda-toolkit 11.8) to PTX for compute_80 and compute_90, into ptx/,
// which is committed and embedded (ptx.go); Device.LoadKernels hands the
// driver the PTX for the device's compute capability, and the driver JITs
// it. TestPTXCurrent compiles the sources again and fails when the
// committed PTX differs, or when ptxas -arch=sm_80/sm_90 refuses a kernel or
// spills registers (internal/ptxbuild holds the nvcc and ptxas flags). The
// driver of an H200 (CUDA 13) JIT-compiled and ran the compute_90 PTX.
//
// # Loading
//
// The libraries are opened at run time with dlopen through purego (no cgo),
// so every binary builds and starts on a machine without CUDA; only Open
// looks for them. The driver is libcuda.so.1; cuBLAS is tried as
// libcublas.so.13, .12, .11, then libcublas.so — skipping the majors above
// the driver's own CUDA, whose libraries it cannot run — or taken from an
// explicit path (Options; the commands read HONE_LIBCUDA and
// HONE_LIBCUBLAS). What is missing (driver library, cuBLAS library, device)
// comes back as a *MissingError. cuBLASLt (libcublasLt of cuBLAS's own
// major, or Options.BLASLtLib) is optional and loaded only when Options.BLASLt asks:
// when it is missing the device opens anyway and keeps cublasGemmEx, and
// Device.HasBLASLt hands back the *MissingError. gorgonia.org/cu is not used on purpose: its package init
// calls cuInit and exits the process without a device, and it links
// libcublas.so.11 at build time.
//
// # Row-major GEMM on column-major cuBLAS
//
// Hone stores matrices row-major; cuBLAS reads them column-major. A
// row-major X[r,c] is, byte for byte, the column-major Xᵀ[c,r]. So the
// row-major product C = op(A)·op(B) (C [M,N]) is computed as the
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, which is one cuBLAS call with the
// operands swapped and the sizes M and N swapped:
//
//	gemm(opB, opA, m=N, n=M, k=K, B, ldb, A, lda, C, ldc=N)
//
// where opB is T when B is stored transposed ([N,K], ldb = K) and N
// otherwise ([K,N], ldb = N), and likewise opA with lda = M or K. No data
// moves; Matmul and MatmulBatched do this mapping.
//
// # Linear layers, the lm_head, and bfloat16 weights
//
// The Linear ops (ops_linear.go) and the chunked logprob ops
// (ops_logprob.go) are cuBLAS GEMMs on row-major operands with row strides
// and offsets (mm in gemmrows.go, mapped as above) around small kernels:
// linear.cu (the bias, its deterministic column-sum gradient, and the
// bfloat16 conversions), logprob_backward.cu (the logits' gradient of the
// chunked LogprobBackward, entropy term included, and
// LogprobBackwardExpectBF16); geglu.cu and misc.cu (add-scalar, copy,
// zero) are elementwise. The products on frozen bfloat16 weights run in the
// precision Ops.SetPrecision picks (kernels.Precision): exact, the weight
// rows widened to float32 a bounded chunk at a time (32 MiB of scratch)
// for cublasSgemm; or bf16, the float32 operand rounded to bfloat16
// (nearest even, as kernels.BF16) and multiplied by cublasGemmEx
// (CUDA_R_16BF operands, CUBLAS_COMPUTE_32F: tensor cores, float32
// accumulation). Their plans run on the CPU shim too (shim_linear_test.go,
// the GEMMs from the BLAS definition).
//
// # The bf16 linear GEMMs on cuBLASLt
//
// Ops.SetGEMMLibrary(GEMMCublasLt) (Backend.SetGEMMLibrary; modelbench
// --gemm cublaslt) runs the bf16 precision's linear-layer products on
// bfloat16 weights through cublasLtMatmul instead of cublasGemmEx
// (gemmlt.go): the same column-major arguments (gemmRows maps both), the
// descriptors (compute CUBLAS_COMPUTE_32F, scale CUDA_R_32F, the two
// transposes, one layout per operand) and an algorithm made once per
// shape, operand alignment and workspace and kept until Close (at most
// ltMaxPlans, 256, shapes: the packed token count changes from batch to
// batch; past that every plan is dropped), and a workspace of
// LtWorkspaceBytes (32 MiB) from Ops' scratch store (slot
// "gemmlt.workspace"). The algorithm is the fastest of the heuristic's
// first LtAutotuneCandidates (8), timed with CUDA events on the shape's
// own operands at its first call (Device.SetLtAutotune says what that
// costs, and why a bit-identical resume needs the autotune off,
// Ops.SetGEMMAutotune(1), the commands' default, or a
// table of choices covering every shape, Device.LtChoices and
// SetLtChoices); the
// first call's result is the chosen algorithm's, as every later call's. The preference says the operands'
// actual alignment (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES), so the
// heuristic does not pick an algorithm that needs 256-byte aligned
// pointers for a view at an offset. The enum values and struct layouts
// are cublasLt.h's (CUDA 11.8; api_lt.go says which stay the same in 12
// and 13). On the fakes (cudafake.BLASLt and clib/fake_cublaslt.c, which
// check the layouts against the operation, the algorithm against the
// descriptors and the workspace against what the algorithm needs) the
// linear ops and train/model's qwen2 golden give the same bits through
// either library (backend_lt_test.go, train/model's
// TestBF16LtCUDAEmulated); with several algorithms offered, each with its
// own bits and a cost on the events' virtual clock, the autotune keeps
// the cheapest and its bits (gemmlt_autotune_test.go). It has not run on a
// GPU: cublasGemmEx stays the default until TestGemmLtOnHardware and
// gpucheck's hone-7b-lt row have timed both. The chunked logprob ops, the GEMM attention's batched
// products and the f32 precision keep cuBLAS.
//
// # The LoRA products on TF32
//
// Backend.Matmul (train/model's LoRA products) is cublasSgemm, exact f32,
// in the f32 precision, bit for bit the same call as before. In the bf16
// precision, when its inner dimension K is at least TF32MinK (128), it is
// cublasGemmEx with float32 A, B and C and CUBLAS_COMPUTE_32F_FAST_TF32
// (Device.MatmulTF32): the tensor cores round the operands to TF32 (8
// exponent, 10 mantissa bits) as they enter the product and accumulate in
// float32; the operands and the LoRA weights stay float32 in memory. In the
// 7B step those are the gradients' products (DB += doutᵀ·u and DA += gᵀ·x
// with K = 8192 tokens, g = dout·B with K = the layer's outputs), which the
// H200 profile put at 168 µs a call on cublasSgemm. The rank-r products
// (out += u·Bᵀ, dx += g·A; K = r) move about as many bytes as they
// compute and stay exact, and with them the LoRA path's share of the
// logprobs: TF32 there too raised the emulated llama golden's bf16 logprob
// error from max 0.027 to 0.040, past PyTorch autocast's 0.029. TF32's
// relative rounding error is 2⁻¹¹ (nearest) or 2⁻¹⁰ (truncation), against
// bfloat16's 2⁻⁸, so the bf16 mode's tolerance class (BF16ComputeTol 2e-2,
// and the 5% its LoRA gradients are allowed against f32 compute) covers it:
// the emulated products stay within tf32Tol (3.9e-3, measured 0.4–1.1e-3;
// tf32_test.go) of f32, and the LoRA gradients of train/model's micro model
// over 160 tokens within 4.5e-4 (TestLoRAGradsTF32CUDAEmulated).
// MatmulBatched stays cublasSgemmStridedBatched (the step does not use
// it), and the CPU's bf16 mode keeps every LoRA product exact f32. The
// fakes emulate FAST_TF32 by rounding A and B to TF32, to nearest even
// (cudafake.RoundTF32, which says why that rounding), before their exact
// product. Not measured on hardware yet: TestLoRAMatmulTF32OnHardware
// times Sgemm against TF32 on the 7B step's LoRA shapes.
//
// # The LoRA backward of projections sharing an input
//
// Backend.LoRABackwardMany (kernels.LoRAManyBackwarder; ops_lora.go)
// runs the LoRA backward of q, k and v, and of gate and up, together: the
// g = dout·B of each into the columns of one [N, k·r] scratch, one DA
// product gᵀ·x over all of them (x read once, not once a projection; an
// axpy a projection adds its rows into DA, scaled there), and one dx
// product over the concatenated rank against the A's scaled into one
// [k·r, In] scratch (dx written once, not read and written again a
// projection). Each product keeps Backend.Matmul's TF32 rule for its K.
// In train/model's 7B step count (TestStepTraffic7B) that is 1.06 GB and
// one launch a layer less: 895.2 → 865.6 GB, 3028 → 3000 launches a step.
// DB += doutᵀ·u and g = dout·B still read dout twice (1.6 GB a layer):
// one pass would take a kernel of our own computing both. Not run on a
// GPU yet: TestLoRABackwardManyOnHardware compares and times it against
// the Matmuls one projection at a time on the 7B shapes.
//
// # The LoRA forward of projections sharing an input
//
// Backend.LoRAForwardMany (kernels.LoRAManyForwarder; ops_loraforward.go)
// is the forward's counterpart: the A's of q, k and v (of gate and up)
// copied side by side into one [k·r, In] scratch, one product u = x·Aᵀ
// over the concatenated rank (x read once, not once a projection), then
// per projection its u scaled out of that product's columns (scale_cols,
// elementwise.cu) and the rank-r product setting its output, onto which
// the base product adds (kernels.LinearAdderBF16). Every step rounds as
// LinearForward, Scale and Matmul one projection at a time do, so on the
// emulated device the bits are theirs; cuBLAS may sum the wider product
// in another order. In train/model's 7B step count (TestStepTraffic7B)
// that is 0.35 GB a layer less for 2 launches more (the A's copied):
// 698.8 → 689.0 GB and 2916 → 2972 launches a step, 478.0 → 464.9 GB
// bandwidth-bound (471.6 GB once the roofline gave the TF32 products,
// such as the DA products over x, their own peak; the x product here is
// exact cublasSgemm, compute-bound at float32's). Not run on a GPU yet:
// TestLoRAForwardManyOnHardware compares and times it against the ops one
// projection at a time on the 7B shapes.
//
// # The LoRA product first
//
// Backend.LinearForwardBF16ManyAdd (kernels.LinearAdderBF16;
// ops_linear.go) is LinearForwardBF16Many whose GEMMs take beta 1 for the
// outputs it adds onto (cublasGemmEx, cublasLtMatmul, or the f32
// precision's chunked cublasSgemm), then the bias. train/model's LoRA
// forward writes the rank-r product out = u·Bᵀ first (a Matmul with beta
// 0: out written, not read) and lets the base product add onto it, where
// it added u·Bᵀ onto the base product's out before (out read and written
// by a bandwidth-bound product with K = r). The bytes are the same — the
// base GEMM's epilogue now reads out — but that read is hidden behind a
// compute-bound product (K = C ≥ 896): in train/model's 7B step count
// (TestStepTraffic7B, whose roofline calls a launch bandwidth-bound when
// its bytes at 4 TB/s outlast its FLOPs at the peak) 1.63 GB a layer less
// is moved by bandwidth-bound launches, 658.2 → 612.7 GB a step, with the
// step's 2860 launches and 850.8 GB unchanged. The sums associate
// differently with a bias, ((u·Bᵀ + x·Wᵀ) + b) rather than ((x·Wᵀ + b) +
// u·Bᵀ): the last bits of q, k and v may move. Not run on a GPU yet:
// TestLinearForwardBF16ManyAddOnHardware compares and times both orders
// on the 7B shapes.
//
// # Inputs rounded by the op that writes them
//
// In the bf16 precision every product on bfloat16 weights rounds its
// float32 input to bfloat16 first (f32_to_bf16). Backend implements
// kernels.InputRounder: rmsnorm_forward_bf16 (rmsnorm.cu) and
// swiglu_forward_bf16 / geglu_forward_bf16 write their output and its
// rounding (bf16round.cuh, f32_to_bf16's bits) in one pass, and
// LinearForwardBF16Rounded (ops_linear.go) runs LinearForwardBF16's,
// LinearForwardBF16Many's or LinearForwardBF16ManyAdd's GEMMs and biases on
// that copy without the f32_to_bf16 pass: the same operands, so the same
// bits. train/model's training forward hands q, k, v and gate, up the
// normed input's copy and down the gated unit's: in its 7B step count
// (TestStepTraffic7B) 3 launches and 0.86 GB a layer less (the products
// no longer read h twice and act once as float32), 2860 → 2776 launches,
// 850.8 → 826.9 GB and 612.7 → 588.7 GB bandwidth-bound a step. The o
// projection still rounds the attention's output itself (the attention
// kernels write no copy). Not run on a GPU yet:
// TestInputRounderOnHardware compares the kernels and products with the
// unfused ones on the 7B shapes.
//
// # The residual add inside the norm
//
// Backend implements kernels.ResidualNormer: rmsnorm_forward_add
// (rmsnorm.cu, Ops.RMSNormForwardAdd) adds the attention's output into the
// residual stream and normalises the sum in one launch (and train/model's
// blocks leave the MLP's residual add to the next layer's input norm, or
// the final norm: Block.forward), each thread
// adding, storing and squaring its own columns in the order
// rmsnorm_forward squares them, so the sum, rstd, out and its bf16 copy
// are the bits of add followed by rmsnorm_forward(_bf16) (the shim test
// and train/model's TestAddNormCUDAEmulated check it bit for bit). The
// pair read the sum back right after writing it: 2 launches and 0.23 GB
// a 7B layer less (TestStepTraffic7B). Not run on a GPU yet:
// TestAddRMSNormOnHardware compares and times both on the 7B shape.
//
// # The down projection's LoRA A product inside the gated unit
//
// Backend implements kernels.GatedLoRAForwarder in the bf16 precision,
// for ranks up to GatedLoRAMaxRank: gated_lora.cu (Ops.GatedLoRAForward,
// ops_gatedlora.go) computes the gated unit's act from gate and up (the
// expression of gated.cuh that swiglu.cu and geglu.cu use), writes only
// its bf16 rounding, which the down projection's base product takes, and
// multiplies the float32 act by A on the way: u = scale·act·Aᵀ, exact
// float32 on CUDA cores, 16 ranks a pass. Unfused, act was written as
// float32 for that product alone, which read it back (LinearForward, then
// Scale): 1.24 GB and 2 launches a 7B layer less (TestStepTraffic7B).
// act's copy is the bits of swiglu_forward_bf16's; u is summed in the
// kernel's order (its header), not cuBLAS's, so its last bits move
// (train/model's TestGatedLoRACUDAEmulated bounds what that does to a
// step). Not run on a GPU yet: TestGatedLoRAOnHardware compares and
// times both ways on the 7B down projection.
//
// The backward likewise (kernels.GatedLoRABackwarder, ranks up to
// GatedLoRABackwardMaxRank): gated_lora.cu's backward kernels write the
// bf16 roundings of dgate and dup (swiglu_backward_set_bf16's bits) and
// add DA += round(g)ᵀ·round(act) on the way, a block owning 64 columns of
// DA and walking every row, so act's rounding is never stored for the DA
// product to read back: 0.62 GB and 2 launches a 7B layer less
// (TestStepTraffic7B). TestGatedLoRABackwardOnHardware compares and times
// both ways.
//
// # The o projection's dout rounded by the norm's backward
//
// Backend implements kernels.NormDoutRounder: rmsnorm_backward_bf16
// (rmsnorm.cu, Ops.RMSNormBackwardBF16) is rmsnorm_backward writing the
// bf16 rounding of each dinp value it accumulates. In a pre-norm block
// the gradient the post-attention norm's backward leaves is the o
// projection's dout, and train/model (Block.postNormBackward) hands its
// base product that copy (LinearBackwardBF16Rounded); the input norm's
// (and the final norm's) gradient is the down projection's dout of the
// block below, whose product writing dact as bf16 takes it
// (LinearBackwardBF16ToRounded, Block.backward). The same bits, 2
// launches and 0.23 GB a 7B layer less (TestStepTraffic7B). Not run on a
// GPU yet: TestRMSNormBackwardRoundedOnHardware compares and times them
// on the 7B shape.
//
// # The gate and up LoRA backward on bfloat16 douts
//
// Backend also implements kernels.LoRARoundedBackwarder in the bf16
// precision: LoRABackwardManyRounded (Ops.LoRABackwardManyBF16,
// ops_lora.go) is LoRABackwardMany with each dout given only as its
// bfloat16 rounding, the DB += doutᵀ·u and dout·B products on bfloat16
// operands (u and B rounded by f32_to_bf16 first, N·R and Out·R values)
// with float32 sums. train/model hands the gate and up projections' LoRA
// backward the copies of dgate and dup the gated backward writes for their
// base products (kernels.DoutRounder), and the gated backward then writes
// no float32 dgate and dup (swiglu_backward_set_bf16 and
// geglu_backward_set_bf16 with null float32 outputs): in the 7B step count
// (TestStepTraffic7B) 2.48 GB a layer less, all of it bandwidth-bound, for
// 4 launches more: 2776 → 2888 launches, 826.9 → 757.4 GB and 588.7 →
// 519.3 GB bandwidth-bound a step. This moves bits: those products' operands
// are rounded to bfloat16 where TF32 rounded them (K ≥ TF32MinK) or nothing
// did; on loraManyCases the adapter gradients move by 0.2–0.8% from
// LoRABackwardMany's on the float32 douts (TestLoRABackwardManyRounded),
// on the micro models' steps by at most 0.3% (train/model's
// TestLoRARoundedCUDAEmulated), within kernels.BF16ComputeTol. A pass
// whose every layer takes that path allocates no float32 dgate and dup
// either (train/model's Model.gatedGradsRounded): 1.24 GB less on the 7B
// shape at 8×1024 tokens. Not run on a GPU yet.
//
// Backend also implements kernels.LoRAInputRounder: MatmulBF16
// (Ops.MatmulBF16) is Matmul on bfloat16 operands, each given as float32
// (rounded by f32_to_bf16 first) or as bfloat16. The gated backward
// rewrites act, the down projection's input, as bfloat16 only (the
// _set_bf16 kernels' act_bf), and the down projection's DA += gᵀ·act
// multiplies it by g's rounding: 0.62 GB a 7B layer less for 1 launch
// more, 2888 → 2916 launches, 757.4 → 740.1 GB and 519.3 → 501.9 GB
// bandwidth-bound a step. The forward's LoRA updates keep float32
// operands: u from the inputs' roundings was tried and moved the micro
// llama's bf16 logprob error (0.0274 → 0.0319 max) past PyTorch
// autocast's (0.0291), TestBF16ComputeCUDAEmulated's bound.
//
// # dact in bfloat16
//
// Backend also implements kernels.DinpRounder: LinearBackwardBF16To and
// MatmulBF16To (Ops, ops_linear.go and ops_lora.go) are
// LinearBackwardBF16 and MatmulBF16 storing a bfloat16 C (cublasGemmEx
// with CUDA_R_16BF A, B and C and CUBLAS_COMPUTE_32F: float32 sums, beta
// on C's old values widened, one rounding on store; mm.CBF16; under
// GEMMCublasLt cublasLtMatmul with bfloat16 C and D layouts), and the gated units' _set_bf16
// kernels read dout as bfloat16 (dout_bf). train/model's MLP backward
// writes the down projection's input gradient dact [N, I] so, the LoRA
// product g·A first (g and A rounded, beta 0) and the base product adding
// onto it (beta 1), and the gated backward reads it: in the 7B step count
// (TestStepTraffic7B) 1.24 GB a layer less, 0.62 GB of it
// bandwidth-bound, for 2 launches more, 2860 → 2916 launches, 733.5 →
// 698.8 GB and 495.3 → 478.0 GB bandwidth-bound a step; and the pass
// holds dact in half the memory (Model.dactRounded: 310 MB less at 8×1024
// tokens). It moves bits: on the micro models' steps the LoRA gradients
// by at most 0.7% from those on the float32 dact (train/model's
// TestDactRoundedCUDAEmulated), within kernels.BF16ComputeTol. Not run on
// a GPU yet: TestDactBF16OnHardware times both on the 7B shape.
//
// # The normed input in bfloat16
//
// Backend also implements kernels.NormInputRounder in PrecisionBF16:
// RMSNormForwardBF16 is rmsnorm_forward_bf16 with a null out (only the
// rounding and rstd written, their bits with out), and
// LoRABackwardManyInputBF16 (Ops, ops_lora.go) is LoRABackwardMany or
// LoRABackwardManyBF16 with x given as bfloat16: g rounded into scratch
// (f32_to_bf16, slot "lora.gbf"), then the DA product on bfloat16
// operands, where the others read the float32 x through TF32.
// train/model's backward recomputes each block's normed input h so where
// the LoRA DA products of q, k, v and of gate, up are its only readers
// (Block.normAgain): in the 7B step count (TestStepTraffic7B) 0.23 GB a
// layer less, bandwidth-bound all of it, for 2 launches more, 2972 →
// 3028 launches, 689.0 → 682.5 GB and 471.6 → 465.1 GB bandwidth-bound a
// step. It moves bits: on loraManyCases the DA products by at most 0.9%
// from those on the float32 x (TestLoRABackwardManyInputBF16), on the
// micro models' steps the LoRA gradients by at most 0.35% (train/model's
// TestNormInputRoundedCUDAEmulated), within kernels.BF16ComputeTol. Not
// run on a GPU yet: TestNormInputBF16OnHardware times both on the 7B
// shape.
//
// # Scratch
//
// The ops that need device scratch of their own (the chunked logprob ops'
// logits chunk and state, SumSquares' partial sums, the bf16 linear
// layers' widened weight rows or rounded operand, tc2's δ, the GEMM
// attention's operands and scores, cuBLASLt's workspace) take it from a
// grow-only store in Ops (scratch.go): one cuMemAlloc buffer per purpose,
// reallocated only when a call needs more, held between calls and freed
// by Ops.Unload (Backend.Close). Device.Live counts it (Ops.ScratchLive,
// Backend.Scratch). An op holds the store until its launches are queued,
// so Ops stays safe to call from several goroutines. The price is memory
// held between calls that a per-call allocation gave back: each slot keeps
// the largest size asked of it — at the 7B LoRA bench's shape (8 × 1024
// tokens, bf16 compute) by the ops' formulas 512 MiB for the logprob's
// [N, 16384] logits block (DefaultLogprobChunk) and 296 MiB for the bf16
// linear's rounded [N, 18944] operand, the largest two (not measured on a
// device).
//
// # Threads
//
// A CUDA context is current per OS thread. Device locks the calling
// goroutine to its thread and makes the device's context current around
// every call into the libraries, and serialises calls with a mutex.
//
// # Host reads
//
// A host read of managed memory the device wrote migrates it page by page
// on faults, and the next kernel faults it back (issue #28: on an H200 the
// 0.5B decode at batch 32 spent about 10 ms a step on the host between ops,
// put down to reading the [32, 151936] logits so). Backend.CopyToHost
// (kernels.HostCopier) moves a buffer to host memory in one
// cuMemcpyDtoH_v2 instead, by DMA when the destination is page-locked
// memory from Backend.AllocHostF32 (cuMemAllocHost_v2); train/model's Step
// brings its logits over so, into page-locked memory it reuses step after
// step, and TestCopyToHostOnHardware times a host read against copies into
// Go memory and into page-locked memory.
//
// # Stream-ordered mode
//
// A synchronized op costs at least about 12 µs on an H200
// (gpucheck/RESULTS.md); a 7B training step runs a few thousand ops, a
// 0.5B decode step at batch 32 a few hundred. Backend.SetSyncEachOp(false)
// makes the ops only queue their work on the default stream; the backend
// waits where the host needs the device's results or where memory would
// be reused under a queued kernel (stream.go lists the points: CopyToHost,
// SumSquares and ChooseRows by their cuMemcpyDtoH (SumSquaresMany and
// SumSquaresSegments: one for many tensors; train/trainer's GradNorm and
// weight check use the latter over a flat adapter: one launch and one wait
// each instead of two launches and a wait a LoRA tensor, TestGradNormWaits), RowMax and ExpShift, frees and
// scratch growth, Close, and Synchronize, kernels.Synchronizer, which
// train/model's Forward and Backward and the Tensors of the model, the
// adapter and the optimizer call before the host touches the memory in
// place). An int32 edge's cuMemcpyHtoD from pageable memory waits for the
// stream before it copies (backend.go, edge), so overwriting an edge
// buffer is safe but costs a wait; the mode keeps four edge buffers and
// copies only values none of them holds (a pass's positions and offsets
// once, not once a layer). On the emulated device a LoRA training pass of
// the micro qwen2 model then waits twice instead of 224 times, and a
// decode step 10 times instead of 48 (train/model's
// TestStreamOrderedWaits: counted calls, not times). A running profile
// synchronizes every op in either mode. It has
// run only on the emulated device, in its deferred mode
// (cudafake.Driver.SetDeferred: launches, GEMMs and device memsets run
// only at the points where the CUDA driver documents that the host waits,
// so that a missing synchronization reads stale values): the model
// goldens, LoRA training steps and the engine's decode pass there
// (stream_test.go, train/model's cuda_stream_test.go, train/trainer's
// TestStepCUDAStreamOrdered, serve/engine's TestDecodeCUDAStreamOrdered);
// the default stays synchronizing each op until gpucheck's stream-ordered
// rows (hone-05b-decode-async, hone-7b-best) and
// TestGoldenCUDAOnHardwareStreamOrdered have run on a GPU.
package cuda
