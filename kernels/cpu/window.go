package cpu

import (
	"math"

	"github.com/hone-rl/hone/kernels"
)

// Sliding-window attention (Gemma 3's local layers): a block of queries at a
// time against the keys the block can see, the tiles gathered into
// contiguous matrices and multiplied with the backend's Matmul (which is
// where the parallelism is). Where the window masks nothing it is
// AttentionForward/AttentionBackward.

// AttentionWindowForward: AttentionForward where query i sees only keys
// i−W < j ≤ i of its sequence (see kernels.Backend).
func (b *Backend) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	op := "AttentionWindowForward"
	kernels.NeedWindow(op, W)
	kernels.NeedAttentionForward(op, out, lse, q, k, v, seqOff, N, H, KVH, D)
	if !needsWindow(seqOff, W) {
		b.AttentionForward(out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
		return
	}
	windowForward(b, out, lse, q, k, v, seqOff, H, KVH, D, W, scale)
}

// AttentionWindowBackward accumulates the gradients of AttentionWindowForward.
func (b *Backend) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	op := "AttentionWindowBackward"
	kernels.NeedWindow(op, W)
	kernels.NeedAttentionBackward(op, dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	if !needsWindow(seqOff, W) {
		b.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
		return
	}
	windowBackward(b, dq, dk, dv, dout, out, lse, q, k, v, seqOff, H, KVH, D, W, scale)
}

// needsWindow reports whether a window of W keys masks anything in the
// packed sequences seqOff: only a sequence longer than W has a query that
// cannot see all the keys before it.
func needsWindow(seqOff []int32, W int) bool {
	if W <= 0 {
		return false
	}
	for s := 1; s < len(seqOff); s++ {
		if int(seqOff[s]-seqOff[s-1]) > W {
			return true
		}
	}
	return false
}

// windowBlock is how many consecutive queries of one sequence and one
// key/value head the window attention takes at a time.
const windowBlock = 64

// windowTile is one block of queries [r0, r1) of a sequence starting at lo,
// for key/value head g, with the keys [k0, r1) any of them can see: the
// operands gathered into contiguous matrices for the backend's Matmul.
type windowTile struct {
	lo, r0, r1, k0, g int
	rows, nk          int       // (r1−r0)·rep query rows, r1−k0 keys
	qb, ob, dob       []float32 // [rows, D] queries, outputs, output gradients
	kb, vb            []float32 // [nk, D]
	s, p              []float32 // [rows, nk] scores, then probabilities (0 where masked)
}

// windowScratch allocates a tile's buffers for the largest block.
func windowScratch(rep, D, W int) *windowTile {
	rows, nk := windowBlock*rep, windowBlock+W-1
	return &windowTile{
		qb: make([]float32, rows*D), ob: make([]float32, rows*D), dob: make([]float32, rows*D),
		kb: make([]float32, nk*D), vb: make([]float32, nk*D),
		s: make([]float32, rows*nk), p: make([]float32, rows*nk),
	}
}

// forEachTile runs fn over every tile of the packed batch in order (the
// backend's Matmul is where the parallelism is).
func forEachTile(t *windowTile, seqOff []int32, KVH, rep, W int, fn func(t *windowTile)) {
	for s := 0; s+1 < len(seqOff); s++ {
		lo, hi := int(seqOff[s]), int(seqOff[s+1])
		for g := range KVH {
			for r0 := lo; r0 < hi; r0 += windowBlock {
				t.lo, t.g, t.r0, t.r1 = lo, g, r0, min(hi, r0+windowBlock)
				t.k0 = max(lo, t.r0-W+1)
				t.rows, t.nk = (t.r1-t.r0)*rep, t.r1-t.k0
				fn(t)
			}
		}
	}
}

// gather copies the tile's rows of x [N, heads, D] (heads g·n … g·n+n−1 of
// each token in [a, b)) into dst, contiguous.
func gather(dst, x []float32, a, b, heads, g, n, D int) {
	for i := a; i < b; i++ {
		copy(dst[(i-a)*n*D:(i-a+1)*n*D], x[(i*heads+g*n)*D:(i*heads+(g+1)*n)*D])
	}
}

// scatterAdd adds src back into the tile's rows of x.
func scatterAdd(x, src []float32, a, b, heads, g, n, D int) {
	for i := a; i < b; i++ {
		row := x[(i*heads+g*n)*D : (i*heads+(g+1)*n)*D]
		for d, v := range src[(i-a)*n*D : (i-a+1)*n*D] {
			row[d] += v
		}
	}
}

