package cpu

import (
	"math"

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
	kernels.NeedSizes(op, Tq, Tk, D)
	kernels.NeedHeads(op, H, KVH)
	if Tq > Tk {
		panic("kernels.AttentionDecode: more new tokens than cache rows")
	}
	kernels.Need(op, "out", len(out), Tq*H*D)
	kernels.Need(op, "q", len(q), Tq*H*D)
	kernels.Need(op, "kCache", len(kCache), Tk*KVH*D)
	kernels.Need(op, "vCache", len(vCache), Tk*KVH*D)
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
//	S   = scale·Q_h·K_gᵀ          [Tq, Tk]   one sgemm on strided views
//	P   = causal row softmax(S),  lse_i = log Σ_j exp(S_ij)
//	O_h = P·V_g                   [Tq, D]    one sgemm, written with ldc = H·D
//
// s is scratch of at least Tq·Tk floats; lse [Tq, H] may be nil; inner as
// in attnItems.
func (b *Backend) attendGroup(out, lse, q, k, v, s []float32, Tq, Tk, H, KVH, D, g int, scale float32, inner bool) {
	group := H / KVH
	s = s[:Tq*Tk]
	for h := g * group; h < (g+1)*group; h++ {
		b.gemmOf(inner, false, true, Tq, Tk, D, scale, q[h*D:], H*D, k[g*D:], KVH*D, 0, s, Tk)
		b.rowsOf(inner, Tq, Tk, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				row := s[i*Tk : (i+1)*Tk]
				last := Tk - Tq + i
				m := row[0]
				for _, x := range row[1 : last+1] {
					m = max(m, x)
				}
				var sum float32
				for j := 0; j <= last; j++ {
					e := exp32(row[j] - m)
					row[j] = e
					sum += e
				}
				inv := 1 / sum
				for j := 0; j <= last; j++ {
					row[j] *= inv
				}
				clear(row[last+1:])
				if lse != nil {
					lse[i*H+h] = m + float32(math.Log(float64(sum)))
				}
			}
		})
		b.gemmOf(inner, false, false, Tq, D, Tk, 1, s, Tk, v[g*D:], KVH*D, 0, out[h*D:], H*D)
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
		P, dP := scratch[:t*t], scratch[t*t:2*t*t] // P and dP (then dS) of one head
		for h := g * group; h < (g+1)*group; h++ {
			b.gemmOf(inner, false, true, t, t, D, scale, Q[h*D:], H*D, K[g*D:], KVH*D, 0, P, t)
			b.gemmOf(inner, false, true, t, t, D, 1, dO[h*D:], H*D, V[g*D:], KVH*D, 0, dP, t)
			b.rowsOf(inner, t, t, func(i0, i1 int) {
				for i := i0; i < i1; i++ {
					var dd float32
					do, o := dO[(i*H+h)*D:(i*H+h+1)*D], O[(i*H+h)*D:(i*H+h+1)*D]
					for d := range do {
						dd += do[d] * o[d]
					}
					row, drow := P[i*t:(i+1)*t], dP[i*t:(i+1)*t]
					l := L[i*H+h]
					for j := 0; j <= i; j++ {
						pij := exp32(row[j] - l)
						row[j] = pij
						drow[j] = pij * (drow[j] - dd)
					}
					clear(row[i+1:])
					clear(drow[i+1:])
				}
			})
			b.gemmOf(inner, true, false, t, D, t, 1, P, t, dO[h*D:], H*D, 1, dV[g*D:], KVH*D)
			b.gemmOf(inner, false, false, t, D, t, scale, dP, t, K[g*D:], KVH*D, 1, dQ[h*D:], H*D)
			b.gemmOf(inner, true, false, t, D, t, scale, dP, t, Q[h*D:], H*D, 1, dK[g*D:], KVH*D)
		}
	})
}
