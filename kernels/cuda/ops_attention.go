package cuda

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// The attention ops (attention.cu; attention_tc.cu in the bf16 precision):
// causal grouped-query attention over packed sequences, with an optional
// sliding window, its backward, and decode over a KV cache.

// attnRows and attnThreads are attention.cu's block: 16 rows, 8 threads a
// row; a row is a (query, head) pair of one KV head in the forward and dq,
// a key row of one KV head in dkdv. attnMaxD is the largest head dim its
// registers and tiles hold.
const (
	attnRows    = 16
	attnThreads = 128
	attnMaxD    = 256
)

// attnBlocks is the blocks of 16 rows that hold rows.
func attnBlocks(rows int) int { return (rows + attnRows - 1) / attnRows }

// planAttention is the forward of every attention op: Nq queries, query i
// at key position i + qoff, seeing the keys of its sequence (seqOff [S+1];
// S = 0 with a nil seqOff: one sequence from 0) within the last W. lse may
// be nil (decode). W is clamped to keys (≥ 1), which masks nothing more
// and keeps j + W from overflowing in the kernel.
func planAttention(out, lse, q, k, v, seqOff any, S, Nq, keys, H, KVH, D, W, qoff int, scale float32) []step {
	if Nq == 0 {
		return nil
	}
	return []step{{Kernel: "attention_forward", Grid: Dim3{attnBlocks(Nq * (H / KVH)), KVH, 1}, Block: Dim3{attnThreads, 1, 1},
		Args: []any{out, lse, q, k, v, seqOff, S, Nq, H, KVH, D, min(W, keys), qoff, scale}}}
}

// attnTCRows is attention_tc.cu's block: 64 rows ((query, head) pairs in
// the forward and dq, keys in dkdv); attnTCMaxD its largest head dim.
const (
	attnTCRows = 64
	attnTCMaxD = 128
)

// attnTC reports whether the attention of head dim D runs on
// attention_tc.cu's tensor-core kernels in precision p: in PrecisionBF16,
// for D a multiple of 16 up to 128. Other dims, and PrecisionF32, run
// attention.cu's float32 kernels; decode always does.
func attnTC(p kernels.Precision, D int) bool {
	return p == kernels.PrecisionBF16 && D%16 == 0 && D <= attnTCMaxD
}

// planAttentionTC is planAttention on attention_tc_forward: one block of
// 128 threads per 64 (query, head) rows of a KV head. D as attnTC wants.
func planAttentionTC(out, lse, q, k, v, seqOff any, S, Nq, keys, H, KVH, D, W, qoff int, scale float32) []step {
	if Nq == 0 {
		return nil
	}
	rows := Nq * (H / KVH)
	return []step{{Kernel: "attention_tc_forward", Grid: Dim3{(rows + attnTCRows - 1) / attnTCRows, KVH, 1}, Block: Dim3{128, 1, 1},
		Args: []any{out, lse, q, k, v, seqOff, S, Nq, H, KVH, D, min(W, keys), qoff, scale}}}
}

// planAttentionBackwardTC is planAttentionBackward on attention_tc.cu:
// attention_tc_backward_dq, one block of 256 threads per 64 (query, head)
// rows of a KV head, then attention_tc_backward_dkdv, one per 64 key rows
// and KV head; deterministic (no atomics) like the float32 pair.
func planAttentionBackwardTC(dq, dk, dv, dout, out, lse, q, k, v, seqOff any, S, N, H, KVH, D, W int, scale float32) []step {
	if N == 0 {
		return nil
	}
	W = min(W, N)
	rows := N * (H / KVH)
	return []step{
		{Kernel: "attention_tc_backward_dq", Grid: Dim3{(rows + attnTCRows - 1) / attnTCRows, KVH, 1}, Block: Dim3{256, 1, 1},
			Args: []any{dq, dout, out, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale}},
		{Kernel: "attention_tc_backward_dkdv", Grid: Dim3{(N + attnTCRows - 1) / attnTCRows, KVH, 1}, Block: Dim3{256, 1, 1},
			Args: []any{dk, dv, dout, out, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale}},
	}
}

