package cpu

import (
	"unsafe"

	"github.com/hone-rl/hone/kernels"
)

// Matmul: c [M,N] = op(a)·op(b) + beta·c (see kernels.Backend).
func (b *Backend) Matmul(c, a, bb []float32, M, N, K int, transA, transB bool, beta float32) {
	kernels.NeedSizes("Matmul", M, N, K)
	kernels.Need("Matmul", "c", len(c), M*N)
	kernels.Need("Matmul", "a", len(a), M*K)
	kernels.Need("Matmul", "b", len(bb), K*N)
	if M <= gemvRows && !transA && M > 0 && N > 0 {
		b.matmulFew(c, a, bb, M, N, K, transB, beta)
		return
	}
	if b.matmulSkinny(c, a, bb, M, N, K, transA, transB, beta) {
		return
	}
	lda, ldb := K, N
	if transA {
		lda = M
	}
	if transB {
		ldb = K
	}
	b.sgemm(transA, transB, M, N, K, 1, a, max(1, lda), bb, max(1, ldb), beta, c, max(1, N))
}

// matmulFew is Matmul for a few rows of a (decode: LoRA's x·Aᵀ and
// (x·Aᵀ)·Bᵀ at N = 1) with the matrix-vector kernels, columns of c split
// among the workers: a BLAS call would cost more in thread start-up than the
// arithmetic. Row i of c is
//
//	c[i, j] = Σ_p a[i,p]·b[j,p] (transB, f32Gemv)  or  Σ_p a[i,p]·b[p,j] (f32GemvT)
//
// plus beta·c[i, j] when beta ≠ 0.
func (b *Backend) matmulFew(c, a, bb []float32, M, N, K int, transB bool, beta float32) {
	b.parallel(N, M*K, func(lo, hi int) {
		var tmp []float32 // [hi−lo] when beta ≠ 0
		if beta != 0 {
			tmp = make([]float32, hi-lo)
		}
		for i := 0; i < M; i++ {
			dst := c[i*N+lo : i*N+hi]
			if beta != 0 {
				copy(tmp, dst)
			}
			switch {
			case K == 0:
				clear(dst)
			case transB:
				b.feat.f32Gemv(dst, a[i*K:(i+1)*K], bb[lo*K:], K, K)
			default:
				b.feat.f32GemvT(dst, a[i*K:(i+1)*K], bb[lo:], N)
			}
			if beta != 0 {
				for j := range dst {
					dst[j] += beta * tmp[j]
				}
			}
		}
	})
}

// MatmulBatched: batch Matmuls on consecutive blocks.
func (b *Backend) MatmulBatched(c, a, bb []float32, batch, M, N, K int, transA, transB bool, beta float32) {
	kernels.NeedSizes("MatmulBatched", batch, M, N, K)
	kernels.Need("MatmulBatched", "c", len(c), batch*M*N)
	kernels.Need("MatmulBatched", "a", len(a), batch*M*K)
	kernels.Need("MatmulBatched", "b", len(bb), batch*K*N)
	for i := 0; i < batch; i++ {
		b.Matmul(c[i*M*N:(i+1)*M*N], a[i*M*K:(i+1)*M*K], bb[i*K*N:(i+1)*K*N], M, N, K, transA, transB, beta)
	}
}

// LinearForward: out [N,OC] = inp [N,C]·weight [OC,C]ᵀ + bias [OC].
func (b *Backend) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	op := "LinearForward"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "out", len(out), N*OC)
	kernels.Need(op, "inp", len(inp), N*C)
	kernels.Need(op, "weight", len(weight), OC*C)
	if bias != nil {
		kernels.Need(op, "bias", len(bias), OC)
	}
	b.linearNT(out, OC, inp, weights{f32: weight}, nil, N, C, OC)
	b.addBias(out, bias, N, OC)
}

// LinearForwardBF16 is LinearForward with a bfloat16 weight [OC,C].
func (b *Backend) LinearForwardBF16(out, inp []float32, weight []uint16, bias []float32, N, C, OC int) {
	op := "LinearForwardBF16"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "out", len(out), N*OC)
	kernels.Need(op, "inp", len(inp), N*C)
	kernels.Need(op, "weight", len(weight), OC*C)
	if bias != nil {
		kernels.Need(op, "bias", len(bias), OC)
	}
	b.linearNT(out, OC, inp, weights{bf16: weight}, nil, N, C, OC)
	b.addBias(out, bias, N, OC)
}

func (b *Backend) addBias(out, bias []float32, N, OC int) {
	if bias == nil {
		return
	}
	b.parallel(N, OC, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			row := out[n*OC : (n+1)*OC]
			for o, v := range bias[:OC] {
				row[o] += v
			}
		}
	})
}