// probs turns the tile's scores into probabilities: query row (i, h) keeps
// keys j with i−W < j ≤ i, and gets exp(scale·s − lse). With setLSE the
// log-sum-exp is computed and stored first (forward); else it is read.
func (t *windowTile) probs(lse []float32, H, rep, W int, scale float32, setLSE bool) {
	nk := t.nk
	for i := t.r0; i < t.r1; i++ {
		from, to := max(t.lo, i-W+1)-t.k0, i-t.k0 // visible columns [from, to]
		for hh := range rep {
			r := (i-t.r0)*rep + hh
			s, p := t.s[r*nk:(r+1)*nk], t.p[r*nk:(r+1)*nk]
			li := i*H + t.g*rep + hh
			if setLSE {
				mx := math.Inf(-1)
				for c := from; c <= to; c++ {
					mx = max(mx, float64(s[c]*scale))
				}
				var sum float64
				for c := from; c <= to; c++ {
					sum += math.Exp(float64(s[c]*scale) - mx)
				}
				lse[li] = float32(mx + math.Log(sum))
			}
			l := float64(lse[li])
			clear(p)
			for c := from; c <= to; c++ {
				p[c] = float32(math.Exp(float64(s[c]*scale) - l))
			}
		}
	}
}

// windowForward is causal grouped-query attention within each packed
// sequence where query i sees only keys j with i−W < j ≤ i (indices within
// its sequence), as transformers' sliding-window mask (kv_idx > q_idx −
// sliding_window). It writes out [N,H,D] and lse [N,H], the natural
// log-sum-exp of each query's scaled scores, for windowBackward. The
// products run through the backend's Matmul, a block of queries at a time
// against the keys the block can see.
func windowForward(be *Backend, out, lse, q, k, v []float32, seqOff []int32, H, KVH, D, W int, scale float32) {
	rep := H / KVH
	forEachTile(windowScratch(rep, D, W), seqOff, KVH, rep, W, func(t *windowTile) {
		gather(t.qb, q, t.r0, t.r1, H, t.g, rep, D)
		gather(t.kb, k, t.k0, t.r1, KVH, t.g, 1, D)
		gather(t.vb, v, t.k0, t.r1, KVH, t.g, 1, D)
		be.Matmul(t.s, t.qb, t.kb, t.rows, t.nk, D, false, true, 0)
		t.probs(lse, H, rep, W, scale, true)
		be.Matmul(t.ob, t.p, t.vb, t.rows, D, t.nk, false, false, 0)
		for i := t.r0; i < t.r1; i++ {
			copy(out[(i*H+t.g*rep)*D:(i*H+(t.g+1)*rep)*D], t.ob[(i-t.r0)*rep*D:(i-t.r0+1)*rep*D])
		}
	})
}

// windowBackward accumulates dq, dk, dv of windowForward given dout, from
// its out and lse (the probabilities are recomputed tile by tile).
func windowBackward(be *Backend, dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, H, KVH, D, W int, scale float32) {
	rep := H / KVH
	t := windowScratch(rep, D, W)
	dp := make([]float32, len(t.s))   // [rows, nk] dP, then dS
	dqb := make([]float32, len(t.qb)) // [rows, D]
	dkb := make([]float32, len(t.kb)) // [nk, D]
	forEachTile(t, seqOff, KVH, rep, W, func(t *windowTile) {
		rows, nk := t.rows, t.nk
		gather(t.qb, q, t.r0, t.r1, H, t.g, rep, D)
		gather(t.ob, out, t.r0, t.r1, H, t.g, rep, D)
		gather(t.dob, dout, t.r0, t.r1, H, t.g, rep, D)
		gather(t.kb, k, t.k0, t.r1, KVH, t.g, 1, D)
		gather(t.vb, v, t.k0, t.r1, KVH, t.g, 1, D)
		be.Matmul(t.s, t.qb, t.kb, rows, nk, D, false, true, 0)
		t.probs(lse, H, rep, W, scale, false)
		be.Matmul(dp, t.dob, t.vb, rows, nk, D, false, true, 0) // dP = dO·Vᵀ
		for r := range rows {
			di := float32(dot(t.dob[r*D:(r+1)*D], t.ob[r*D:(r+1)*D]))
			p, g := t.p[r*nk:(r+1)*nk], dp[r*nk:(r+1)*nk]
			for c := range g {
				g[c] = p[c] * (g[c] - di) * scale // dS (0 where masked: p is)
			}
		}
		be.Matmul(dqb, dp, t.kb, rows, D, nk, false, false, 0) // dQ = dS·K
		scatterAdd(dq, dqb, t.r0, t.r1, H, t.g, rep, D)
		be.Matmul(dkb, dp, t.qb, nk, D, rows, true, false, 0) // dK = dSᵀ·Q
		scatterAdd(dk, dkb, t.k0, t.r1, KVH, t.g, 1, D)
		be.Matmul(dkb, t.p, t.dob, nk, D, rows, true, false, 0) // dV = Pᵀ·dO
		scatterAdd(dv, dkb, t.k0, t.r1, KVH, t.g, 1, D)
	})
}

// dot is x·y in float64.
func dot(x, y []float32) float64 {
	var s float64
	for i, v := range x {
		s += float64(v) * float64(y[i])
	}
	return s
}