// The bf16 mode's two tensor-core attentions (Ops.SetAttentionKernel):
// attention_tc.cu ("tc1", the default) and attention_fa2.cu ("tc2", laid
// out as FlashAttention-2: per-warp rows with S, P and the output in
// fragments, double-buffered key/value tiles, δ precomputed once a call).
// tc2 takes the same head dims and has the same rounding points and
// bounds; it has run only on the CPU shim so far, so tc1 stays the default
// until the hardware test (TestAttentionTC2OnHardware) shows tc2 correct
// and faster on a GPU. A third choice, AttentionGEMM ("gemm"), is not a
// flash-style kernel: batched cuBLAS GEMMs around a masked softmax
// (ops_attention_gemm.go), untimed on a GPU too. AttentionTC3 ("tc3") is
// attention_mma.cu: FlashAttention-2 as its authors wrote it, mma.sync
// m16n8k16 on register fragments loaded with ldmatrix, the softmax on the
// score accumulators and P kept in registers (mma.cuh); the same head dims,
// rounding points, bounds and alignment as tc2 (δ by tc2's
// attention_fa2_delta), run only on the CPU shim so far
// (TestAttentionTC3OnHardware times it). AttentionTC3K64 ("tc3k64") is tc3
// whose forward takes 64-key tiles (attention_mma_forward_k64, in 68 KiB
// of dynamic shared memory, FlashAttention-2's tile on sm_80/sm_90) instead
// of 32, and whose backward takes 64-row tiles (attention_mma_backward_dq_k64
// and attention_mma_backward_dkdv_k64, 84 KiB each; the same bits as tc3's).
// Not run on a GPU either.
const (
	AttentionTC1    = "tc1"
	AttentionTC2    = "tc2"
	AttentionTC3    = "tc3"
	AttentionTC3K64 = "tc3k64"
)

// SetAttentionKernel picks the tensor-core attention of the bf16 precision:
// AttentionTC1 (attention_tc.cu, the default; "" means it too),
// AttentionTC2 (attention_fa2.cu), AttentionTC3 (attention_mma.cu),
// AttentionTC3K64 (attention_mma.cu, 64-key forward tiles) or
// AttentionGEMM (batched cuBLAS GEMMs
// around attention_gemm.cu, ops_attention_gemm.go; where one row block of
// one sequence is too large for its scratch, gemmRuns, about 100k tokens
// at the 7B shape, the op runs tc1). It changes
// nothing in PrecisionF32 or for head dims attnTC leaves to the float32
// kernels. tc2 and tc3 (tc3k64) also want q, k, v and dout 16-byte aligned (their
// loads are four floats wide): where one is not (a view at an odd offset),
// the op runs tc1; train/model's activation arena starts every piece 16 bytes
// aligned, so the model's operands qualify
// (TestTC2RunsInModelCUDAEmulated). Call it before the ops run; it is not
// safe concurrently with them.
func (o *Ops) SetAttentionKernel(name string) error {
	switch name {
	case "", AttentionTC1:
		o.attn = AttentionTC1
	case AttentionTC2:
		o.attn = AttentionTC2
	case AttentionTC3:
		o.attn = AttentionTC3
	case AttentionTC3K64:
		o.attn = AttentionTC3K64
	case AttentionGEMM:
		o.attn = AttentionGEMM
	default:
		return fmt.Errorf("CUDA Ops: unknown attention kernel %q (want %q, %q, %q, %q or %q)", name, AttentionTC1, AttentionTC2, AttentionTC3, AttentionTC3K64, AttentionGEMM)
	}
	return nil
}

// AttentionKernel returns the tensor-core attention SetAttentionKernel
// picked: AttentionTC1, AttentionTC2, AttentionTC3, AttentionTC3K64 or
// AttentionGEMM.
func (o *Ops) AttentionKernel() string {
	if o.attn == "" {
		return AttentionTC1
	}
	return o.attn
}

// attnAligned reports whether an op on bufs runs the kernels o.attn
// names, attention_fa2.cu (tc2) or attention_mma.cu (tc3, tc3k64): one
// of them picked and every buffer 16-byte aligned.
func (o *Ops) attnAligned(bufs ...*Buffer) bool {
	if o.attn != AttentionTC2 && o.attn != AttentionTC3 && o.attn != AttentionTC3K64 {
		return false
	}
	for _, b := range bufs {
		if b != nil && b.ptr%16 != 0 {
			return false
		}
	}
	return true
}

