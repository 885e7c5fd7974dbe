package cpu

import (
	"math"

	"github.com/hone-rl/hone/kernels"
)

// rowMax returns the largest value of x (len(x) > 0).
func rowMax(x []float32) float32 {
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	return m
}

// rowLSE returns log Σ exp(x) with the sum in float64.
func rowLSE(x []float32) float32 {
	m := rowMax(x)
	var s float64
	for _, v := range x {
		s += float64(exp32(v - m))
	}
	return m + float32(math.Log(s))
}

// LogSoftmaxForward: out [N,V] = inp − logsumexp(row).
func (b *Backend) LogSoftmaxForward(out, inp []float32, N, V int) {
	op := "LogSoftmaxForward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "out", len(out), N*V)
	kernels.Need(op, "inp", len(inp), N*V)
	if V == 0 {
		return
	}
	b.parallel(N, V, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			x, o := inp[n*V:(n+1)*V], out[n*V:(n+1)*V]
			l := rowLSE(x)
			for j, v := range x {
				o[j] = v - l
			}
		}
	})
}

// LogSoftmaxBackward accumulates dinp [N,V] += dout − exp(out)·Σ dout.
func (b *Backend) LogSoftmaxBackward(dinp, dout, out []float32, N, V int) {
	op := "LogSoftmaxBackward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "dinp", len(dinp), N*V)
	kernels.Need(op, "dout", len(dout), N*V)
	kernels.Need(op, "out", len(out), N*V)
	b.parallel(N, V, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			d, o, di := dout[n*V:(n+1)*V], out[n*V:(n+1)*V], dinp[n*V:(n+1)*V]
			var s float64
			for _, v := range d {
				s += float64(v)
			}
			s32 := float32(s)
			for j := range d {
				di[j] += d[j] - exp32(o[j])*s32
			}
		}
	})
}

// rowEntropy returns −Σ p·log p of softmax(x) and the row's logsumexp.
func rowEntropy(x []float32) (ent, lse float32) {
	m := rowMax(x)
	var s, t float64 // Σ e_j, Σ e_j·(x_j − m)
	for _, v := range x {
		d := v - m
		e := float64(exp32(d))
		s += e
		if e != 0 { // 0·log 0 = 0: a masked (−Inf) logit would make e·d NaN
			t += e * float64(d)
		}
	}
	ls := math.Log(s)
	return float32(ls - t/s), m + float32(ls)
}

// EntropyForward: ent [N] of softmax(inp [N,V]) rows.
func (b *Backend) EntropyForward(ent, inp []float32, N, V int) {
	op := "EntropyForward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "ent", len(ent), N)
	kernels.Need(op, "inp", len(inp), N*V)
	if V == 0 {
		return
	}
	b.parallel(N, V, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			ent[n], _ = rowEntropy(inp[n*V : (n+1)*V])
		}
	})
}

// EntropyBackward accumulates dinp [N,V] += −dent·p·(log p + ent).
func (b *Backend) EntropyBackward(dinp, dent, inp []float32, N, V int) {
	op := "EntropyBackward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "dinp", len(dinp), N*V)
	kernels.Need(op, "dent", len(dent), N)
	kernels.Need(op, "inp", len(inp), N*V)
	if V == 0 {
		return
	}
	b.parallel(N, V, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			x, di := inp[n*V:(n+1)*V], dinp[n*V:(n+1)*V]
			e, l := rowEntropy(x)
			d := dent[n]
			for j, v := range x {
				lp := v - l
				if p := exp32(lp); p != 0 { // a masked (−Inf) logit: no gradient, not 0·(−Inf)
					di[j] -= d * p * (lp + e)
				}
			}
		}
	})
}

// rows returns weight rows [v0, v1) of w.
func (w weights) rows(v0, v1, C int) weights {
	if w.f32 != nil {
		return weights{f32: w.f32[v0*C : v1*C]}
	}
	return weights{bf16: w.bf16[v0*C : v1*C]}
}

// chunkRows returns weight rows [v0, v0+cs) of w, widened into wide first
// when wide is given (bfloat16 rows for a GEMM without a bfloat16 form,
// used for two products of the chunk).
func (b *Backend) chunkRows(w weights, v0, cs, C int, wide []float32) weights {
	wv := w.rows(v0, v0+cs, C)
	if wide == nil {
		return wv
	}
	wc := wide[:cs*C]
	b.widen(wc, wv.bf16)
	return weights{f32: wc}
}