// weights are rows [OC, C] of a weight matrix, float32 or bfloat16 (one is nil).
type weights struct {
	f32  []float32
	bf16 []uint16
}

// gemvRows is the largest M for which matmulFew runs matrix-vector kernels
// instead of sgemm: few rows are memory bound, and a BLAS call there pays
// thread synchronisation for no arithmetic gain.
const gemvRows = 4

// fewRows is the largest N for which linearNT runs the rows kernels
// (f32Rows, bf16Rows) instead of sgemm: up to there (decode of up to
// fewRows sequences) a tile kernel that reads each weight row once for all
// N inputs, split over the workers by weight rows, beats a BLAS call, and
// bfloat16 weights are widened in registers instead of through a buffer.
const fewRows = 64

// rowBlock is the number of weight rows one part of linearNT's split takes
// at least (the rows kernels work in tiles of 4 rows).
const rowBlock = 16

// bf16Tile is the number of bfloat16 weight rows widened at a time for sgemm.
const bf16Tile = 128

// linearNT computes out[n, o] (row stride ldo) = Σ_c x[n,c]·w[o,c] for
// n < N, o < OC — the product x·wᵀ, the loop it must equal. For N ≤
// fewRows the OC weight rows are split among the workers in blocks of
// rowBlock and each worker runs f32Rows / bf16Rows (weights read once);
// otherwise float32 weights go to sgemm directly, and bfloat16 weights to
// the GEMM's bfloat16 form (widened as it packs them) or, for a GEMM
// without one (OpenBLAS, gonum), widened bf16Tile rows at a time into tile
// (nil: allocated) and fed to sgemm.
func (b *Backend) linearNT(out []float32, ldo int, x []float32, w weights, tile []float32, N, C, OC int) {
	if N == 0 || OC == 0 {
		return
	}
	if C == 0 {
		for n := range N {
			clear(out[n*ldo : n*ldo+OC])
		}
		return
	}
	if w.bf16 != nil && b.bgemm != nil {
		if N > fewRows {
			b.bgemmRun(true, N, OC, C, x, C, w.bf16, C, 0, out, ldo)
			return
		}
		if N >= bf16MinRows {
			b.bf16Few(out, ldo, x, w.bf16, N, C, OC)
			return
		}
		// The mode's contract holds for any N: the rows kernels below get
		// the activation rounded as the GEMM would round it.
		xp := b.buf(N * C)
		defer b.release(xp)
		roundBF16(*xp, x[:N*C])
		x = *xp
	}
	if N <= fewRows {
		blocks := (OC + rowBlock - 1) / rowBlock
		b.parallel(blocks, N*C*rowBlock, func(lo, hi int) {
			o0, o1 := lo*rowBlock, min(OC, hi*rowBlock)
			if w.f32 != nil {
				b.feat.f32Rows(out[o0:], ldo, x, N, C, w.f32[o0*C:o1*C])
			} else {
				b.feat.bf16Rows(out[o0:], ldo, x, N, C, w.bf16[o0*C:o1*C])
			}
		})
		return
	}
	if w.f32 != nil && OC <= skinnyMax && C >= skinnyMin {
		// A skinny product (LoRA's x·Aᵀ): see skinny.go.
		b.nt(out, ldo, x, C, w.f32, C, N, OC, C, 0)
		return
	}
	if w.f32 != nil {
		b.sgemm(false, true, N, OC, C, 1, x, max(1, C), w.f32, max(1, C), 0, out, ldo)
		return
	}
	if b.gemmB16 != nil {
		b.sgemmB16(false, true, N, OC, C, 1, x, max(1, C), w.bf16, max(1, C), 0, out, ldo)
		return
	}
	if len(tile) < bf16Tile*C {
		tp := b.buf(bf16Tile * C) // [bf16Tile, C] widened weight rows
		defer b.release(tp)
		tile = *tp
	}
	for o0 := 0; o0 < OC; o0 += bf16Tile {
		o1 := min(OC, o0+bf16Tile)
		t := tile[:(o1-o0)*C]
		b.widen(t, w.bf16[o0*C:o1*C])
		b.sgemm(false, true, N, o1-o0, C, 1, x, max(1, C), t, max(1, C), 0, out[o0:], ldo)
	}
}

// widen converts bfloat16 bits to float32, split among the workers.
func (b *Backend) widen(dst []float32, src []uint16) {
	b.parallel(len(src), 1, func(lo, hi int) { kernels.FromBF16(dst[lo:hi], src[lo:hi]) })
}