// planAttentionTC2 is planAttentionTC on attention_fa2_forward: one block
// of 128 threads (4 warps of 16 rows) per 64 (query, head) rows of a KV
// head. D as attnTC wants; q, k, v 16-byte aligned.
func planAttentionTC2(out, lse, q, k, v, seqOff any, S, Nq, keys, H, KVH, D, W, qoff int, scale float32) []step {
	if Nq == 0 {
		return nil
	}
	rows := Nq * (H / KVH)
	return []step{{Kernel: "attention_fa2_forward", Grid: Dim3{(rows + attnTCRows - 1) / attnTCRows, KVH, 1}, Block: Dim3{128, 1, 1},
		Args: []any{out, lse, q, k, v, seqOff, S, Nq, H, KVH, D, min(W, keys), qoff, scale}}}
}

// planAttentionBackwardTC2 is planAttentionBackwardTC on attention_fa2.cu:
// attention_fa2_delta writes δ = rowsum(round(dout)∘out) into dl (scratch,
// N·H floats), then attention_fa2_backward_dq (one block of 256 threads per
// 64 (query, head) rows of a KV head) and attention_fa2_backward_dkdv (one
// per 64 keys and KV head) read it; deterministic, no atomics.
func planAttentionBackwardTC2(dq, dk, dv, dout, out, lse, q, k, v, seqOff, dl any, S, N, H, KVH, D, W int, scale float32) []step {
	if N == 0 {
		return nil
	}
	W = min(W, N)
	rows := N * (H / KVH)
	return []step{
		{Kernel: "attention_fa2_delta", Grid: Dim3{(N*H + 7) / 8, 1, 1}, Block: Dim3{256, 1, 1}, Args: []any{dl, dout, out, N * H, D}},
		{Kernel: "attention_fa2_backward_dq", Grid: Dim3{(rows + attnTCRows - 1) / attnTCRows, KVH, 1}, Block: Dim3{256, 1, 1},
			Args: []any{dq, dout, dl, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale}},
		{Kernel: "attention_fa2_backward_dkdv", Grid: Dim3{(N + attnTCRows - 1) / attnTCRows, KVH, 1}, Block: Dim3{256, 1, 1},
			Args: []any{dk, dv, dout, dl, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale}},
	}
}

// planAttentionTC3 is planAttentionTC2 on attention_mma_forward: the same
// grid, block and arguments (one block of 128 threads, 4 warps of 16 rows,
// per 64 (query, head) rows of a KV head). D as attnTC wants; q, k, v
// 16-byte aligned.
func planAttentionTC3(out, lse, q, k, v, seqOff any, S, Nq, keys, H, KVH, D, W, qoff int, scale float32) []step {
	s := planAttentionTC2(out, lse, q, k, v, seqOff, S, Nq, keys, H, KVH, D, W, qoff, scale)
	for i := range s {
		s[i].Kernel = "attention_mma_forward"
	}
	return s
}

// mmFK64Shared is attention_mma_forward_k64's dynamic shared memory
// (attention_mma.cu's MM_FK64_SHARED): two buffers of 64 keys and 64
// values, bf16 rows of 136 elements, 68 KiB.
const mmFK64Shared = 4 * 64 * 136 * 2

// planAttentionTC3K64 is planAttentionTC3 on attention_mma_forward_k64:
// the same grid and block, 64-key tiles in mmFK64Shared bytes of dynamic
// shared memory (Kernel.Launch opts the kernel in).
func planAttentionTC3K64(out, lse, q, k, v, seqOff any, S, Nq, keys, H, KVH, D, W, qoff int, scale float32) []step {
	s := planAttentionTC3(out, lse, q, k, v, seqOff, S, Nq, keys, H, KVH, D, W, qoff, scale)
	for i := range s {
		s[i].Kernel, s[i].SharedBytes = "attention_mma_forward_k64", mmFK64Shared
	}
	return s
}

