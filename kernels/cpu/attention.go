package cpu

import (
	"math"

	"gonum.org/v1/gonum/blas/gonum"

	"github.com/hone-rl/hone/kernels"
)

// AttentionForward: causal GQA within each packed sequence (see
// kernels.Backend), one sequence and head at a time through attend.
func (b *Backend) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	op := "AttentionForward"
	kernels.NeedAttentionForward(op, out, lse, q, k, v, seqOff, N, H, KVH, D)
	S := len(seqOff) - 1
	b.attnItems(S*KVH, longest(seqOff), func(it int, s []float32, inner bool) {
		si, g := it/KVH, it%KVH
		lo, hi := int(seqOff[si]), int(seqOff[si+1])
		if hi == lo {
			return
		}
		b.attendGroup(out[lo*H*D:], lse[lo*H:], q[lo*H*D:], k[lo*KVH*D:], v[lo*KVH*D:], s, hi-lo, hi-lo, H, KVH, D, g, scale, inner)
	})
}

// attnItems runs fn(i, scratch, inner) for the items i < n of an attention
// (one sequence × one kv head each: items never write the same rows). When
// GEMMs run single-threaded (Options.SplitGEMM) the items are spread over
// the workers, each with its own T×T scratch and single-threaded products
// (inner = false: fn must not fan out further); otherwise they run one after
// another on the caller and fn may split its products and row loops
// (inner = true). Per-item products are small (T×T×D), so running whole
// items on separate cores beats splitting each product.
func (b *Backend) attnItems(n, T int, fn func(i int, s []float32, inner bool)) {
	if !b.splitGEMM || n < 2 {
		sp := b.buf(2 * T * T)
		defer b.release(sp)
		for i := 0; i < n; i++ {
			fn(i, *sp, true)
		}
		return
	}
	b.split(n, n, func(lo, hi int) {
		sp := b.buf(2 * T * T)
		defer b.release(sp)
		for i := lo; i < hi; i++ {
			fn(i, *sp, false)
		}
	})
}

// rowsOf runs fn over [0, n) rows: split among the workers when inner,
// on the calling goroutine otherwise.
func (b *Backend) rowsOf(inner bool, n, cost int, fn func(lo, hi int)) {
	if inner {
		b.parallel(n, cost, fn)
		return
	}
	fn(0, n)
}

// gemmOf is sgemm when inner, one single-threaded BLAS call otherwise.
func (b *Backend) gemmOf(inner, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, bb []float32, ldb int, beta float32, c []float32, ldc int) {
	if inner || m == 0 || n == 0 || k == 0 {
		b.sgemm(tA, tB, m, n, k, alpha, a, lda, bb, ldb, beta, c, ldc)
		return
	}
	b.gemm(tA, tB, m, n, k, alpha, a, lda, bb, ldb, beta, c, ldc)
}

// AttentionDecode: Tq new queries [Tq,H,D] against one sequence's cache [Tk,KVH,D].
func (b *Backend) AttentionDecode(out, q, kCache, vCache []float32, Tq, Tk, H, KVH, D int, scale float32) {
	op := "AttentionDecode"
	kernels.NeedAttentionDecode(op, out, q, kCache, vCache, Tq, Tk, H, KVH, D)
	if Tq == 0 {
		return
	}
	if Tq <= gemvRows {
		b.attendFew(out, nil, q, kCache, vCache, Tq, Tk, H, KVH, D, scale)
		return
	}
	b.attnItems(KVH, max(Tq, Tk), func(g int, s []float32, inner bool) {
		b.attendGroup(out, nil, q, kCache, vCache, s, Tq, Tk, H, KVH, D, g, scale, inner)
	})
}