// LogprobForward: per-row logprob of the target, entropy and lse of
// softmax(hidden·weightᵀ), chunked over the vocabulary (see kernels.Backend).
func (b *Backend) LogprobForward(logprob, entropy, lse, expect, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	op := "LogprobForward"
	kernels.Need(op, "weight", len(weight), V*C)
	b.logprobForward(op, logprob, entropy, lse, expect, hidden, weights{f32: weight[: V*C : V*C]}, targets, N, C, V, chunk)
}

// LogprobForwardBF16 is LogprobForward with a bfloat16 weight [V,C].
func (b *Backend) LogprobForwardBF16(logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	op := "LogprobForwardBF16"
	kernels.Need(op, "weight", len(weight), V*C)
	b.logprobForward(op, logprob, entropy, lse, expect, hidden, weights{bf16: weight[: V*C : V*C]}, targets, N, C, V, chunk)
}

// logprobForward keeps, per row, the running maximum m, s = Σ exp(z_j − m)
// and t = Σ exp(z_j − m)·(z_j − m) over the chunks seen so far; a new
// maximum m' rescales them (s ← s·e^(m−m'), t ← (t + (m−m')·s)·e^(m−m')).
// At the end lse = m + log s and entropy = log s − t/s.
//
// With expect, each row also keeps e = Σ exp(z_j − m)·W_j, rescaled with s
// (e ← e·e^(m−m')): the chunk's logits block is turned in place into
// exp(z_j − m) and multiplied by the chunk's weight rows. At the end
// expect = e/s.
func (b *Backend) logprobForward(op string, logprob, entropy, lse, expect, hidden []float32, w weights, targets []int32, N, C, V, chunk int) {
	// The callers checked the weight and cut it to V·C values.
	kernels.NeedLogprobForward(op, logprob, entropy, lse, expect, hidden, V*C, targets, N, C, V)
	if N == 0 {
		return
	}
	if V == 0 {
		panic("kernels." + op + ": empty vocabulary")
	}
	if chunk <= 0 {
		chunk = kernels.DefaultLogprobChunk
	}
	chunk = min(chunk, V)
	R := min(b.lpRows, N)
	zp := b.buf(R * chunk) // [R, chunk] logits block
	defer b.release(zp)
	z := *zp
	var tile []float32 // [bf16Tile, C] widened bf16 rows, for a GEMM without a bfloat16 form
	// With expect, such a GEMM gets each chunk widened once for its two
	// products instead (as logprobBackward).
	widenChunks := expect != nil && w.bf16 != nil && b.gemmB16 == nil && b.bgemm == nil
	var wide []float32 // [chunk, C]
	switch {
	case widenChunks:
		wp := b.buf(chunk * C)
		defer b.release(wp)
		wide = *wp
	case w.bf16 != nil && b.gemmB16 == nil:
		tp := b.buf(bf16Tile * C)
		defer b.release(tp)
		tile = *tp
	}
	m := make([]float32, R)                        // [R] running max
	s, t := make([]float64, R), make([]float64, R) // [R] running Σe, Σe·(z−m)
	zt := make([]float32, R)                       // [R] target logit
	for r0 := 0; r0 < N; r0 += R {
		nr := min(R, N-r0)
		for i := 0; i < nr; i++ {
			m[i], s[i], t[i] = float32(math.Inf(-1)), 0, 0
		}
		var ex []float32 // [nr, C] rows of expect, unnormalised
		if expect != nil {
			ex = expect[r0*C : (r0+nr)*C]
			clear(ex)
		}
		for v0 := 0; v0 < V; v0 += chunk {
			cs := min(chunk, V-v0)
			wv := b.chunkRows(w, v0, cs, C, wide)
			b.linearNT(z, cs, hidden[r0*C:], wv, tile, nr, C, cs)
			b.parallel(nr, cs, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					row := z[i*cs : (i+1)*cs]
					if tg := int(targets[r0+i]) - v0; tg >= 0 && tg < cs {
						zt[i] = row[tg]
					}
					var exRow []float32 // [C]
					if ex != nil {
						exRow = ex[i*C : (i+1)*C]
					}
					b.foldChunk(row, &m[i], &s[i], &t[i], exRow)
				}
			})
			if ex != nil {
				if wv.f32 != nil {
					b.sgemm(false, false, nr, C, cs, 1, z, cs, wv.f32, C, 1, ex, C)
				} else {
					b.accB16(nr, C, cs, z, cs, wv.bf16, ex)
				}
			}
		}
		for i := 0; i < nr; i++ {
			n := r0 + i
			if ex != nil {
				scaleRow(ex[i*C:(i+1)*C], float32(1/s[i]))
			}
			ls := math.Log(s[i])
			lse[n] = m[i] + float32(ls)
			entropy[n] = float32(ls - t[i]/s[i])
			logprob[n] = 0
			if targets[n] >= 0 {
				logprob[n] = zt[i] - lse[n]
			}
		}
	}
}