// planAttentionBackwardTC3 is planAttentionBackwardTC2 with
// attention_mma.cu's dq and dkdv in place of attention_fa2.cu's, on the
// same grids, blocks and arguments: tc2's attention_fa2_delta writes δ
// into dl (scratch, N·H floats), then attention_mma_backward_dq (one block
// of 256 threads per 64 (query, head) rows of a KV head) and
// attention_mma_backward_dkdv (one per 64 keys and KV head) read it;
// deterministic, no atomics.
func planAttentionBackwardTC3(dq, dk, dv, dout, out, lse, q, k, v, seqOff, dl any, S, N, H, KVH, D, W int, scale float32) []step {
	s := planAttentionBackwardTC2(dq, dk, dv, dout, out, lse, q, k, v, seqOff, dl, S, N, H, KVH, D, W, scale)
	for i := range s {
		switch s[i].Kernel {
		case "attention_fa2_backward_dq":
			s[i].Kernel = "attention_mma_backward_dq"
		case "attention_fa2_backward_dkdv":
			s[i].Kernel = "attention_mma_backward_dkdv"
		}
	}
	return s
}

// mmBK64Shared is the dynamic shared memory of attention_mma_backward_dq_k64
// and attention_mma_backward_dkdv_k64 (attention_mma.cu's MM_BK64_SHARED):
// two buffers of two 64-row tiles (keys and values, or queries and dout),
// bf16 rows of 136 elements, then the warps' hand-off, 4 pairs × 32
// elements × 32 lanes of 4 bytes: 84 KiB.
const mmBK64Shared = 4*64*136*2 + 4*32*32*4

// planAttentionBackwardTC3K64 is planAttentionBackwardTC3 with
// attention_mma_backward_dq_k64 and attention_mma_backward_dkdv_k64
// (64-row tiles in mmBK64Shared bytes of dynamic shared memory): the same
// bits as tc3's 32-row kernels.
func planAttentionBackwardTC3K64(dq, dk, dv, dout, out, lse, q, k, v, seqOff, dl any, S, N, H, KVH, D, W int, scale float32) []step {
	s := planAttentionBackwardTC3(dq, dk, dv, dout, out, lse, q, k, v, seqOff, dl, S, N, H, KVH, D, W, scale)
	for i := range s {
		switch s[i].Kernel {
		case "attention_mma_backward_dq", "attention_mma_backward_dkdv":
			s[i].Kernel, s[i].SharedBytes = s[i].Kernel+"_k64", mmBK64Shared
		}
	}
	return s
}

// planAttentionBackward: attention_backward_dq, one block per 16 (query,
// head) rows of a KV head, then attention_backward_dkdv, one block per 16
// key rows and KV head. Each sums in a fixed order: no atomics, the same
// bits on every run. W is clamped to N.
func planAttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff any, S, N, H, KVH, D, W int, scale float32) []step {
	if N == 0 {
		return nil
	}
	W = min(W, N)
	return []step{
		{Kernel: "attention_backward_dq", Grid: Dim3{attnBlocks(N * (H / KVH)), KVH, 1}, Block: Dim3{attnThreads, 1, 1},
			Args: []any{dq, dout, out, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale}},
		{Kernel: "attention_backward_dkdv", Grid: Dim3{attnBlocks(N), KVH, 1}, Block: Dim3{attnThreads, 1, 1},
			Args: []any{dk, dv, dout, out, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale}},
	}
}

// attnHeads checks the head counts and dim the kernels take: H a multiple
// of KVH ≥ 1, 1 ≤ D ≤ attnMaxD, KVH (the grid's y) ≤ 65535.
func (c *check) attnHeads(H, KVH, D int) {
	if H < 1 || KVH < 1 || H%KVH != 0 {
		c.fail("%d query heads not a multiple of %d KV heads", H, KVH)
	}
	if D < 1 || D > attnMaxD {
		c.fail("head dim D = %d outside [1, %d]", D, attnMaxD)
	}
	if KVH > 65535 {
		c.fail("%d KV heads: more than a grid's 65535 in y", KVH)
	}
}