// AttentionDecodeBatch: per sequence, the new keys and values copied into
// its cache, then AttentionDecode over the cache, or with a window W
// shorter than the cache one AttentionDecode per new token over its last W
// rows.
func (b *Backend) AttentionDecodeBatch(out, q, k, v []float32, kCache, vCache [][]float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	tk := kernels.NeedAttentionDecodeBatch("AttentionDecodeBatch", out, q, k, v, kCache, vCache, seqOff, N, H, KVH, D, W)
	qd, kvd := H*D, KVH*D
	for s := range tk {
		lo, hi := int(seqOff[s]), int(seqOff[s+1])
		Tq, Tk := hi-lo, tk[s]
		if Tq == 0 || D == 0 {
			continue
		}
		kc, vc := kCache[s], vCache[s]
		copy(kc[(Tk-Tq)*kvd:Tk*kvd], k[lo*kvd:hi*kvd])
		copy(vc[(Tk-Tq)*kvd:Tk*kvd], v[lo*kvd:hi*kvd])
		if W == 0 || Tk <= W {
			b.AttentionDecode(out[lo*qd:hi*qd], q[lo*qd:hi*qd], kc, vc, Tq, Tk, H, KVH, D, scale)
			continue
		}
		for t := range Tq {
			p := Tk - Tq + t // the token's cache row
			from := max(0, p-W+1)
			r := lo + t
			b.AttentionDecode(out[r*qd:(r+1)*qd], q[r*qd:(r+1)*qd], kc[from*kvd:(p+1)*kvd], vc[from*kvd:(p+1)*kvd], 1, p+1-from, H, KVH, D, scale)
		}
	}
}

func longest(seqOff []int32) int {
	m := 0
	for i := 0; i+1 < len(seqOff); i++ {
		m = max(m, int(seqOff[i+1]-seqOff[i]))
	}
	return m
}

// attendGroup computes, for each query head h of kv head g (h/(H/KVH) = g),
// with query i seeing key rows j ≤ Tk−Tq+i:
//
//	S   = scale·Q_h·K_gᵀ          [Tq, Tk]
//	P   = causal row softmax(S),  lse_i = log Σ_j exp(S_ij)
//	O_h = P·V_g                   [Tq, D]    written with ldc = H·D
//
// a block of query rows [i0, i1) at a time (causalBlocks), each product on
// strided views over only the keys the block can see, [0, Tk−Tq+i1): the
// masked triangle is neither multiplied nor exponentiated, only the zeros
// inside the block's own diagonal tile are written. P·V takes the
// unnormalised exp(S_ij − m_i) and each output row is divided by its sum
// after (D values a row rather than up to Tk). s is scratch of at least
// Tq·Tk + Tq floats (S and P of row i at s[i·Tk:], then the inverse sums);
// lse [Tq, H] may be nil; inner as in attnItems.
func (b *Backend) attendGroup(out, lse, q, k, v, s []float32, Tq, Tk, H, KVH, D, g int, scale float32, inner bool) {
	group := H / KVH
	off := Tk - Tq
	inv := s[Tq*Tk : Tq*Tk+Tq]
	for h := g * group; h < (g+1)*group; h++ {
		b.causalBlocks(inner, Tq, Tk*D, true, func(i0, i1 int, inner bool) {
			nk := off + i1 // keys the block's last row sees
			b.gemmOf(inner, false, true, i1-i0, nk, D, scale, q[(i0*H+h)*D:], H*D, k[g*D:], KVH*D, 0, s[i0*Tk:], Tk)
			b.rowsOf(inner, i1-i0, nk, func(lo, hi int) {
				for i := i0 + lo; i < i0+hi; i++ {
					row := s[i*Tk : i*Tk+nk]
					vis := row[:off+i+1]
					m := b.RowMax(vis)
					sum := b.ExpShift(vis, vis, m, 1) // exp(S − m), Σ in float64
					inv[i] = float32(1 / sum)
					clear(row[len(vis):])
					if lse != nil {
						lse[i*H+h] = m + float32(math.Log(sum))
					}
				}
			})
			b.gemmOf(inner, false, false, i1-i0, D, nk, 1, s[i0*Tk:], Tk, v[g*D:], KVH*D, 0, out[(i0*H+h)*D:], H*D)
			for i := i0; i < i1; i++ {
				o, r := out[(i*H+h)*D:(i*H+h+1)*D], inv[i]
				for d := range o {
					o[d] *= r
				}
			}
		})
	}
}