// foldChunk folds one chunk of a row's logits into the row's running
// maximum m, s = Σ exp(z − m) and t = Σ exp(z − m)·(z − m), rescaling them
// when the chunk raises the maximum, as logprobForward describes. With ex
// (the row's unnormalised expect [C]) it rescales ex too and leaves
// exp(z − m) in row, for the caller's product with the chunk's weights.
func (b *Backend) foldChunk(row []float32, m *float32, s, t *float64, ex []float32) {
	var cm float32
	if b.vec.rowMax != nil {
		cm = b.vec.rowMax(row)
	} else {
		cm = rowMax(row)
	}
	if cm > *m {
		if *s > 0 {
			d := float64(*m - cm)
			f := math.Exp(d)
			*t = (*t + d**s) * f
			*s *= f
			if ex != nil {
				scaleRow(ex, float32(f))
			}
		}
		*m = cm
	}
	mi := *m
	var cs1, ct float64
	if b.vec.expSums != nil {
		cs1, ct = b.vec.expSums(row, mi)
	} else {
		for _, x := range row {
			d := x - mi
			e := float64(exp32(d))
			cs1 += e
			ct += e * float64(d)
		}
	}
	*s += cs1
	*t += ct
	if ex != nil {
		b.ExpShift(row, row, mi, 1) // row ← exp(z − m), in place
	}
}

// LogprobBackward accumulates dhidden [N,C] and dweight [V,C] (nil: skipped).
func (b *Backend) LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	op := "LogprobBackward"
	kernels.Need(op, "weight", len(weight), V*C)
	b.logprobBackward(op, dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weights{f32: weight[: V*C : V*C]}, targets, N, C, V, chunk)
}

// LogprobBackwardBF16 accumulates dhidden [N,C] through a frozen bfloat16 weight.
func (b *Backend) LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	op := "LogprobBackwardBF16"
	kernels.Need(op, "weight", len(weight), V*C)
	b.logprobBackward(op, dhidden, nil, dlogprob, dentropy, lse, entropy, hidden, weights{bf16: weight[: V*C : V*C]}, targets, N, C, V, chunk)
}

// logprobBackward recomputes each [rows, chunk] logits block, turns it into
// dz in place (p = exp(z − lse)):
//
//	dz_j = dlogprob·([j = t] − p_j) − dentropy·p_j·(z_j − lse + H)
//
// and accumulates dhidden += dz·W_chunk and dweight_chunk += dzᵀ·hidden.
func (b *Backend) logprobBackward(op string, dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden []float32, w weights, targets []int32, N, C, V, chunk int) {
	// The callers checked the weight and cut it to V·C values.
	kernels.NeedLogprobBackward(op, dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, V*C, targets, N, C, V)
	if N == 0 || V == 0 || C == 0 {
		return
	}
	if chunk <= 0 {
		chunk = kernels.DefaultLogprobChunk
	}
	chunk = min(chunk, V)
	R := min(b.lpRows, N)
	zp := b.buf(R * chunk) // [R, chunk] logits, then dz
	defer b.release(zp)
	z := *zp
	// A GEMM with a bfloat16 form reads the bf16 rows directly; otherwise
	// each chunk is widened once for its two products.
	widenChunks := w.bf16 != nil && b.gemmB16 == nil && b.bgemm == nil
	var wide []float32 // [chunk, C] widened bf16 rows of one chunk
	if widenChunks {
		wp := b.buf(chunk * C)
		defer b.release(wp)
		wide = *wp
	}
	for r0 := 0; r0 < N; r0 += R {
		nr := min(R, N-r0)
		for v0 := 0; v0 < V; v0 += chunk {
			cs := min(chunk, V-v0)
			wv := b.chunkRows(w, v0, cs, C, wide)
			b.linearNT(z, cs, hidden[r0*C:], wv, nil, nr, C, cs)
			b.parallel(nr, cs, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					n := r0 + i
					var dl, de float32
					if dlogprob != nil && targets[n] >= 0 {
						dl = dlogprob[n]
					}
					if dentropy != nil {
						de = dentropy[n]
					}
					l, H := lse[n], entropy[n]
					row := z[i*cs : (i+1)*cs]
					if b.vec.logprobGrad != nil {
						b.vec.logprobGrad(row, l, dl, de, H)
					} else {
						for j, x := range row {
							lp := x - l
							p := exp32(lp)
							row[j] = -dl*p - de*p*(lp+H)
						}
					}
					if tg := int(targets[n]) - v0; tg >= 0 && tg < cs {
						row[tg] += dl
					}
				}
			})
			if wv.f32 != nil {
				b.sgemm(false, false, nr, C, cs, 1, z, cs, wv.f32, C, 1, dhidden[r0*C:], C)
			} else {
				b.accB16(nr, C, cs, z, cs, wv.bf16, dhidden[r0*C:])
			}
			if dweight != nil {
				b.sgemm(true, false, cs, C, nr, 1, z, cs, hidden[r0*C:], C, 1, dweight[v0*C:], C)
			}
		}
	}
}

