package cuda

import (
	"cmp"
	"fmt"
	"slices"
	"unsafe"
)

// The GEMM-based training attention of the bf16 precision ("gemm",
// SetAttentionKernel): the first version issue #28 allows, batched cuBLAS
// GEMMs and a masked softmax (attention_gemm.cu has the layout and the
// rounding points, which are attention_tc.cu's). Where tc1 runs its
// products on wmma fragments at about 1% of the H200's tensor-core peak
// (6.3 ms forward, 21.7 ms backward a layer at the 7B shape), cuBLAS's
// bf16 GemmEx ran at about 500 TFLOP/s there; this path spends the
// GEMMs' extra work (padding to the longest sequence of a run, and keys
// the causal mask hides within a row block) on that rate.
//
// Row blocks. A run's query rows are taken in blocks of attnGEMMBlock
// positions (the G heads of a position stay together: Q̃'s rows are
// position-major, row i·G + h, so a block is G·attnGEMMBlock contiguous
// rows), and a block multiplies only the keys some row of it can see: up
// to its last position, and from its first position's window start,
// rounded down to attnGEMMAlign (gemmBlocks). Every entry of a run has
// the same blocks, so each block is one strided-batched GEMM per product;
// the upper triangle past the blocks' diagonal is never computed. At the
// 7B shape (L = 1024, 8 blocks) that is 36 of the square's 64 block
// squares: 43.75% fewer GEMM FLOPs than the whole square
// (TestAttentionGEMMCausalBlocks counts them from the plans). The backward
// sums dK̃ and dṼ over the blocks with beta = 1 into zeroed scratch, in
// block order: the same bits on every run.
//
// Memory: the scores and P of one row block of a run of entries live in
// scratch (attnGEMMScoreBytes), where the flash-style kernels keep them in
// tiles; the gathered operands of the run (Q̃ and the like) take space
// linear in its tokens. It has not run on a GPU:
// TestAttentionGEMMOnHardware times it against tc1 and tc2.

// AttentionGEMM names the GEMM-based attention for SetAttentionKernel.
const AttentionGEMM = "gemm"

// attnPathGEMM is the kernels a training attention op runs (attnPath) when
// it takes the GEMM path.
const attnPathGEMM = AttentionGEMM

// attnGEMMBlock is the positions of a row block (the G·attnGEMMBlock rows
// of an entry that one block's GEMMs take). A run of length L computes
// (n+1)/2n of the L×L square, n = L/attnGEMMBlock: at L = 1024, 128 makes
// n = 8 and 56% (256 would make 62.5%, 64 53% at twice the launches).
// Each block is still large for cuBLAS at the 7B shape: 32 products of
// 896 rows × 128…1024 keys × 128, 0.9 GFLOP the first. A multiple of
// attnGEMMAlign, so that every block's offsets and widths are aligned.
const attnGEMMBlock = 128

// attnGEMMScoreBytes bounds the scratch of the per-score buffers of one
// row block of a run of entries: the backward's two float32 matrices (the
// scores and dP) and two bfloat16 ones (P and dS), 12 bytes a score; the
// forward takes the same runs, at 6 bytes a score. A run is bounded by
// its largest block (gemmBlockScores: the last, G·128 rows × L keys, at
// the 7B shape), so an entry costs 12·G·128·L bytes, linear in its length:
// the 7B bench's 32 entries of 7·1024 rows (11 MiB each) make one run,
// each GEMM a batch of 32; one sequence alone fits up to about 100k
// tokens at G = 7. Past that (gemmRuns' ok false) the op runs tc1, the
// last resort. The gathered operands of a run add 8·G·L·D + 12·L·D bytes
// an entry in the backward (Q̃, dÕ, dQ̃ and K̃, Ṽ, dK̃, dṼ), 0.81 of its
// score bytes at the 7B shape (D = 128, G = 7). By the formula, not
// measured.
const attnGEMMScoreBytes = 1 << 30

// attnGEMMScoreBytesPer is the scratch bytes a score of one entry takes
// in the backward (see attnGEMMScoreBytes).
const attnGEMMScoreBytesPer = 12

// gemmScoreBytes is the GEMM attention's score scratch bound of o:
// attnGEMMScoreBytes, or less where a test set it (scoreCap) to make its
// small shapes take several runs, or none.
func (o *Ops) gemmScoreBytes() int {
	if o.scoreCap > 0 {
		return o.scoreCap
	}
	return attnGEMMScoreBytes
}

