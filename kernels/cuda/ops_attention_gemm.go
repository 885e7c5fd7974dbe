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
// GEMMs' extra work (the scores of every key, causal or not, padded to
// the longest sequence of a run) on that rate. Its price is memory: the
// scores and P of a run of entries live in scratch (attnGEMMScoreBytes),
// where the flash-style kernels keep them in tiles. It has not run on a GPU:
// TestAttentionGEMMOnHardware times it against tc1 and tc2.

// AttentionGEMM names the GEMM-based attention for SetAttentionKernel.
const AttentionGEMM = "gemm"

// attnPathGEMM is the kernels a training attention op runs (attnPath) when
// it takes the GEMM path.
const attnPathGEMM = AttentionGEMM

// attnGEMMScoreBytes bounds the scratch of the per-score buffers of one
// run of batch entries: the backward's two float32 matrices (the scores
// and dP) and two bfloat16 ones (P and dS), 12 bytes a score; the forward
// takes the same runs, at 6 bytes a score. At the 7B bench's
// shape (8 sequences of 1024 tokens, 4 KV heads of 7 query heads: 32
// entries of 7·1024² scores, 84 MiB each in the backward) 1 GiB makes runs
// of 12 entries, three runs a call, each GEMM a batch of 12 products of
// 7168×1024×128: large enough for cuBLAS to fill the device, and small
// next to the H200's 141 GiB. By the formula, not measured.
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

// attnGEMMAlign is the multiple the GEMM attention pads a run's sequence
// length L to: 8 bfloat16 values, 16 bytes, so that every leading
// dimension and batch stride of its GEMMs (L, G·L·D, L·D, G·L·L; D is a
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
// attnGEMMAlign.
type gemmRun struct{ e0, n, L int }