func scaleRow(row []float32, f float32) {
	for j := range row {
		row[j] *= f
	}
}

// LogprobBackwardExpect accumulates dhidden [N,C] from the forward's expect.
func (b *Backend) LogprobBackwardExpect(dhidden, dlogprob, expect, weight []float32, targets []int32, N, C, V int) {
	op := "LogprobBackwardExpect"
	kernels.NeedLogprobBackwardExpect(op, dhidden, dlogprob, expect, len(weight), targets, N, C, V)
	b.logprobBackwardExpect(op, dhidden, dlogprob, expect, weights{f32: weight[: V*C : V*C]}, targets, N, C, V)
}

// LogprobBackwardExpectBF16 is LogprobBackwardExpect with a bfloat16 weight [V,C].
func (b *Backend) LogprobBackwardExpectBF16(dhidden, dlogprob, expect []float32, weight []uint16, targets []int32, N, C, V int) {
	op := "LogprobBackwardExpectBF16"
	kernels.NeedLogprobBackwardExpect(op, dhidden, dlogprob, expect, len(weight), targets, N, C, V)
	b.logprobBackwardExpect(op, dhidden, dlogprob, expect, weights{bf16: weight[: V*C : V*C]}, targets, N, C, V)
}

// logprobBackwardExpect is both LogprobBackwardExpects' body, their
// arguments checked (kernels.NeedLogprobBackwardExpect).
func (b *Backend) logprobBackwardExpect(op string, dhidden, dlogprob, expect []float32, w weights, targets []int32, N, C, V int) {
	b.parallel(N, C, func(lo, hi int) {
		var wt []float32 // one widened bfloat16 row
		if w.bf16 != nil {
			wt = make([]float32, C)
		}
		for n := lo; n < hi; n++ {
			tg := int(targets[n])
			if tg < 0 {
				continue
			}
			dl := dlogprob[n]
			dh, e := dhidden[n*C:(n+1)*C], expect[n*C:(n+1)*C]
			if w.f32 != nil {
				wt = w.f32[tg*C : (tg+1)*C]
			} else {
				kernels.FromBF16(wt, w.bf16[tg*C:(tg+1)*C])
			}
			for c := range dh {
				dh[c] += dl * (wt[c] - e[c])
			}
		}
	})
}

// accB16 accumulates c [m, n] (row stride n) += z [m, k] (row stride ldz) ·
// w [k, n] (bfloat16): with the bfloat16 GEMM in the bf16 compute mode (z
// rounded to bfloat16), else with the GEMM's bfloat16 form. Only for a
// backend with one of them (callers widen w otherwise).
func (b *Backend) accB16(m, n, k int, z []float32, ldz int, w []uint16, c []float32) {
	if b.bgemm != nil {
		b.bgemmRun(false, m, n, k, z, ldz, w, n, 1, c, n)
		return
	}
	b.sgemmB16(false, false, m, n, k, 1, z, ldz, w, n, 1, c, n)
}
