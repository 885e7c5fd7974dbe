package cuda

import (
	"github.com/hone-rl/hone/kernels"
)

// loraTF32 says whether a LoRA product of inner dimension K runs on TF32
// tensor cores: Backend.Matmul's rule (K ≥ TF32MinK in the bf16
// precision), so that each product of LoRABackwardMany keeps the
// arithmetic it had as a Matmul of its own.
func loraTF32(prec kernels.Precision, K int) bool {
	return prec == kernels.PrecisionBF16 && K >= TF32MinK
}

// planLoRABackwardMany is kernels.LoRAManyBackwarder's LoRABackwardMany
// for k = len(Outs) projections of one input x [N, In] (not run on a GPU
// yet):
//
//  1. per projection, dbs[i] += douts[i]ᵀ·us[i] (a GEMM, beta 1);
//  2. per projection, douts[i]·bs[i] into the R columns i·R… of g
//     [N, k·R] (a GEMM, row stride k·R), unscaled;
//  3. da [k·R, In] = gᵀ·x: one GEMM reading x once, not once a projection;
//  4. per projection, das[i] += scale·(rows i·R… of da) (axpy);
//  5. with dx: per projection, rows i·R… of ac [k·R, In] = scale·as[i]
//     (scale; the adapter keeps each A apart, between its B's), then dx
//     = g·ac (beta 0 with set, else 1): one GEMM over the concatenated
//     rank, so dx is read and written once for all the projections, not
//     once a projection.
//
// The products keep Backend.Matmul's arithmetic (loraTF32 of each one's K:
// the dx product's K is one projection's R). What moves is where scale
// multiplies, which spares a Scale launch: one Matmul at a time scales g
// before the DA and dx products; here DA's product is scaled after its
// sum and A before dx's. With a scale that is not a power of two that
// rounds differently: by about an ulp in the exact precision, and in the
// bf16 one TF32 rounds g where it rounded scale·g (an error of TF32's size
// either way). And dx's k products are one K = k·R sum rather than one
// beta-1 GEMM after another. TestLoRABackwardMany bounds and logs the
// difference from kernels/ref and from the Matmuls one at a time (exact:
// ≤ 1.6e-7; bf16: ≤ 1.1e-3, as the one-at-a-time path's own from ref).
// view(b, off, n) is n elements of b from off.
func planLoRABackwardMany(view func(b any, off, n int) any, dx any, douts, us []any, x any, as, bs, das, dbs []any, g, da, ac any,
	prec kernels.Precision, N, In, R int, Outs []int, scale float32, set bool) []xstep {
	k := len(Outs)
	kR := k * R
	var s []xstep
	for i, out := range Outs {
		s = append(s, gstep(mm{C: dbs[i], A: douts[i], B: us[i], M: out, N: R, K: N, TransA: true, Beta: 1, TF32: loraTF32(prec, N)}))
	}
	for i, out := range Outs {
		s = append(s, gstep(mm{C: g, OffC: i * R, LDC: kR, A: douts[i], B: bs[i], M: N, N: R, K: out, TF32: loraTF32(prec, out)}))
	}
	s = append(s, gstep(mm{C: da, A: g, B: x, M: kR, N: In, K: N, TransA: true, TF32: loraTF32(prec, N)}))
	for i := range Outs {
		s = append(s, kstep(planFlat("axpy", R*In, das[i], view(da, i*R*In, R*In), scale, R*In)...)...)
	}
	if dx == nil {
		return s
	}
	for i := range Outs {
		s = append(s, kstep(planFlat("scale", R*In, view(ac, i*R*In, R*In), as[i], scale, R*In)...)...)
	}
	var beta float32 = 1
	if set {
		beta = 0
	}
	return append(s, gstep(mm{C: dx, A: g, B: ac, M: N, N: In, K: kR, Beta: beta, TF32: loraTF32(prec, R)}))
}

// LoRABackwardMany is kernels.LoRAManyBackwarder's LoRABackwardMany on
// device buffers (planLoRABackwardMany), its g, da and ac in Ops' scratch
// (the slots "lora.g", "lora.da", "lora.a"). dx may be nil.
func (o *Ops) LoRABackwardMany(dx *Buffer, douts, us []*Buffer, x *Buffer, as, bs, das, dbs []*Buffer, N, In, R int, Outs []int, scale float32, set bool) error {
	c := check{op: "LoRABackwardMany"}
	k := len(Outs)
	if k == 0 || len(douts) != k || len(us) != k || len(as) != k || len(bs) != k || len(das) != k || len(dbs) != k {
		c.fail("%d output sizes, %d douts, %d us, %d As, %d Bs, %d dAs, %d dBs", k, len(douts), len(us), len(as), len(bs), len(das), len(dbs))
		return c.err
	}
	c.sizes("N, In", N, In)
	c.sizes("N, R", N, k*R)
	c.sizes("R, In", k*R, In)
	if N < 1 || In < 1 || R < 1 {
		c.fail("N %d, In %d, R %d: each must be at least 1", N, In, R)
	}
	if dx != nil {
		c.buf(o.d, "dx", dx, N*In)
	}
	c.buf(o.d, "x", x, N*In)
	for i, out := range Outs {
		if out < 1 {
			c.fail("output size %d of projection %d", out, i)
			continue
		}
		c.sizes("N, Out", N, out)
		c.buf(o.d, "dout", douts[i], N*out)
		c.buf(o.d, "u", us[i], N*R)
		c.buf(o.d, "A", as[i], R*In)
		c.buf(o.d, "B", bs[i], out*R)
		c.buf(o.d, "dA", das[i], R*In)
		c.buf(o.d, "dB", dbs[i], out*R)
	}
	if c.err != nil {
		return c.err
	}
	l := o.lockScratch()
	defer l.unlock()
	g, err := l.get(c.op, "lora.g", N*k*R)
	if err != nil {
		return err
	}
	da, err := l.get(c.op, "lora.da", k*R*In)
	if err != nil {
		return err
	}
	var ac *Buffer
	if dx != nil {
		if ac, err = l.get(c.op, "lora.a", k*R*In); err != nil {
			return err
		}
	}
	anys := func(bs []*Buffer) []any {
		out := make([]any, len(bs))
		for i, b := range bs {
			out[i] = b
		}
		return out
	}
	view := func(b any, off, n int) any { return b.(*Buffer).view(off, n) }
	var dxa any
	if dx != nil {
		dxa = dx
	}
	return o.runX(c.op, planLoRABackwardMany(view, dxa, anys(douts), anys(us), x, anys(as), anys(bs), anys(das), anys(dbs), g, da, ac,
		o.prec, N, In, R, Outs, scale, set))
}