// attnForwardCheck checks AttentionForward's sizes and buffers (and the
// backward's shared ones): seqOff an int32 buffer of S+1 offsets.
func (o *Ops) attnForwardCheck(c *check, out, lse, q, k, v, seqOff *Buffer, S, N, H, KVH, D int) {
	c.sizes("N, H, D", N, H, D)
	c.sizes("N, KVH, D", N, KVH, D)
	c.attnHeads(H, KVH, D)
	switch {
	case S < 0:
		c.fail("S = %d sequences: want ≥ 0", S)
	case S == 0 && N > 0:
		c.fail("S = 0 sequences for N = %d tokens", N)
	}
	c.buf(o.d, "out", out, N*H*D)
	c.buf(o.d, "lse", lse, N*H)
	c.buf(o.d, "q", q, N*H*D)
	c.buf(o.d, "k", k, N*KVH*D)
	c.buf(o.d, "v", v, N*KVH*D)
	c.buf(o.d, "seqOff", seqOff, S+1)
}

// AttentionForward is kernels.Backend.AttentionForward on device buffers:
// out [N,H,D] and lse [N,H] of q [N,H,D] over k, v [N,KVH,D], for the S
// packed sequences of seqOff, an int32 buffer (UploadInt32) of S+1
// offsets from 0 to N. 1 ≤ D ≤ 256. In the bf16 precision, D a multiple
// of 16 up to 128 runs attention_tc.cu's tensor-core kernels (q, k, v and
// P rounded to bfloat16 for the products; lse float32 on the rounded q,
// k), or those SetAttentionKernel picks, as does the backward. seqOff's
// contents are not checked on the host (they are on the device): the
// kernel never reads outside the buffers for any contents, but wrong
// offsets give wrong values; a backend holding them on the host checks
// them first (kernels.NeedSeqOff). The exception is the GEMM attention
// ("gemm"), which sizes its operands by the offsets: it reads them back
// (hostSeqOff, a copy that waits for the queued work) and checks them.
func (o *Ops) AttentionForward(out, lse, q, k, v, seqOff *Buffer, S, N, H, KVH, D int, scale float32) error {
	return o.attnForward("AttentionForward", out, lse, q, k, v, seqOff, nil, S, N, H, KVH, D, max(N, 1), scale)
}

// The kernels a training attention op runs (attnPath).
const (
	attnPathF32 = "f32" // attention.cu, float32 on CUDA cores
	attnPathTC1 = AttentionTC1
	attnPathTC2 = AttentionTC2
	attnPathTC3 = AttentionTC3
	// attnPathTC3K64: tc3 with attention_mma_forward_k64
	attnPathTC3K64 = AttentionTC3K64
	// attnPathGEMM: ops_attention_gemm.go
)

// attnPath names the kernels a training attention op of head dim D on the
// operands bufs (q, k, v, and dout for the backward) runs in o's
// precision: attnPathGEMM when gemm is picked and its runs fit (gemmFits,
// from the host offsets), attnPathTC2 (attnPathTC3, attnPathTC3K64) when
// tc2 (tc3, tc3k64) is picked and every operand is 16-byte aligned, attnPathTC1 for the other tensor-core cases
// (attnTC), attnPathF32 otherwise. The ops choose by it, and
// cuda.Backend's profile names the op by it.
func (o *Ops) attnPath(D int, gemmFits bool, bufs ...*Buffer) string {
	switch {
	case !attnTC(o.prec, D):
		return attnPathF32
	case o.attn == AttentionGEMM && gemmFits:
		return attnPathGEMM
	case o.attnAligned(bufs...):
		return o.attn
	}
	return attnPathTC1
}

// gemmFits reports whether the GEMM attention takes the sequences of the
// host offsets off (nil: not known) with H query heads over KVH: gemm
// picked and every entry within its scratch (gemmRunsFor).
func (o *Ops) gemmFits(off []int32, H, KVH int) bool {
	_, runs := o.gemmRunsFor(off, H, KVH)
	return runs != nil
}

