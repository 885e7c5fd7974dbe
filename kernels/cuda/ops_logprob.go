package cuda

import (
	"github.com/hone-rl/hone/kernels"
)

// lmWeight says how a logprob plan multiplies by the lm_head weight
// [V,C]: float32 (Sgemm), or bfloat16 in one of the precision modes.
type lmWeight struct {
	bf16 bool
	prec kernels.Precision // with bf16
}

func (w lmWeight) fast() bool { return w.bf16 && w.prec == kernels.PrecisionBF16 }

// lmScratch are a logprob plan's scratch buffers beyond z and state: wf
// the widened weight chunk [chunk,C] (bfloat16 weight, PrecisionF32), hb
// the rounded hidden [N,C] and pb the rounded chunk [N,chunk] (bfloat16
// weight, PrecisionBF16; bfloat16 values). Unused ones may be nil.
type lmScratch struct{ wf, hb, pb any }

// lmLen returns the sizes lmScratch needs, in float32 buffer elements.
func (w lmWeight) lmLen(N, C, cl int) (wf, hb, pb int) {
	switch {
	case w.fast():
		return 0, bf16Len(N * C), bf16Len(N * cl)
	case w.bf16:
		return cl * C, 0, 0
	}
	return 0, 0, 0
}

// chunkProduct returns the steps of C [N, n] (+)= A [N, k] · the weight's
// rows j0 … j0+l−1 (transB: ᵀ, [N,l]; else [N,C]) as w says: the operand
// a is rounded into sc.pb first in the fast mode (unless it is hidden,
// rounded once into sc.hb: rounded), the rows are widened into sc.wf
// first in the exact bfloat16 mode (unless widened already).
func (w lmWeight) chunkProduct(c, a, weight any, sc lmScratch, rounded, widened bool, transB bool, N, C, j0, l int, beta float32) []xstep {
	g := mm{C: c, A: a, B: weight, OffB: j0 * C, M: N, N: C, K: l, Beta: beta}
	if transB {
		g.N, g.K, g.TransB = l, C, true
	}
	var s []xstep
	switch {
	case w.fast():
		g.BF16 = true
		if rounded {
			g.A = sc.hb
		} else {
			s = kstep(planFlat("f32_to_bf16", N*g.K, sc.pb, a, N*g.K)...)
			g.A = sc.pb
		}
	case w.bf16:
		if !widened {
			s = kstep(planFlat("bf16_to_f32", l*C, sc.wf, weight, j0*C, l*C)...)
		}
		g.B, g.OffB = sc.wf, 0
	}
	return append(s, gstep(g))
}

// planLogprobW is planLogprob (ops.go) for a weight as w says: per chunk,
// the logits' GEMM into z, logprob_chunk, with expect its rescale and
// GEMM; at the end logprob_finish and logprob_expect. z holds
// N·logprobChunk(chunk, V) values, state 5·N; sc as lmLen says.
func planLogprobW(w lmWeight, logprob, entropy, lse, expect, hidden, weight, targets, z, state any, sc lmScratch, withExpect bool, N, C, V, chunk int) []xstep {
	if N == 0 {
		return nil
	}
	keep := 0
	if withExpect {
		keep = 1
	}
	var s []xstep
	if w.fast() {
		s = kstep(planFlat("f32_to_bf16", N*C, sc.hb, hidden, N*C)...)
	}
	cl := logprobChunk(chunk, V)
	for j0 := 0; j0 < V; j0 += cl {
		l := min(cl, V-j0)
		s = append(s, w.chunkProduct(z, hidden, weight, sc, true, false, true, N, C, j0, l, 0)...)
		s = append(s, xstep{k: &step{Kernel: "logprob_chunk", Grid: Dim3{N, 1, 1}, Block: Dim3{rowThreads(l), 1, 1}, Args: []any{state, z, targets, l, j0, keep}}})
		if withExpect {
			var beta float32
			if j0 > 0 {
				beta = 1
				s = append(s, kstep(planRows("expect_scale", N, C, expect, state, C)...)...)
			}
			s = append(s, w.chunkProduct(expect, z, weight, sc, false, true, false, N, C, j0, l, beta)...)
		}
	}
	s = append(s, kstep(planFlat("logprob_finish", N, logprob, entropy, lse, state, targets, N)...)...)
	if withExpect {
		s = append(s, kstep(planRows("logprob_expect", N, C, expect, state, C)...)...)
	}
	return s
}