// gemmRowBlock is the GEMM attention's row block of o: attnGEMMBlock, or
// what a test set (rowBlock) to give its small shapes several blocks.
func (o *Ops) gemmRowBlock() int {
	if o.rowBlock > 0 {
		return o.rowBlock
	}
	return attnGEMMBlock
}

// attnGEMMAlign is the multiple the GEMM attention pads a run's sequence
// length L to: 8 bfloat16 values, 16 bytes, so that every leading
// dimension, offset and batch stride of its GEMMs (L, a block's key count
// and first key, G·L·D, L·D, a block's rows times its keys; D is a
// multiple of 16) is one cuBLAS's tensor-core kernels take without
// falling back to slower ones for misaligned operands. The padding rows
// and keys are masked like those of the shorter sequences.
const attnGEMMAlign = 8

// attnGEMMPad is a sequence length of n tokens padded to attnGEMMAlign.
func attnGEMMPad(n int) int { return (n + attnGEMMAlign - 1) / attnGEMMAlign * attnGEMMAlign }

// checkSeqOff fails unless off is S+1 offsets from 0 to N, never
// decreasing.
func checkSeqOff(off []int32, S, N int) error {
	if len(off) != S+1 || off[0] != 0 || int(off[S]) != N {
		return fmt.Errorf("seqOff %v: want %d offsets from 0 to %d", off, S+1, N)
	}
	for s := range S {
		if off[s+1] < off[s] {
			return fmt.Errorf("seqOff[%d] = %d after %d: offsets must not decrease", s+1, off[s+1], off[s])
		}
	}
	return nil
}

// gemmRun is one run of a GEMM attention op: the n entries e0 … e0+n−1
// (entry e: sequence order[e/KVH], KV head e%KVH, gemmRuns' order), their
// operands padded to L, the longest of their sequences rounded up to
// attnGEMMAlign, their query rows in blocks of B positions (gemmBlocks).
type gemmRun struct{ e0, n, L, B int }

// gemmBlock is one row block of a run: positions i0 … i0+n−1 of each
// entry (Q̃'s rows G·i0 … G·(i0+n)−1) against keys k0 … k0+nk−1.
type gemmBlock struct{ i0, n, k0, nk int }

// gemmBlocks is the row blocks of positions 0 … L−1 in blocks of B
// (the last one shorter where B does not divide L) under the window W
// (W ≥ L: causal): block [i0, i0+n) takes the keys its rows see, from its
// first row's window start i0−W+1 rounded down to attnGEMMAlign (at least
// 0) up to its last row, i0+n−1. L and B are multiples of attnGEMMAlign, so
// every block's n, k0 and nk are too.
func gemmBlocks(L, B, W int) []gemmBlock {
	var bs []gemmBlock
	for i0 := 0; i0 < L; i0 += B {
		n := min(B, L-i0)
		k0 := max(0, i0-W+1) / attnGEMMAlign * attnGEMMAlign
		bs = append(bs, gemmBlock{i0, n, k0, i0 + n - k0})
	}
	return bs
}

// gemmBlockScores is the scores of one head in the largest causal row
// block of an entry padded to L (its positions times its keys; the
// entry's G heads take G times that).
func gemmBlockScores(L, B int) int {
	m := 0
	for _, b := range gemmBlocks(L, B, L) {
		m = max(m, b.n*b.nk)
	}
	return m
}

// gemmRuns orders the S sequences of off longest first (ties in pack
// order) and splits their S·KVH entries, in that order, into runs, each
// as long as the scores of its largest causal row block stay within
// capBytes (attnGEMMScoreBytesPer·G·gemmBlockScores(L, B) an entry, L the
// run's padded length, B the row block): so runs hold sequences of
// similar length, and one of short sequences is not padded to the pack's
// longest. The bound is causal's, whatever the window: a window only
// narrows the blocks. ok is false when one entry alone does not fit (the
// op then runs tc1). A sequence with no tokens is padding in its run; a
// run of nothing else (L = 0) is left out.
func gemmRuns(off []int32, KVH, G, capBytes, B int) (order []int32, runs []gemmRun, ok bool) {
	S := len(off) - 1
	order = make([]int32, S)
	for s := range order {
		order[s] = int32(s)
	}
	length := func(s int32) int32 { return off[s+1] - off[s] }
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(length(b), length(a)) })
	padded := func(e int) int { return attnGEMMPad(int(length(order[e/KVH]))) }
	cost := func(n, L int) int { return n * attnGEMMScoreBytesPer * G * gemmBlockScores(L, B) }
	for e := 0; e < S*KVH; {
		r := gemmRun{e0: e, B: B}
		for e+r.n < S*KVH {
			L := max(r.L, padded(e+r.n))
			if cost(r.n+1, L) > capBytes || cost(r.n+1, L) < 0 {
				if r.n == 0 {
					return nil, nil, false
				}
				break
			}
			r.n, r.L = r.n+1, L
		}
		if r.L > 0 {
			runs = append(runs, r)
		}
		e += r.n
	}
	return order, runs, true
}