// gemmRunsFor is the GEMM attention's order of the sequences and runs
// (gemmRuns) over the host offsets off within o's score bound; nil runs
// when gemm is not picked, off is nil, one entry does not fit, or there is
// nothing to compute.
func (o *Ops) gemmRunsFor(off []int32, H, KVH int) ([]int32, []gemmRun) {
	if o.attn != AttentionGEMM || off == nil {
		return nil, nil
	}
	order, runs, ok := gemmRuns(off, KVH, H/KVH, o.gemmScoreBytes(), o.gemmRowBlock())
	if !ok {
		return nil, nil
	}
	return order, runs
}

// hostSeqOff returns the offsets the GEMM attention sizes its runs by: off
// itself when the caller holds them on the host (cuda.Backend), else, when
// the op may take the GEMM path, the S+1 offsets read back from seqOff
// (one cuMemcpyDtoH after the queued work); checked either way. nil when
// the op cannot take the GEMM path.
func (o *Ops) hostSeqOff(op string, seqOff *Buffer, off []int32, S, N, D int) ([]int32, error) {
	if o.attn != AttentionGEMM || !attnTC(o.prec, D) || N == 0 {
		return nil, nil
	}
	if off == nil {
		off = make([]int32, S+1)
		if err := seqOff.downloadInt32(off); err != nil {
			return nil, fmt.Errorf("CUDA %s: %w", op, err)
		}
	}
	if err := checkSeqOff(off, S, N); err != nil {
		return nil, fmt.Errorf("CUDA %s: %w", op, err)
	}
	return off, nil
}

// attnForward is the training forward: the checks, then the plan of the
// path attnPath picks (off as hostSeqOff takes it).
func (o *Ops) attnForward(op string, out, lse, q, k, v, seqOff *Buffer, off []int32, S, N, H, KVH, D, W int, scale float32) error {
	c := check{op: op}
	if W < 1 {
		c.fail("window W = %d: want at least 1", W)
	}
	o.attnForwardCheck(&c, out, lse, q, k, v, seqOff, S, N, H, KVH, D)
	if c.err != nil {
		return c.err
	}
	off, err := o.hostSeqOff(op, seqOff, off, S, N, D)
	if err != nil {
		return err
	}
	order, runs := o.gemmRunsFor(off, H, KVH)
	switch o.attnPath(D, runs != nil, q, k, v) {
	case attnPathGEMM:
		sc := o.lockScratch()
		defer sc.unlock()
		scr, ord, err := gemmScratch(sc, op, runs, order, H/KVH, D, false)
		if err != nil {
			return err
		}
		return o.runX(op, planAttentionGEMM(out, lse, q, k, v, seqOff, ord, S, scr, runs, N, H, KVH, D, min(W, N), scale))
	case attnPathTC2:
		return o.run(op, planAttentionTC2(out, lse, q, k, v, seqOff, S, N, N, H, KVH, D, W, 0, scale))
	case attnPathTC3:
		return o.run(op, planAttentionTC3(out, lse, q, k, v, seqOff, S, N, N, H, KVH, D, W, 0, scale))
	case attnPathTC3K64:
		return o.run(op, planAttentionTC3K64(out, lse, q, k, v, seqOff, S, N, N, H, KVH, D, W, 0, scale))
	case attnPathTC1:
		return o.run(op, planAttentionTC(out, lse, q, k, v, seqOff, S, N, N, H, KVH, D, W, 0, scale))
	}
	return o.run(op, planAttention(out, lse, q, k, v, seqOff, S, N, N, H, KVH, D, W, 0, scale))
}

// AttentionWindowForward is AttentionForward where query i sees only the
// keys j of its sequence with i − W < j ≤ i; W ≥ 1.
func (o *Ops) AttentionWindowForward(out, lse, q, k, v, seqOff *Buffer, S, N, H, KVH, D, W int, scale float32) error {
	return o.attnForward("AttentionWindowForward", out, lse, q, k, v, seqOff, nil, S, N, H, KVH, D, W, scale)
}