// attnBlock is how many query rows (or, in AttentionBackward's dK and dV,
// key rows) of one sequence and head the causal attention takes at a time.
// A block of rows [i0, i1) multiplies only the keys its last row sees, so
// of the full T×T products about (1 + attnBlock/T)/2 are computed; smaller
// blocks skip more of the masked triangle but make thinner products and
// more calls. BenchmarkAttentionTrain (forward + backward, 8×256, H=14,
// KVH=2, D=64, 2 workers, best CPU ms per call on a shared 2-vCPU AMD Zen 4):
// blocks of 16 68, 32 62–65, 48 67, 64 64–65, 128 72; at 2×1024, 32 237,
// 64 231, 128 234. 32 and 64 are within the noise of each other; 64 makes
// half the calls.
const attnBlock = 64

// causalBlocks runs fn(i0, i1, inner) over [0, n) cut into blocks of
// attnBlock rows (the last one shorter), from the last block to the first
// when desc (the blocks with the most keys first), writing disjoint rows.
// When inner and the backend's products are single-threaded (splitGEMM:
// an item's block products are too small to split) the blocks are spread
// over the workers, each with single-threaded products and row loops
// (fn's inner false), claimed costliest first so the last ones are short;
// otherwise they run in turn on the caller and fn may split its products
// and row loops as inner says. cost is the work of one block row.
func (b *Backend) causalBlocks(inner bool, n, cost int, desc bool, fn func(i0, i1 int, inner bool)) {
	nb := (n + attnBlock - 1) / attnBlock
	block := func(bi int, inner bool) {
		if desc {
			bi = nb - 1 - bi
		}
		fn(bi*attnBlock, min(n, (bi+1)*attnBlock), inner)
	}
	if inner && b.splitGEMM {
		b.parallel(nb, attnBlock*cost, func(lo, hi int) {
			for bi := lo; bi < hi; bi++ {
				block(bi, false)
			}
		})
		return
	}
	for bi := range nb {
		block(bi, inner)
	}
}

// attendFew is attendGroup over all heads for a few queries (decode): the same formulas, with
// heads split among the workers and each score row and output computed by
// the matrix-vector kernels on the strided cache (f32Gemv for S = scale·q·Kᵀ,
// f32GemvT for out = P·V), so no BLAS call pays thread start-up per token.
func (b *Backend) attendFew(out, lse, q, k, v []float32, Tq, Tk, H, KVH, D int, scale float32) {
	group := H / KVH
	b.parallel(H, Tq*Tk*D, func(h0, h1 int) {
		s := make([]float32, Tk) // [Tk] scores, then probabilities, of one query
		for h := h0; h < h1; h++ {
			g := h / group
			for i := 0; i < Tq; i++ {
				row := s[:Tk-Tq+i+1]
				b.feat.f32Gemv(row, q[(i*H+h)*D:(i*H+h+1)*D], k[g*D:], D, KVH*D)
				m := float32(math.Inf(-1))
				for j := range row {
					row[j] *= scale
					m = max(m, row[j])
				}
				var sum float32
				for j, x := range row {
					e := exp32(x - m)
					row[j] = e
					sum += e
				}
				inv := 1 / sum
				for j := range row {
					row[j] *= inv
				}
				if lse != nil {
					lse[i*H+h] = m + float32(math.Log(float64(sum)))
				}
				b.feat.f32GemvT(out[(i*H+h)*D:(i*H+h+1)*D], row, v[g*D:], KVH*D)
			}
		}
	})
}