// planLogprobBackward: per chunk of vocabulary rows, the logits'
// GEMM into z, logprob_dz turning them into dz in place, dhidden += dz ·
// the chunk's weight rows, and (withDweight, float32 weight only) the
// chunk's dweight rows += dzᵀ · hidden. dlogprob and dentropy may be nil
// (null: zero). z holds N·logprobChunk(chunk, V) values; sc as lmLen says.
func planLogprobBackward(w lmWeight, dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight, targets, z any, sc lmScratch, withDweight bool, N, C, V, chunk int) []xstep {
	if N == 0 {
		return nil
	}
	var s []xstep
	if w.fast() {
		s = kstep(planFlat("f32_to_bf16", N*C, sc.hb, hidden, N*C)...)
	}
	cl := logprobChunk(chunk, V)
	for j0 := 0; j0 < V; j0 += cl {
		l := min(cl, V-j0)
		s = append(s, w.chunkProduct(z, hidden, weight, sc, true, false, true, N, C, j0, l, 0)...)
		s = append(s, kstep(planFlat("logprob_dz", N*l, z, dlogprob, dentropy, lse, entropy, targets, N, l, j0)...)...)
		if C > 0 {
			s = append(s, w.chunkProduct(dhidden, z, weight, sc, false, true, false, N, C, j0, l, 1)...)
		}
		if withDweight && !w.bf16 && C > 0 {
			s = append(s, gstep(mm{C: dweight, OffC: j0 * C, A: z, B: hidden, M: l, N: C, K: N, TransA: true, Beta: 1}))
		}
	}
	return s
}

// logprobCheck checks the sizes and buffers of a logprob op (name,
// buffer, elements triples; a name starting with '?' may be nil).
func (o *Ops) logprobCheck(op string, N, C, V, chunk int, bufs ...any) error {
	c := check{op: op}
	c.sizes("N, C", N, C)
	c.sizes("V, C", V, C)
	if V < 1 || C < 1 {
		c.fail("V = %d, C = %d: want at least 1", V, C)
	}
	for i := 0; i < len(bufs); i += 3 {
		name, b, n := bufs[i].(string), bufs[i+1].(*Buffer), bufs[i+2].(int)
		if name[0] == '?' {
			if b == nil {
				continue
			}
			name = name[1:]
		}
		c.buf(o.d, name, b, n)
	}
	if c.err == nil && N > 0 {
		c.sizes("N, chunk", N, logprobChunk(chunk, V))
	}
	return c.err
}

// lmBuffers takes a logprob op's scratch from Ops' store (scratch.go): z
// [N, chunk], state [5N] (withState) and lmScratch as w says (a slot of
// no elements is nil). release gives the store back once the op's
// launches are queued; it is set (and must be called) even on error.
func (o *Ops) lmBuffers(op string, w lmWeight, withState bool, N, C, V, chunk int) (z, state *Buffer, sc lmScratch, release func(), err error) {
	l := o.lockScratch()
	release = l.unlock
	get := func(slot string, n int) *Buffer {
		if err != nil || n == 0 {
			return nil
		}
		var b *Buffer
		b, err = l.get(op, slot, n)
		return b
	}
	cl := logprobChunk(chunk, V)
	z = get("logprob.z", N*cl)
	if withState {
		state = get("logprob.state", 5*N)
	}
	wf, hb, pb := w.lmLen(N, C, cl)
	sc = lmScratch{get("logprob.wf", wf), get("logprob.hb", hb), get("logprob.pb", pb)}
	return z, state, sc, release, err
}

// LogprobForwardBF16 is kernels.Backend.LogprobForwardBF16 on device
// buffers: LogprobForward with a bfloat16 weight [V,C] (UploadBF16),
// multiplied as SetPrecision says (the logits' and expect's products; in
// PrecisionBF16 hidden and each chunk's e^(z−M) are rounded to bfloat16).
// Its scratch is Ops' own, kept between calls (scratch.go).
func (o *Ops) LogprobForwardBF16(logprob, entropy, lse, expect, hidden, weight, targets *Buffer, N, C, V, chunk int) error {
	const op = "LogprobForwardBF16"
	if err := o.logprobCheck(op, N, C, V, chunk, "logprob", logprob, N, "entropy", entropy, N, "lse", lse, N, "?expect", expect, N*C,
		"hidden", hidden, N*C, "weight", weight, bf16Len(V*C), "targets", targets, N); err != nil || N == 0 {
		return err
	}
	w := lmWeight{bf16: true, prec: o.prec}
	z, state, sc, release, err := o.lmBuffers(op, w, true, N, C, V, chunk)
	defer release()
	if err != nil {
		return err
	}
	return o.runX(op, planLogprobW(w, logprob, entropy, lse, expect, hidden, weight, targets, z, state, sc, expect != nil, N, C, V, chunk))
}