// LinearBackward accumulates dinp += dout·weight, dweight += doutᵀ·inp,
// dbias += column sums of dout; nil outputs are skipped.
func (b *Backend) LinearBackward(dinp, dweight, dbias, dout, inp, weight []float32, N, C, OC int) {
	op := "LinearBackward"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "dout", len(dout), N*OC)
	if dinp != nil {
		kernels.Need(op, "dinp", len(dinp), N*C)
		kernels.Need(op, "weight", len(weight), OC*C)
		b.sgemm(false, false, N, C, OC, 1, dout, max(1, OC), weight, max(1, C), 1, dinp, max(1, C))
	}
	if dweight != nil {
		kernels.Need(op, "dweight", len(dweight), OC*C)
		kernels.Need(op, "inp", len(inp), N*C)
		b.sgemm(true, false, OC, C, N, 1, dout, max(1, OC), inp, max(1, C), 1, dweight, max(1, C))
	}
	if dbias != nil {
		kernels.Need(op, "dbias", len(dbias), OC)
		b.parallel(OC, N, func(lo, hi int) {
			for n := 0; n < N; n++ {
				row := dout[n*OC : (n+1)*OC]
				for o := lo; o < hi; o++ {
					dbias[o] += row[o]
				}
			}
		})
	}
}

// LinearBackwardBF16 accumulates dinp [N,C] += dout [N,OC]·weight [OC,C]
// (bf16): in one GEMM reading the bfloat16 weight where the backend's GEMM
// can, otherwise widening bf16Tile weight rows at a time for sgemm.
func (b *Backend) LinearBackwardBF16(dinp, dout []float32, weight []uint16, N, C, OC int) {
	op := "LinearBackwardBF16"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "dinp", len(dinp), N*C)
	kernels.Need(op, "dout", len(dout), N*OC)
	kernels.Need(op, "weight", len(weight), OC*C)
	if N == 0 || C == 0 || OC == 0 {
		return
	}
	if b.bgemm != nil {
		b.bgemmRun(false, N, C, OC, dout, OC, weight, C, 1, dinp, C)
		return
	}
	if b.gemmB16 != nil {
		b.sgemmB16(false, false, N, C, OC, 1, dout, max(1, OC), weight, C, 1, dinp, C)
		return
	}
	tp := b.buf(bf16Tile * C) // [bf16Tile, C] widened weight rows
	defer b.release(tp)
	tile := *tp
	for o0 := 0; o0 < OC; o0 += bf16Tile {
		o1 := min(OC, o0+bf16Tile)
		t := tile[:(o1-o0)*C]
		b.widen(t, weight[o0*C:o1*C])
		// dinp += dout[:, o0:o1] · t
		b.sgemm(false, false, N, C, o1-o0, 1, dout[o0:], OC, t, C, 1, dinp, C)
	}
}

// bf16MinRows is the fewest rows (tokens) for which LinearForwardBF16 runs
// bfloat16 arithmetic in the bf16 compute mode: a decode step of fewer
// sequences is memory bound, and the float32 rows kernels (weights widened
// in registers) get the rounded activation instead. From bf16MinRows to
// fewRows rows the decode kernel (bf16RowsFunc) reads the weights in place;
// past fewRows, the packed GEMM.
const bf16MinRows = 8

// bf16Few is linearNT's decode path in the bf16 compute mode: x [N, C]
// rounded to bfloat16 once, then the weight rows split among the workers in
// blocks of rowBlock, each block through the decode kernel. With the AMX
// kernel asked for by name (and C a multiple of 32) the rounded x is packed
// once as the B panels of bf16AMXRows, which reads the weight rows in place,
// 32 a tile. Otherwise, from 32 inputs on and for an even C, the inputs in
// whole panels of 32 go through the panel kernel (bf16PanelRows; the
// weight rows broadcast in place, no horizontal sums) and the rest, fewer
// than 32, through the dot-product kernel: on Zen 4 one core's GFLOP/s at
// 32 and 64 inputs went from 165 and 182 to 210 and 214, while at 8–24
// inputs the dot-product kernel stays ahead (BenchmarkBF16Rows).
func (b *Backend) bf16Few(out []float32, ldo int, x []float32, w []uint16, N, C, OC int) {
	xp := b.buf((N*C + 1) / 2) // [N, C] bfloat16, two to a float32
	defer b.release(xp)
	a16 := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(*xp))), N*C)
	bf16RoundRows(a16, x, N, C)
	if b.amxRows && bf16AMXRowsOK(C) {
		packed, release := b.prepackB(a16, C, true, N, C)
		defer release()
		const amxRows = 32 // weight rows of one AMX tile pair
		blocks := (OC + amxRows - 1) / amxRows
		b.parallel(blocks, N*C*amxRows, func(lo, hi int) {
			o0, o1 := lo*amxRows, min(OC, hi*amxRows)
			bf16AMXRows(out[o0:], ldo, packed, N, C, w[o0*C:o1*C])
		})
		return
	}
	if nP := N / bprepackPanel * bprepackPanel; nP > 0 && bf16PanelRowsOK(C) {
		packed, release := b.prepackB(a16, C, true, nP, C)
		defer release()
		const panelRows = 48 // weight rows a part: four tiles of 12
		native := b.bkind != bf16Portable
		blocks := (OC + panelRows - 1) / panelRows
		b.parallel(blocks, N*C*panelRows, func(lo, hi int) {
			o0, o1 := lo*panelRows, min(OC, hi*panelRows)
			bf16PanelRows(native, out[o0:], ldo, packed, nP, C, w[o0*C:o1*C])
			if nP < N {
				b.brows(out[nP*ldo+o0:], ldo, a16[nP*C:], N-nP, C, w[o0*C:o1*C])
			}
		})
		return
	}
	blocks := (OC + rowBlock - 1) / rowBlock
	b.parallel(blocks, N*C*rowBlock, func(lo, hi int) {
		o0, o1 := lo*rowBlock, min(OC, hi*rowBlock)
		b.brows(out[o0:], ldo, a16, N, C, w[o0*C:o1*C])
	})
}