// attnGEMMScratch is the GEMM attention's scratch, sized for the largest
// run (attnGEMMSizes), n entries padded to L: bfloat16 Q̃ and dÕ [n, G·L,
// D], K̃ and Ṽ [n, L, D], P and dS [n, G·b, k] (b positions of a row block
// over its k keys, the largest block's); float32 scores and dP [n, G·b,
// k], Õ and dQ̃ [n, G·L, D], dK̃ and dṼ [n, L, D]. The forward leaves DO,
// DP, DS, DQ, DK and DV nil. *Buffer for Ops ([]uint16 and []float32 on
// the shim).
type attnGEMMScratch struct {
	Q, K, V, DO, P, DS   any
	S, DP, O, DQ, DK, DV any
}

// agGather and agScatter are attention_gemm.cu's layout kernels on the
// entries e0 … e0+nE−1.
func agGather(dst, src, seqOff, order any, S, N, e0, nE, KVH, rep, Lmax, D int) step {
	n := nE * rep * Lmax * D
	return step{Kernel: "attention_gemm_gather", Grid: flatGrid(n), Block: Dim3{flatThreads, 1, 1},
		Args: []any{dst, src, seqOff, order, S, N, e0, nE, KVH, rep, Lmax, D}}
}

func agScatter(dst, src, seqOff, order any, S, N, e0, nE, KVH, rep, Lmax, D int, mul float32, accumulate bool) step {
	n, acc := nE*rep*Lmax*D, 0
	if accumulate {
		acc = 1
	}
	return step{Kernel: "attention_gemm_scatter", Grid: flatGrid(n), Block: Dim3{flatThreads, 1, 1},
		Args: []any{dst, src, seqOff, order, S, N, e0, nE, KVH, rep, Lmax, D, mul, acc}}
}

// agZero zeroes the first n float32 values of x (misc.cu's zero_f32): the
// dK̃ and dṼ the row blocks add into (beta 1).
func agZero(x any, n int) step {
	return step{Kernel: "zero_f32", Grid: flatGrid(n), Block: Dim3{flatThreads, 1, 1}, Args: []any{x, n}}
}

// agThreads is attention_gemm.cu's AG_THREADS: one block a score row.
const agThreads = 128

// agScores is the GEMM C = A_blk·B_keysᵀ of row block b of the nE entries
// of a run padded to L: A [nE, G·L, D] (Q̃ or dÕ) from row G·b.i0, B [nE,
// L, D] (K̃ or Ṽ) from key b.k0, C [nE, G·b.n, b.nk] dense.
func agScores(C, A, B any, b gemmBlock, nE, G, L, D int) mm {
	rows := G * b.n
	return mm{C: C, A: A, B: B, M: rows, N: b.nk, K: D, TransB: true, BF16: true,
		OffA: b.i0 * G * D, OffB: b.k0 * D,
		Batch: nE, StrideA: G * L * D, StrideB: L * D, StrideC: rows * b.nk}
}