// attnBackward is the training backward: the checks, then the plan of the
// path attnPath picks (off as hostSeqOff takes it).
func (o *Ops) attnBackward(op string, dq, dk, dv, dout, out, lse, q, k, v, seqOff *Buffer, off []int32, S, N, H, KVH, D, W int, scale float32) error {
	c := check{op: op}
	if W < 1 {
		c.fail("window W = %d: want at least 1", W)
	}
	o.attnForwardCheck(&c, out, lse, q, k, v, seqOff, S, N, H, KVH, D)
	c.buf(o.d, "dq", dq, N*H*D)
	c.buf(o.d, "dk", dk, N*KVH*D)
	c.buf(o.d, "dv", dv, N*KVH*D)
	c.buf(o.d, "dout", dout, N*H*D)
	if c.err != nil {
		return c.err
	}
	off, err := o.hostSeqOff(op, seqOff, off, S, N, D)
	if err != nil {
		return err
	}
	order, runs := o.gemmRunsFor(off, H, KVH)
	path := o.attnPath(D, runs != nil, dout, q, k, v)
	if path == attnPathGEMM {
		sc := o.lockScratch()
		defer sc.unlock()
		scr, ord, err := gemmScratch(sc, op, runs, order, H/KVH, D, true)
		if err != nil {
			return err
		}
		return o.runX(op, planAttentionBackwardGEMM(dq, dk, dv, dout, out, lse, q, k, v, seqOff, ord, S, scr, runs, N, H, KVH, D, min(W, N), scale))
	}
	if (path == attnPathTC2 || path == attnPathTC3 || path == attnPathTC3K64) && N > 0 {
		sc := o.lockScratch()
		defer sc.unlock()
		dl, err := sc.get(c.op, "attention.delta", N*H)
		if err != nil {
			return err
		}
		plan := planAttentionBackwardTC2
		switch path {
		case attnPathTC3:
			plan = planAttentionBackwardTC3
		case attnPathTC3K64:
			plan = planAttentionBackwardTC3K64
		}
		return o.run(c.op, plan(dq, dk, dv, dout, out, lse, q, k, v, seqOff, dl, S, N, H, KVH, D, W, scale))
	}
	if path != attnPathF32 {
		return o.run(c.op, planAttentionBackwardTC(dq, dk, dv, dout, out, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale))
	}
	return o.run(c.op, planAttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, S, N, H, KVH, D, W, scale))
}

// AttentionBackward is kernels.Backend.AttentionBackward on device
// buffers: it accumulates dq [N,H,D], dk and dv [N,KVH,D] from dout
// [N,H,D] and the forward's out and lse, recomputing the scores; the
// other operands as AttentionForward's. Deterministic: no atomics.
func (o *Ops) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff *Buffer, S, N, H, KVH, D int, scale float32) error {
	return o.attnBackward("AttentionBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, nil, S, N, H, KVH, D, max(N, 1), scale)
}

// AttentionWindowBackward accumulates the gradients of
// AttentionWindowForward; W ≥ 1.
func (o *Ops) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff *Buffer, S, N, H, KVH, D, W int, scale float32) error {
	return o.attnBackward("AttentionWindowBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, nil, S, N, H, KVH, D, W, scale)
}

// AttentionDecode is kernels.Backend.AttentionDecode on device buffers:
// out [Tq,H,D] of the Tq new tokens q [Tq,H,D] of one sequence over the
// first Tk rows of kCache, vCache [≥Tk,KVH,D]; query i sees rows 0 …
// Tk−Tq+i. Tq ≤ Tk.
func (o *Ops) AttentionDecode(out, q, kCache, vCache *Buffer, Tq, Tk, H, KVH, D int, scale float32) error {
	c := check{op: "AttentionDecode"}
	c.sizes("Tq, H, D", Tq, H, D)
	c.sizes("Tk, KVH, D", Tk, KVH, D)
	c.attnHeads(H, KVH, D)
	if Tq > Tk {
		c.fail("Tq = %d new tokens over a cache of Tk = %d rows", Tq, Tk)
	}
	c.buf(o.d, "out", out, Tq*H*D)
	c.buf(o.d, "q", q, Tq*H*D)
	c.buf(o.d, "kCache", kCache, Tk*KVH*D)
	c.buf(o.d, "vCache", vCache, Tk*KVH*D)
	if c.err != nil {
		return c.err
	}
	var none *Buffer // no lse, no seqOff: one sequence
	return o.run(c.op, planAttention(out, none, q, kCache, vCache, none, 0, Tq, Tk, H, KVH, D, Tk, Tk-Tq, scale))
}