// prepackB packs the whole of op(w) [k, n] (bprepackPanels: tB, w is [n,
// k]) into a scratch of the backend, the panels split among the workers,
// and returns it with the function that gives the scratch back.
func (b *Backend) prepackB(w []uint16, ldb int, tB bool, n, k int) (pre []uint32, release func()) {
	words := bprepackWords(n, k)
	pp := b.buf(words) // 32-bit words kept in a float32 scratch
	pre = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(*pp))), words)
	b.parallel((n+bprepackPanel-1)/bprepackPanel, k*bprepackPanel, func(lo, hi int) {
		bprepackPanels(pre, w, ldb, tB, n, k, lo, hi)
	})
	return pre, func() { b.release(pp) }
}

// bgemmRun runs the bfloat16 GEMM (Options.Compute = PrecisionBF16) on
// c [m, n] (+)= bf16(a [m, k])·op(w), split over the workers as sgemm splits
// (rows of a, or columns of op(w)); m, n, k > 0, beta 0 or 1. Split by
// rows, every part would pack all of op(w): the workers pack it once
// instead, a panel range each, and the parts share it; split by columns,
// likewise for rounding a.
func (b *Backend) bgemmRun(tB bool, m, n, k int, a []float32, lda int, w []uint16, ldb int, beta float32, c []float32, ldc int) {
	if split, byRows := b.gemmSplit(b.splitB16, m, n, k); split && byRows {
		pre, release := b.prepackB(w, ldb, tB, n, k)
		defer release()
		b.sgemmParts(b.splitB16, false, false, m, n, k, lda, 0, beta, c, ldc, func(m, n, ao, _, co int) {
			bgemmPre(b.bkind, m, n, k, a[ao:], lda, pre, beta, c[co:], ldc)
		})
		return
	}
	if split, _ := b.gemmSplit(b.splitB16, m, n, k); split {
		// Split by columns, every part would round all of a: the workers
		// round it once instead, a range of rows each.
		ld16, rows := bf16A16Layout(b.bkind, m, k)
		ap := b.buf((rows*ld16 + 1) / 2) // a's rows in bfloat16, two to a float32
		defer b.release(ap)
		a16 := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(*ap))), rows*ld16)
		clear(a16[m*ld16:]) // the padding rows (AMX)
		b.parallel(m, k, func(lo, hi int) { bf16RoundRowsPad(a16[lo*ld16:], ld16, a[lo*lda:], lda, hi-lo, k) })
		// Parts of whole 64-column tiles: cut evenly, the lm_head's expect
		// product (896 columns) would give four parts of 224, each ending
		// in a lone 32-column panel the native kernel multiplies twice.
		tiles := (n + bf16TileCols - 1) / bf16TileCols
		b.split(tiles, min(2*b.pool.workers, tiles), func(lo, hi int) {
			j0, j1 := lo*bf16TileCols, min(n, hi*bf16TileCols)
			bo := j0
			if tB {
				bo = j0 * ldb
			}
			bgemmA16(b.bkind, tB, m, j1-j0, k, a16, ld16, w[bo:], ldb, beta, c[j0:], ldc)
		})
		return
	}
	b.sgemmParts(b.splitB16, false, tB, m, n, k, lda, ldb, beta, c, ldc, func(m, n, ao, bo, co int) {
		b.bgemm(tB, m, n, k, a[ao:], lda, w[bo:], ldb, beta, c[co:], ldc)
	})
}

// roundBF16 writes src rounded to bfloat16 (nearest even) and widened back
// into dst.
func roundBF16(dst, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = kernels.F32(kernels.BF16(f))
	}
}