// planAttentionGEMM is the GEMM attention's forward: out [N,H,D] and lse
// [N,H] of q [N,H,D] over k, v [N,KVH,D] for the S sequences of seqOff (on
// the device; order and runs from gemmRuns on the same offsets on the
// host, order [S] on the device too), the window W ≥ 1. Per run: gather
// Q̃, K̃, Ṽ (bfloat16); per row block (gemmBlocks): its scores = Q̃·K̃ᵀ
// (one strided-batched GemmEx over the run's entries), the masked softmax
// writes its P and lse rows, its rows of Õ = P·Ṽ (another); Õ scattered
// into out.
func planAttentionGEMM(out, lse, q, k, v, seqOff, order any, S int, sc attnGEMMScratch, runs []gemmRun, N, H, KVH, D, W int, scale float32) []xstep {
	G := H / KVH
	var x []xstep
	for _, r := range runs {
		e0, nE, L := r.e0, r.n, r.L
		x = append(x, kstep(
			agGather(sc.Q, q, seqOff, order, S, N, e0, nE, KVH, G, L, D),
			agGather(sc.K, k, seqOff, order, S, N, e0, nE, KVH, 1, L, D),
			agGather(sc.V, v, seqOff, order, S, N, e0, nE, KVH, 1, L, D))...)
		for _, b := range gemmBlocks(L, r.B, W) {
			rows := G * b.n
			x = append(x, gstep(agScores(sc.S, sc.Q, sc.K, b, nE, G, L, D)))
			x = append(x, kstep(step{Kernel: "attention_gemm_softmax", Grid: Dim3{nE * rows, 1, 1}, Block: Dim3{agThreads, 1, 1},
				Args: []any{sc.P, lse, sc.S, seqOff, order, S, N, e0, KVH, G, b.i0, b.n, b.k0, b.nk, W, scale}})...)
			x = append(x, gstep(mm{C: sc.O, A: sc.P, B: sc.V, M: rows, N: D, K: b.nk, BF16: true,
				OffB: b.k0 * D, OffC: b.i0 * G * D,
				Batch: nE, StrideA: rows * b.nk, StrideB: L * D, StrideC: G * L * D}))
		}
		x = append(x, kstep(agScatter(out, sc.O, seqOff, order, S, N, e0, nE, KVH, G, L, D, 1, false))...)
	}
	return x
}

// planAttentionBackwardGEMM is the GEMM attention's backward, accumulating
// dq, dk and dv as the backend contract says. Per run: gather Q̃, K̃, Ṽ,
// dÕ (bfloat16) and zero dK̃ and dṼ; per row block (gemmBlocks): its
// scores = Q̃·K̃ᵀ and dP = dÕ·Ṽᵀ; the row kernel writes its P and dS from
// the scores, dP, lse and δ; dṼ += Pᵀ·dÕ and dK̃ += dSᵀ·Q̃ over the
// block's keys (beta 1, in block order; each sums the G heads of the KV
// head, their rows being Q̃'s), its rows of dQ̃ = dS·K̃; then the three
// added into dq and dk (times scale) and dv.
func planAttentionBackwardGEMM(dq, dk, dv, dout, out, lse, q, k, v, seqOff, order any, S int, sc attnGEMMScratch, runs []gemmRun, N, H, KVH, D, W int, scale float32) []xstep {
	G := H / KVH
	var x []xstep
	for _, r := range runs {
		e0, nE, L := r.e0, r.n, r.L
		x = append(x, kstep(
			agGather(sc.Q, q, seqOff, order, S, N, e0, nE, KVH, G, L, D),
			agGather(sc.K, k, seqOff, order, S, N, e0, nE, KVH, 1, L, D),
			agGather(sc.V, v, seqOff, order, S, N, e0, nE, KVH, 1, L, D),
			agGather(sc.DO, dout, seqOff, order, S, N, e0, nE, KVH, G, L, D))...)
		x = append(x, kstep(agZero(sc.DK, nE*L*D), agZero(sc.DV, nE*L*D))...)
		for _, b := range gemmBlocks(L, r.B, W) {
			rows := G * b.n
			x = append(x,
				gstep(agScores(sc.S, sc.Q, sc.K, b, nE, G, L, D)),
				gstep(agScores(sc.DP, sc.DO, sc.V, b, nE, G, L, D)))
			x = append(x, kstep(step{Kernel: "attention_gemm_dsoftmax", Grid: Dim3{nE * rows, 1, 1}, Block: Dim3{agThreads, 1, 1},
				Args: []any{sc.P, sc.DS, sc.S, sc.DP, lse, dout, out, seqOff, order, S, N, e0, KVH, G, b.i0, b.n, b.k0, b.nk, D, W, scale}})...)
			x = append(x,
				gstep(mm{C: sc.DV, A: sc.P, B: sc.DO, M: b.nk, N: D, K: rows, TransA: true, BF16: true, Beta: 1,
					OffB: b.i0 * G * D, OffC: b.k0 * D,
					Batch: nE, StrideA: rows * b.nk, StrideB: G * L * D, StrideC: L * D}),
				gstep(mm{C: sc.DK, A: sc.DS, B: sc.Q, M: b.nk, N: D, K: rows, TransA: true, BF16: true, Beta: 1,
					OffB: b.i0 * G * D, OffC: b.k0 * D,
					Batch: nE, StrideA: rows * b.nk, StrideB: G * L * D, StrideC: L * D}),
				gstep(mm{C: sc.DQ, A: sc.DS, B: sc.K, M: rows, N: D, K: b.nk, BF16: true,
					OffB: b.k0 * D, OffC: b.i0 * G * D,
					Batch: nE, StrideA: rows * b.nk, StrideB: L * D, StrideC: G * L * D}))
		}
		x = append(x, kstep(
			agScatter(dq, sc.DQ, seqOff, order, S, N, e0, nE, KVH, G, L, D, scale, true),
			agScatter(dk, sc.DK, seqOff, order, S, N, e0, nE, KVH, 1, L, D, scale, true),
			agScatter(dv, sc.DV, seqOff, order, S, N, e0, nE, KVH, 1, L, D, 1, true))...)
	}
	return x
}