// LogprobBackward is kernels.Backend.LogprobBackward on device buffers:
// the logits recomputed chunk by chunk (cublasSgemm into a [N, chunk]
// scratch), their gradient dz (logprob_dz, with the entropy term), then
// dhidden [N,C] += dz·weight and dweight [V,C] += dzᵀ·hidden (nil:
// skipped). dlogprob and dentropy [N] may be nil; lse and entropy [N] are
// the forward's; targets [N] int32 in [−1, V). Its scratch is Ops' own,
// kept between calls (scratch.go).
func (o *Ops) LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight, targets *Buffer, N, C, V, chunk int) error {
	const op = "LogprobBackward"
	if err := o.logprobCheck(op, N, C, V, chunk, "dhidden", dhidden, N*C, "?dweight", dweight, V*C, "?dlogprob", dlogprob, N,
		"?dentropy", dentropy, N, "lse", lse, N, "entropy", entropy, N, "hidden", hidden, N*C, "weight", weight, V*C,
		"targets", targets, N); err != nil || N == 0 {
		return err
	}
	w := lmWeight{}
	z, _, sc, release, err := o.lmBuffers(op, w, false, N, C, V, chunk)
	defer release()
	if err != nil {
		return err
	}
	return o.runX(op, planLogprobBackward(w, dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight, targets, z, sc, dweight != nil, N, C, V, chunk))
}

// LogprobBackwardBF16 is kernels.Backend.LogprobBackwardBF16 on device
// buffers: LogprobBackward's dhidden with a frozen bfloat16 weight [V,C],
// multiplied as SetPrecision says (in PrecisionBF16 hidden and dz are
// rounded to bfloat16). Its scratch is Ops' own, kept between calls.
func (o *Ops) LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden, weight, targets *Buffer, N, C, V, chunk int) error {
	const op = "LogprobBackwardBF16"
	if err := o.logprobCheck(op, N, C, V, chunk, "dhidden", dhidden, N*C, "?dlogprob", dlogprob, N, "?dentropy", dentropy, N,
		"lse", lse, N, "entropy", entropy, N, "hidden", hidden, N*C, "weight", weight, bf16Len(V*C),
		"targets", targets, N); err != nil || N == 0 {
		return err
	}
	w := lmWeight{bf16: true, prec: o.prec}
	z, _, sc, release, err := o.lmBuffers(op, w, false, N, C, V, chunk)
	defer release()
	if err != nil {
		return err
	}
	return o.runX(op, planLogprobBackward(w, dhidden, nil, dlogprob, dentropy, lse, entropy, hidden, weight, targets, z, sc, false, N, C, V, chunk))
}

// LogprobBackwardExpectBF16 is LogprobBackwardExpect with a bfloat16
// weight [V,C] (UploadBF16): dhidden[n] += dlogprob[n]·(weight[t] −
// expect[n]) for rows with t = targets[n] in [0, V); no product, so the
// same in both precisions.
func (o *Ops) LogprobBackwardExpectBF16(dhidden, dlogprob, expect, weight, targets *Buffer, N, C, V int) error {
	c := check{op: "LogprobBackwardExpectBF16"}
	c.sizes("N, C", N, C)
	c.sizes("V, C", V, C)
	c.buf(o.d, "dhidden", dhidden, N*C)
	c.buf(o.d, "dlogprob", dlogprob, N)
	c.buf(o.d, "expect", expect, N*C)
	c.buf(o.d, "weight", weight, bf16Len(V*C))
	c.buf(o.d, "targets", targets, N)
	if c.err != nil {
		return c.err
	}
	return o.run(c.op, planRows("logprob_bwd_expect_bf16", N, C, dhidden, dlogprob, expect, weight, targets, C, V))
}