// AttentionBackward accumulates dq, dk, dv per sequence and head, recomputing
// P from lse:
//
//	S = scale·Q_h·K_gᵀ,  P_ij = exp(S_ij − lse_i) (0 above the diagonal)
//	dV_g += Pᵀ·dO_h
//	dP   = dO_h·V_gᵀ,  dS_ij = P_ij·(dP_ij − dO_i·O_i)
//	dQ_h += scale·dS·K_g,  dK_g += scale·dSᵀ·Q_h
//
// in causal blocks (causalBlocks) that skip the masked triangle: for query
// rows [i0, i1), P, dP and dS over keys [0, i1) and dQ's rows; then, once
// P and dS are whole, for key rows [j0, j1), dV's and dK's rows summed
// over the queries that see them, [j0, t), each in one product.
func (b *Backend) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	op := "AttentionBackward"
	kernels.NeedAttentionBackward(op, dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	S := len(seqOff) - 1
	group := H / KVH
	b.attnItems(S*KVH, longest(seqOff), func(it int, scratch []float32, inner bool) {
		si, g := it/KVH, it%KVH
		lo, hi := int(seqOff[si]), int(seqOff[si+1])
		t := hi - lo
		if t == 0 {
			return
		}
		Q, K, V := q[lo*H*D:], k[lo*KVH*D:], v[lo*KVH*D:]
		dO, O, L := dout[lo*H*D:], out[lo*H*D:], lse[lo*H:]
		dQ, dK, dV := dq[lo*H*D:], dk[lo*KVH*D:], dv[lo*KVH*D:]
		P, dP := scratch[:t*t], scratch[t*t:2*t*t] // P and dP (then dS) of one head, row i at i·t
		for h := g * group; h < (g+1)*group; h++ {
			b.causalBlocks(inner, t, t*D, true, func(i0, i1 int, inner bool) {
				b.gemmOf(inner, false, true, i1-i0, i1, D, scale, Q[(i0*H+h)*D:], H*D, K[g*D:], KVH*D, 0, P[i0*t:], t)
				b.gemmOf(inner, false, true, i1-i0, i1, D, 1, dO[(i0*H+h)*D:], H*D, V[g*D:], KVH*D, 0, dP[i0*t:], t)
				b.rowsOf(inner, i1-i0, i1, func(lo, hi int) {
					for i := i0 + lo; i < i0+hi; i++ {
						dd := gonum.Implementation{}.Sdot(D, dO[(i*H+h)*D:], 1, O[(i*H+h)*D:], 1) // dO_i·O_i (assembly)
						row, drow := P[i*t:i*t+i1], dP[i*t:i*t+i1]
						vis := row[:i+1]
						b.ExpShift(vis, vis, L[i*H+h], 1)
						for j, pij := range vis {
							drow[j] = pij * (drow[j] - dd)
						}
						clear(row[i+1:])
						clear(drow[i+1:])
					}
				})
				b.gemmOf(inner, false, false, i1-i0, D, i1, scale, dP[i0*t:], t, K[g*D:], KVH*D, 1, dQ[(i0*H+h)*D:], H*D)
			})
			// Key row j is seen by queries [j, t); a key block's rows of
			// P and dS below its diagonal tile were written by the query
			// blocks at or after it, zeros above the diagonal included.
			b.causalBlocks(inner, t, t*D, false, func(j0, j1 int, inner bool) {
				b.gemmOf(inner, true, false, j1-j0, D, t-j0, 1, P[j0*t+j0:], t, dO[(j0*H+h)*D:], H*D, 1, dV[(j0*KVH+g)*D:], KVH*D)
				b.gemmOf(inner, true, false, j1-j0, D, t-j0, scale, dP[j0*t+j0:], t, Q[(j0*H+h)*D:], H*D, 1, dK[(j0*KVH+g)*D:], KVH*D)
			})
		}
	})
}