// gemmRuns orders the S sequences of off longest first (ties in pack
// order) and splits their S·KVH entries, in that order, into runs, each
// as long as its scores stay within capBytes (attnGEMMScoreBytesPer·G·L²
// an entry, L the run's padded length): so runs hold sequences of similar
// length, and one of short sequences is not padded to the pack's longest.
// ok is false when one entry alone does not fit (the op then runs tc1). A
// sequence with no tokens is padding in its run; a run of nothing else
// (L = 0) is left out.
func gemmRuns(off []int32, KVH, G, capBytes int) (order []int32, runs []gemmRun, ok bool) {
	S := len(off) - 1
	order = make([]int32, S)
	for s := range order {
		order[s] = int32(s)
	}
	length := func(s int32) int32 { return off[s+1] - off[s] }
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(length(b), length(a)) })
	padded := func(e int) int { return attnGEMMPad(int(length(order[e/KVH]))) }
	cost := func(n, L int) int { return n * attnGEMMScoreBytesPer * G * L * L }
	for e := 0; e < S*KVH; {
		r := gemmRun{e0: e}
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
// D], K̃ and Ṽ [n, L, D], P and dS [n, G·L, L]; float32 scores and dP
// [n, G·L, L], Õ and dQ̃ [n, G·L, D], dK̃ and dṼ [n, L, D]. The forward
// leaves DO, DP, DS, DQ, DK and DV nil. *Buffer for Ops ([]uint16 and
// []float32 on the shim).
type attnGEMMScratch struct {
	Q, K, V, DO, P, DS   any
	S, DP, O, DQ, DK, DV any
}

// agGather and agScatter are attention_gemm.cu's layout kernels on the
// entries e0 … e0+nE−1.
func agGather(dst, src, seqOff, order any, S, N, e0, nE, KVH, rep, Lmax, D int) step {
	n := nE * rep * Lmax * D
	return step{"attention_gemm_gather", flatGrid(n), Dim3{flatThreads, 1, 1},
		[]any{dst, src, seqOff, order, S, N, e0, nE, KVH, rep, Lmax, D}, nil}
}

func agScatter(dst, src, seqOff, order any, S, N, e0, nE, KVH, rep, Lmax, D int, mul float32, accumulate bool) step {
	n, acc := nE*rep*Lmax*D, 0
	if accumulate {
		acc = 1
	}
	return step{"attention_gemm_scatter", flatGrid(n), Dim3{flatThreads, 1, 1},
		[]any{dst, src, seqOff, order, S, N, e0, nE, KVH, rep, Lmax, D, mul, acc}, nil}
}

// agThreads is attention_gemm.cu's AG_THREADS: one block a score row.
const agThreads = 128

// planAttentionGEMM is the GEMM attention's forward: out [N,H,D] and lse
// [N,H] of q [N,H,D] over k, v [N,KVH,D] for the S sequences of seqOff (on
// the device; order and runs from gemmRuns on the same offsets on the
// host, order [S] on the device too), the window W ≥ 1. Per run: gather Q̃, K̃, Ṽ (bfloat16);
// scores = Q̃·K̃ᵀ (one strided-batched GemmEx); the masked softmax writes P
// and lse; Õ = P·Ṽ (another); Õ scattered into out.
func planAttentionGEMM(out, lse, q, k, v, seqOff, order any, S int, sc attnGEMMScratch, runs []gemmRun, N, H, KVH, D, W int, scale float32) []xstep {
	G := H / KVH
	var x []xstep
	for _, r := range runs {
		e0, nE, L := r.e0, r.n, r.L
		x = append(x, kstep(
			agGather(sc.Q, q, seqOff, order, S, N, e0, nE, KVH, G, L, D),
			agGather(sc.K, k, seqOff, order, S, N, e0, nE, KVH, 1, L, D),
			agGather(sc.V, v, seqOff, order, S, N, e0, nE, KVH, 1, L, D))...)
		x = append(x, gstep(mm{C: sc.S, A: sc.Q, B: sc.K, M: G * L, N: L, K: D, TransB: true, BF16: true,
			Batch: nE, StrideA: G * L * D, StrideB: L * D, StrideC: G * L * L}))
		x = append(x, kstep(step{"attention_gemm_softmax", Dim3{nE * G * L, 1, 1}, Dim3{agThreads, 1, 1},
			[]any{sc.P, lse, sc.S, seqOff, order, S, N, e0, KVH, G, L, W, scale}, nil})...)
		x = append(x, gstep(mm{C: sc.O, A: sc.P, B: sc.V, M: G * L, N: D, K: L, BF16: true,
			Batch: nE, StrideA: G * L * L, StrideB: L * D, StrideC: G * L * D}))
		x = append(x, kstep(agScatter(out, sc.O, seqOff, order, S, N, e0, nE, KVH, G, L, D, 1, false))...)
	}
	return x
}

// planAttentionBackwardGEMM is the GEMM attention's backward, accumulating
// dq, dk and dv as the backend contract says. Per run: gather Q̃, K̃, Ṽ,
// dÕ (bfloat16); scores = Q̃·K̃ᵀ and dP = dÕ·Ṽᵀ; the row kernel writes P
// and dS from the scores, dP, lse and δ; dṼ = Pᵀ·dÕ, dK̃ = dSᵀ·Q̃ (each
// sums the G heads of the KV head, their rows being Q̃'s), dQ̃ = dS·K̃; the
// three added into dq and dk (times scale) and dv.
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
		x = append(x,
			gstep(mm{C: sc.S, A: sc.Q, B: sc.K, M: G * L, N: L, K: D, TransB: true, BF16: true,
				Batch: nE, StrideA: G * L * D, StrideB: L * D, StrideC: G * L * L}),
			gstep(mm{C: sc.DP, A: sc.DO, B: sc.V, M: G * L, N: L, K: D, TransB: true, BF16: true,
				Batch: nE, StrideA: G * L * D, StrideB: L * D, StrideC: G * L * L}))
		x = append(x, kstep(step{"attention_gemm_dsoftmax", Dim3{nE * G * L, 1, 1}, Dim3{agThreads, 1, 1},
			[]any{sc.P, sc.DS, sc.S, sc.DP, lse, dout, out, seqOff, order, S, N, e0, KVH, G, L, D, W, scale}, nil})...)
		x = append(x,
			gstep(mm{C: sc.DV, A: sc.P, B: sc.DO, M: L, N: D, K: G * L, TransA: true, BF16: true,
				Batch: nE, StrideA: G * L * L, StrideB: G * L * D, StrideC: L * D}),
			gstep(mm{C: sc.DK, A: sc.DS, B: sc.Q, M: L, N: D, K: G * L, TransA: true, BF16: true,
				Batch: nE, StrideA: G * L * L, StrideB: G * L * D, StrideC: L * D}),
			gstep(mm{C: sc.DQ, A: sc.DS, B: sc.K, M: G * L, N: D, K: L, BF16: true,
				Batch: nE, StrideA: G * L * L, StrideB: L * D, StrideC: G * L * D}))
		x = append(x, kstep(
			agScatter(dq, sc.DQ, seqOff, order, S, N, e0, nE, KVH, G, L, D, scale, true),
			agScatter(dk, sc.DK, seqOff, order, S, N, e0, nE, KVH, 1, L, D, scale, true),
			agScatter(dv, sc.DV, seqOff, order, S, N, e0, nE, KVH, 1, L, D, 1, true))...)
	}
	return x
}

// attnGEMMSizes is the elements of each scratch buffer that every run of
// runs fits in (bfloat16 ones in values): qd of Q̃, dÕ, Õ and dQ̃, kd of
// K̃, Ṽ, dK̃ and dṼ, sl of the scores, dP, P and dS.
func attnGEMMSizes(runs []gemmRun, G, D int) (qd, kd, sl int) {
	for _, r := range runs {
		qd, kd, sl = max(qd, r.n*G*r.L*D), max(kd, r.n*r.L*D), max(sl, r.n*G*r.L*r.L)
	}
	return qd, kd, sl
}

// gemmScratch takes the GEMM attention's scratch for runs from the lease
// (bfloat16 buffers hold two values an element; backward adds the
// backward's buffers) and uploads the sequences' order into a slot of its
// own, returned as ord (a copy that waits for the queued work, which may
// still read the slot).
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
	if ord, err = l.get(op, "attention.gemm.order", len(order)); err != nil {
		return sc, nil, err
	}
	if err := ord.UploadInt32(order); err != nil {
		return sc, nil, fmt.Errorf("CUDA %s: %w", op, err)
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
