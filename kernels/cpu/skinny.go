package cpu

// Skinny products: a LoRA update's matrix products pair its rank r (8 in
// modelbench's training rows) with the tokens of the step (thousands) and a
// projection's width (896–4864):
//
//	u  = x·Aᵀ      [N, r]   (LinearForward, OC = r)
//	g  = dout·B    [N, r]   (Matmul, N = r)
//	DB += doutᵀ·u  [Out, r] (Matmul, transA, N = r)
//	DA += gᵀ·x     [r, In]  (Matmul, transA, M = r)
//
// Each reads one big operand once and does r multiply-adds a value of it:
// the blocked GEMM pads the rank to its tile and repacks the big operand,
// and ran them at 6–13 GB/s on one AMD Zen 4 core. These take them instead:
// the first two skinnyNT (the big operand's rows against the r rows, r
// vector sums a row), the last two skinnyTN (2·r column sums of c kept in
// registers over the long side); DB's result goes through a small buffer,
// as the kernel writes its transpose. The products the LoRA update sums
// over its rank (out += u·Bᵀ, dx += g·A) stay with the GEMM, which runs
// them at memory speed already.

// skinnyMax is the largest narrow side (the rank) the skinny products take;
// skinnyMin is the fewest the other two sides must each have (below it the
// GEMM's packing is cheap anyway).
const (
	skinnyMax = 16
	skinnyMin = 64
)

// skinnyCols is the number of columns of c one part of skinnyTN's split
// takes (its kernel's block).
const skinnyCols = 32

// skinnyTNGo is the plain-Go form of skinnyTN:
//
//	c[r*ldc+w] += Σ_t p[t*ldp+r]·q[t*ldq+w]   for r < R, w < W, t < T
//
// summed in order of t.
func skinnyTNGo(c []float32, ldc int, p []float32, ldp int, q []float32, ldq, R, W, T int) {
	for t := range T {
		qt := q[t*ldq : t*ldq+W]
		for r := range R {
			pv := p[t*ldp+r]
			cr := c[r*ldc : r*ldc+W]
			for w, qv := range qt {
				cr[w] += pv * qv
			}
		}
	}
}

// matmulSkinny runs Matmul's c [M,N] = op(a)·op(b) + beta·c as a skinny
// product when its shape is one (see above) and reports whether it did.
func (b *Backend) matmulSkinny(c, a, bb []float32, M, N, K int, transA, transB bool, beta float32) bool {
	if K < skinnyMin {
		return false
	}
	switch {
	case transA && !transB && M <= skinnyMax && N >= skinnyMin:
		// c [M, N] += aᵀ·b, a [K, M] narrow, b [K, N] wide (DA += gᵀ·x).
		if beta != 1 {
			scaleC(M, N, beta, c, N)
		}
		b.tn(c, N, a, M, bb, N, M, N, K)
	case transA && !transB && N <= skinnyMax && M >= skinnyMin:
		// cᵀ [N, M] = bᵀ·a, b [K, N] narrow, a [K, M] wide (DB += doutᵀ·u).
		s := b.buf(N * M)
		defer b.release(s)
		clear(*s)
		b.tn(*s, M, bb, N, a, M, N, M, K)
		addT(c, N, *s, M, N, beta)
	case !transA && N <= skinnyMax && M >= skinnyMin:
		// c [M, N] = a [M, K]·op(b), op(b)ᵀ [N, K] narrow (g = dout·B).
		p := bb
		if !transB {
			pp := b.buf(N * K)
			defer b.release(pp)
			p = *pp
			for k := range K {
				for n, v := range bb[k*N : (k+1)*N] {
					p[n*K+k] = v
				}
			}
		}
		b.nt(c, N, a, K, p, K, M, N, K, beta)
	default:
		return false
	}
	return true
}

// tn is skinnyTN split among the workers by blocks of skinnyCols columns.
func (b *Backend) tn(c []float32, ldc int, p []float32, ldp int, q []float32, ldq, R, W, T int) {
	blocks := (W + skinnyCols - 1) / skinnyCols
	b.parallel(blocks, R*T*skinnyCols, func(lo, hi int) {
		w0, w1 := lo*skinnyCols, min(W, hi*skinnyCols)
		b.feat.skinnyTN(c[w0:], ldc, p, ldp, q[w0:], ldq, R, w1-w0, T)
	})
}

// addT writes c[i*ldc+j] = s[j*M+i] + beta·c[i*ldc+j] for i < M, j < N
// (beta 0: s alone, c's old contents ignored).
func addT(c []float32, ldc int, s []float32, M, N int, beta float32) {
	for i := range M {
		row := c[i*ldc : i*ldc+N]
		for j := range row {
			v := s[j*M+i]
			if beta != 0 {
				v += beta * row[j]
			}
			row[j] = v
		}
	}
}

// skinnyChunk is the number of rows of q one pass of skinnyTN's kernel
// takes over every column block before the next rows: about 320 KB of q,
// between 8 and 64 rows.
func skinnyChunk(ldq int) int {
	return min(64, max(8, 320<<10/(4*max(1, ldq))))
}

// skinnyNTGo is the plain-Go form of skinnyNT:
//
//	o[t*ldo+r] = Σ_c q[t*ldq+c]·p[r*ldp+c] (+ beta·o[t*ldo+r] when beta ≠ 0)
//
// for t < T, r < R, c < K.
func skinnyNTGo(o []float32, ldo int, q []float32, ldq int, p []float32, ldp, T, R, K int, beta float32) {
	for t := range T {
		qt := q[t*ldq : t*ldq+K]
		for r := range R {
			var s float32
			for c, pv := range p[r*ldp : r*ldp+K] {
				s += qt[c] * pv
			}
			if beta != 0 {
				s += beta * o[t*ldo+r]
			}
			o[t*ldo+r] = s
		}
	}
}

// skinnyNTRows is the number of rows of q one part of nt's split takes (a
// multiple of the kernel's 3-row tile).
const skinnyNTRows = 48

// nt is skinnyNT split among the workers by blocks of skinnyNTRows rows of q.
func (b *Backend) nt(o []float32, ldo int, q []float32, ldq int, p []float32, ldp, T, R, K int, beta float32) {
	blocks := (T + skinnyNTRows - 1) / skinnyNTRows
	b.parallel(blocks, R*K*skinnyNTRows, func(lo, hi int) {
		t0, t1 := lo*skinnyNTRows, min(T, hi*skinnyNTRows)
		b.feat.skinnyNT(o[t0*ldo:], ldo, q[t0*ldq:], ldq, p, ldp, t1-t0, R, K, beta)
	})
}