// attnGEMMSizes is the elements of each scratch buffer that every run of
// runs fits in (bfloat16 ones in values): qd of Q̃, dÕ, Õ and dQ̃, kd of
// K̃, Ṽ, dK̃ and dṼ, sl of the scores, dP, P and dS (one causal row
// block's, the largest: a window only narrows the blocks).
func attnGEMMSizes(runs []gemmRun, G, D int) (qd, kd, sl int) {
	for _, r := range runs {
		qd, kd, sl = max(qd, r.n*G*r.L*D), max(kd, r.n*r.L*D), max(sl, r.n*G*gemmBlockScores(r.L, r.B))
	}
	return qd, kd, sl
}

// gemmScratch takes the GEMM attention's scratch for runs from the lease
// (bfloat16 buffers hold two values an element; backward adds the
// backward's buffers) and the sequences' order in a slot of its own,
// returned as ord: uploaded (a copy that waits for the queued work, which
// may still read the slot) unless the slot's buffer holds that order
// already, the last one uploaded into it. Nothing else writes the slot,
// so the same offsets in every layer of a pass cost one copy.
func gemmScratch(l *scratchLease, op string, runs []gemmRun, order []int32, G, D int, backward bool) (sc attnGEMMScratch, ord *Buffer, err error) {
	qd, kd, sl := attnGEMMSizes(runs, G, D)
	type slot struct {
		dst  *any
		name string
		n    int
	}
	bf := func(n int) int { return (n + 1) / 2 }
	slots := []slot{{&sc.Q, "attention.gemm.q", bf(qd)}, {&sc.K, "attention.gemm.k", bf(kd)}, {&sc.V, "attention.gemm.v", bf(kd)},
		{&sc.S, "attention.gemm.s", sl}, {&sc.P, "attention.gemm.p", bf(sl)}}
	if backward {
		slots = append(slots, slot{&sc.DO, "attention.gemm.do", bf(qd)}, slot{&sc.DP, "attention.gemm.dp", sl},
			slot{&sc.DS, "attention.gemm.ds", bf(sl)}, slot{&sc.DQ, "attention.gemm.dq", qd},
			slot{&sc.DK, "attention.gemm.dk", kd}, slot{&sc.DV, "attention.gemm.dv", kd})
	} else {
		slots = append(slots, slot{&sc.O, "attention.gemm.o", qd})
	}
	for _, s := range slots {
		b, err := l.get(op, s.name, s.n)
		if err != nil {
			return sc, nil, err
		}
		*s.dst = b
	}
	if ord, err = l.table(op, "attention.gemm.order", order); err != nil {
		return sc, nil, err
	}
	return sc, ord, nil
}

// downloadInt32 copies the buffer's first len(dst) elements, int32 values,
// to dst after the work queued before it (one cuMemcpyDtoH_v2).
func (b *Buffer) downloadInt32(dst []int32) error {
	if len(dst) > b.n {
		return fmt.Errorf("CUDA download of %d int32 values from a buffer of %d", len(dst), b.n)
	}
	if len(dst) == 0 {
		return nil
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst))
	err := b.d.do(func() error {
		if err := b.checkLive(); err != nil {
			return err
		}
		return b.d.drv.MemcpyDtoH(raw, b.ptr)
	})
	if err != nil {
		return fmt.Errorf("CUDA download of %d int32 values: %w", len(dst), err)
	}
	return nil
}
