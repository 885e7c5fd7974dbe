package cuda

import (
	"fmt"

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
	s := planLoRAGProducts(douts, us, bs, dbs, g, prec, N, R, Outs)
	return append(s, planLoRATail(view, dx, x, as, das, g, da, ac, nil, prec, N, In, R, len(Outs), scale, set)...)
}

// planLoRAGProducts is planLoRABackwardMany's steps 1 and 2: the DB
// products and the unscaled dout·B products into g [N, k·R].
func planLoRAGProducts(douts, us, bs, dbs []any, g any, prec kernels.Precision, N, R int, Outs []int) []xstep {
	kR := len(Outs) * R
	var s []xstep
	for i, out := range Outs {
		s = append(s, gstep(mm{C: dbs[i], A: douts[i], B: us[i], M: out, N: R, K: N, TransA: true, Beta: 1, TF32: loraTF32(prec, N)}))
	}
	for i, out := range Outs {
		s = append(s, gstep(mm{C: g, OffC: i * R, LDC: kR, A: douts[i], B: bs[i], M: N, N: R, K: out, TF32: loraTF32(prec, out)}))
	}
	return s
}

// planLoRATail is planLoRABackwardMany's steps 3 to 5, after g [N, k·R]
// holds the k projections' unscaled dout·B products: the DA products and
// the dx product. With gBF (not nil; PrecisionBF16), x is bfloat16 and
// the DA product multiplies bfloat16 operands: g is rounded into gBF
// first (f32_to_bf16, N·k·R values), then da = gBFᵀ·x (a bf16 GEMM,
// float32 sums); the dx product still takes the float32 g.
func planLoRATail(view func(b any, off, n int) any, dx, x any, as, das []any, g, da, ac, gBF any,
	prec kernels.Precision, N, In, R, k int, scale float32, set bool) []xstep {
	kR := k * R
	var s []xstep
	if gBF != nil {
		s = append(s, kstep(planFlat("f32_to_bf16", N*kR, gBF, g, N*kR)...)...)
		s = append(s, gstep(mm{C: da, A: gBF, B: x, M: kR, N: In, K: N, TransA: true, BF16: true}))
	} else {
		s = append(s, gstep(mm{C: da, A: g, B: x, M: kR, N: In, K: N, TransA: true, TF32: loraTF32(prec, N)}))
	}
	for i := range k {
		s = append(s, kstep(planFlat("axpy", R*In, das[i], view(da, i*R*In, R*In), scale, R*In)...)...)
	}
	if dx == nil {
		return s
	}
	for i := range k {
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
	const op = "LoRABackwardMany"
	k := len(Outs)
	dlens := make([]int, len(douts))
	for i, out := range Outs {
		if i < len(dlens) {
			dlens[i] = N * out
		}
	}
	if err := o.loraManyCheck(op, dx, douts, dlens, us, x, N*In, as, bs, das, dbs, N, In, R, Outs); err != nil {
		return err
	}
	l := o.lockScratch()
	defer l.unlock()
	g, da, ac, err := loraScratch(l, op, N, In, R, k, dx != nil)
	if err != nil {
		return err
	}
	return o.runX(op, planLoRABackwardMany(viewF32, optional(dx), buffersAny(douts), buffersAny(us), x, buffersAny(as), buffersAny(bs), buffersAny(das), buffersAny(dbs), g, da, ac,
		o.prec, N, In, R, Outs, scale, set))
}

// loraScratch takes LoRABackwardMany's scratch from l: g [N, k·R] (slot
// "lora.g"), da [k·R, In] ("lora.da") and, withDx, ac [k·R, In]
// ("lora.a"; nil without).
func loraScratch(l *scratchLease, op string, N, In, R, k int, withDx bool) (g, da, ac any, err error) {
	gb, err := l.get(op, "lora.g", N*k*R)
	if err != nil {
		return nil, nil, nil, err
	}
	dab, err := l.get(op, "lora.da", k*R*In)
	if err != nil {
		return nil, nil, nil, err
	}
	if !withDx {
		return gb, dab, nil, nil
	}
	acb, err := l.get(op, "lora.a", k*R*In)
	if err != nil {
		return nil, nil, nil, err
	}
	return gb, dab, acb, nil
}

// viewF32 is the plans' view of a device buffer: n elements from off.
func viewF32(b any, off, n int) any { return b.(*Buffer).view(off, n) }

// loraSizes is the LoRA ops' check of their sizes: k projections of one
// input [N, In] at rank R, each at least 1.
func (c *check) loraSizes(N, In, R, k int) {
	c.sizes("N, In", N, In)
	c.sizes("N, R", N, k*R)
	c.sizes("R, In", k*R, In)
	if N < 1 || In < 1 || R < 1 {
		c.fail("N %d, In %d, R %d: each must be at least 1", N, In, R)
	}
}

// loraManyCheck is LoRABackwardMany's (and LoRABackwardManyBF16's) check
// of its lists, sizes and buffers; dlens[i] is the elements douts[i] must
// hold, xLen those x must (N·In, or bf16Len(N·In) for bfloat16 pairs).
func (o *Ops) loraManyCheck(op string, dx *Buffer, douts []*Buffer, dlens []int, us []*Buffer, x *Buffer, xLen int, as, bs, das, dbs []*Buffer, N, In, R int, Outs []int) error {
	c := check{op: op}
	k := len(Outs)
	if k == 0 || len(douts) != k || len(us) != k || len(as) != k || len(bs) != k || len(das) != k || len(dbs) != k {
		c.fail("%d output sizes, %d douts, %d us, %d As, %d Bs, %d dAs, %d dBs", k, len(douts), len(us), len(as), len(bs), len(das), len(dbs))
		return c.err
	}
	c.loraSizes(N, In, R, k)
	if dx != nil {
		c.buf(o.d, "dx", dx, N*In)
	}
	c.buf(o.d, "x", x, xLen)
	for i, out := range Outs {
		if out < 1 {
			c.fail("output size %d of projection %d", out, i)
			continue
		}
		c.sizes("N, Out", N, out)
		c.buf(o.d, "dout", douts[i], dlens[i])
		c.buf(o.d, "u", us[i], N*R)
		c.buf(o.d, "A", as[i], R*In)
		c.buf(o.d, "B", bs[i], out*R)
		c.buf(o.d, "dA", das[i], R*In)
		c.buf(o.d, "dB", dbs[i], out*R)
	}
	return c.err
}

// planLoRABackwardManyBF16 is planLoRABackwardMany (PrecisionBF16) with
// each dout given only as its bfloat16 rounding doutBFs[i]
// (kernels.LoRARoundedBackwarder; not run on a GPU yet):
//
//  0. per projection, us[i] rounded into ub's segment i and bs[i] into
//     bb's (f32_to_bf16; tiny, N·R and Outs[i]·R values), since a GEMM's
//     two operands share one type;
//  1. per projection, dbs[i] += doutBFs[i]ᵀ·(us[i] rounded) (a bf16 GEMM,
//     float32 sums, beta 1);
//  2. per projection, doutBFs[i]·(bs[i] rounded) into the R columns i·R…
//     of g (a bf16 GEMM);
//
// then planLoRABackwardMany's steps 3 to 5 (planLoRATail). Against
// planLoRABackwardMany on the float32 dout, steps 1 and 2 read 2 bytes a
// dout value where they read 4, and their operands are rounded to
// bfloat16 where TF32 rounded them (K ≥ TF32MinK) or nothing did.
// ub holds k segments of ubSeg(N, R) bfloat16 values, bb one of
// ubSeg(Outs[i], R) a projection; viewBF(b, off, n) is n bfloat16 values
// of b from off (even), view as in planLoRABackwardMany.
func planLoRABackwardManyBF16(view, viewBF func(b any, off, n int) any, dx any, doutBFs, us []any, x any, as, bs, das, dbs []any, g, da, ac, ub, bb any,
	N, In, R int, Outs []int, scale float32, set bool) []xstep {
	s := planLoRAGProductsBF16(viewBF, doutBFs, us, bs, dbs, g, ub, bb, N, R, Outs)
	return append(s, planLoRATail(view, dx, x, as, das, g, da, ac, nil, kernels.PrecisionBF16, N, In, R, len(Outs), scale, set)...)
}

// planLoRAGProductsBF16 is planLoRABackwardManyBF16's steps 0 to 2: u and
// B rounded, the DB products and the unscaled dout·B products into g on
// bfloat16 operands.
func planLoRAGProductsBF16(viewBF func(b any, off, n int) any, doutBFs, us, bs, dbs []any, g, ub, bb any, N, R int, Outs []int) []xstep {
	k := len(Outs)
	kR := k * R
	var s []xstep
	ubs, bbs := make([]any, k), make([]any, k)
	boff := 0
	for i, out := range Outs {
		ubs[i] = viewBF(ub, i*ubSeg(N, R), N*R)
		bbs[i] = viewBF(bb, boff, out*R)
		boff += ubSeg(out, R)
		s = append(s, kstep(planFlat("f32_to_bf16", N*R, ubs[i], us[i], N*R)...)...)
		s = append(s, kstep(planFlat("f32_to_bf16", out*R, bbs[i], bs[i], out*R)...)...)
	}
	for i, out := range Outs {
		s = append(s, gstep(mm{C: dbs[i], A: doutBFs[i], B: ubs[i], M: out, N: R, K: N, TransA: true, Beta: 1, BF16: true}))
	}
	for i, out := range Outs {
		s = append(s, gstep(mm{C: g, OffC: i * R, LDC: kR, A: doutBFs[i], B: bbs[i], M: N, N: R, K: out, BF16: true}))
	}
	return s
}

// planLoRABackwardManyInputBF16 is kernels.NormInputRounder's
// LoRABackwardManyInputBF16 (not run on a GPU yet): with douts (doutBFs
// nil) planLoRABackwardMany's steps 1 and 2 in PrecisionBF16, with
// doutBFs (douts nil, ub and bb its scratch) planLoRABackwardManyBF16's
// steps 0 to 2, then planLoRATail with x given as bfloat16 (xBF): g
// rounded into gBF (N·k·R bfloat16 values) and the DA product on
// bfloat16 operands, where the other two plans read the float32 x through
// TF32 (K = N ≥ TF32MinK). On the 7B shape the DA products read 2 bytes
// an x value where they read 4, 59 MB a product less, for one
// f32_to_bf16 launch of at most 2.4 MB.
func planLoRABackwardManyInputBF16(view, viewBF func(b any, off, n int) any, dx any, douts, doutBFs, us []any, xBF any, as, bs, das, dbs []any, g, da, ac, ub, bb, gBF any,
	N, In, R int, Outs []int, scale float32, set bool) []xstep {
	var s []xstep
	if doutBFs != nil {
		s = planLoRAGProductsBF16(viewBF, doutBFs, us, bs, dbs, g, ub, bb, N, R, Outs)
	} else {
		s = planLoRAGProducts(douts, us, bs, dbs, g, kernels.PrecisionBF16, N, R, Outs)
	}
	return append(s, planLoRATail(view, dx, xBF, as, das, g, da, ac, gBF, kernels.PrecisionBF16, N, In, R, len(Outs), scale, set)...)
}

// ubSeg is the bfloat16 values a segment of rows·R rounded values takes in
// planLoRABackwardManyBF16's scratch: rounded up to even, so that every
// segment starts on a whole float32 element of the device buffer.
func ubSeg(rows, R int) int { return 2 * bf16Len(rows*R) }

// LoRABackwardManyBF16 is kernels.LoRARoundedBackwarder's
// LoRABackwardManyRounded on device buffers (planLoRABackwardManyBF16):
// LoRABackwardMany with each dout given as its bfloat16 rounding
// (bfloat16 pairs, bf16Len(N·Outs[i]) elements; SwiGLUBackwardSetBF16 and
// GeGLUBackwardSetBF16 write them). Its scratch is LoRABackwardMany's and
// the rounded u and B (the slots "lora.ub", "lora.bb"). It is refused in
// PrecisionF32, whose products do not round.
func (o *Ops) LoRABackwardManyBF16(dx *Buffer, doutBFs, us []*Buffer, x *Buffer, as, bs, das, dbs []*Buffer, N, In, R int, Outs []int, scale float32, set bool) error {
	const op = "LoRABackwardManyBF16"
	if o.prec != kernels.PrecisionBF16 {
		return fmt.Errorf("CUDA %s: precision %v: the LoRA products multiply bfloat16 operands only in %v", op, o.prec, kernels.PrecisionBF16)
	}
	k := len(Outs)
	dlens := make([]int, len(doutBFs))
	for i, out := range Outs {
		if i < len(dlens) {
			dlens[i] = bf16Len(N * out)
		}
	}
	if err := o.loraManyCheck(op, dx, doutBFs, dlens, us, x, N*In, as, bs, das, dbs, N, In, R, Outs); err != nil {
		return err
	}
	l := o.lockScratch()
	defer l.unlock()
	g, da, ac, err := loraScratch(l, op, N, In, R, k, dx != nil)
	if err != nil {
		return err
	}
	ub, bb, err := loraRoundedScratch(l, op, N, R, Outs)
	if err != nil {
		return err
	}
	return o.runX(op, planLoRABackwardManyBF16(viewF32, viewBF16, optional(dx), buffersAny(doutBFs), buffersAny(us), x, buffersAny(as), buffersAny(bs),
		buffersAny(das), buffersAny(dbs), g, da, ac, ub, bb, N, In, R, Outs, scale, set))
}

// loraRoundedScratch takes LoRABackwardManyBF16's scratch for the rounded
// u and B from l: ub (slot "lora.ub", k segments of ubSeg(N, R)) and bb
// ("lora.bb", one of ubSeg(Outs[i], R) a projection).
func loraRoundedScratch(l *scratchLease, op string, N, R int, Outs []int) (ub, bb *Buffer, err error) {
	bbN := 0
	for _, out := range Outs {
		bbN += ubSeg(out, R) / 2
	}
	if ub, err = l.get(op, "lora.ub", len(Outs)*ubSeg(N, R)/2); err != nil {
		return nil, nil, err
	}
	if bb, err = l.get(op, "lora.bb", bbN); err != nil {
		return nil, nil, err
	}
	return ub, bb, nil
}

// viewBF16 is the plans' view of a device buffer of bfloat16 pairs: n
// bfloat16 values from off (even).
func viewBF16(b any, off, n int) any { return b.(*Buffer).view(off/2, bf16Len(n)) }

// LoRABackwardManyInputBF16 is kernels.NormInputRounder's
// LoRABackwardManyInputBF16 on device buffers
// (planLoRABackwardManyInputBF16): LoRABackwardMany (douts given) or
// LoRABackwardManyBF16 (doutBFs given; exactly one of the two not nil)
// with x given as bfloat16 pairs (xBF, bf16Len(N·In) elements). Its
// scratch is theirs and g's rounding (the slot "lora.gbf", bf16Len(N·k·R)
// elements). It is refused in PrecisionF32, whose products do not round.
func (o *Ops) LoRABackwardManyInputBF16(dx *Buffer, douts, doutBFs, us []*Buffer, xBF *Buffer, as, bs, das, dbs []*Buffer, N, In, R int, Outs []int, scale float32, set bool) error {
	const op = "LoRABackwardManyInputBF16"
	if o.prec != kernels.PrecisionBF16 {
		return fmt.Errorf("CUDA %s: precision %v: the LoRA products multiply bfloat16 operands only in %v", op, o.prec, kernels.PrecisionBF16)
	}
	if (douts == nil) == (doutBFs == nil) {
		return fmt.Errorf("CUDA %s: want exactly one of douts and doutBFs (given: %v, %v)", op, douts != nil, doutBFs != nil)
	}
	k := len(Outs)
	ds := douts
	if doutBFs != nil {
		ds = doutBFs
	}
	dlens := make([]int, len(ds))
	for i, out := range Outs {
		if i < len(dlens) {
			dlens[i] = N * out
			if doutBFs != nil {
				dlens[i] = bf16Len(N * out)
			}
		}
	}
	if err := o.loraManyCheck(op, dx, ds, dlens, us, xBF, bf16Len(N*In), as, bs, das, dbs, N, In, R, Outs); err != nil {
		return err
	}
	l := o.lockScratch()
	defer l.unlock()
	g, da, ac, err := loraScratch(l, op, N, In, R, k, dx != nil)
	if err != nil {
		return err
	}
	gBF, err := l.get(op, "lora.gbf", bf16Len(N*k*R))
	if err != nil {
		return err
	}
	var ub, bb any
	if doutBFs != nil {
		u, b, err := loraRoundedScratch(l, op, N, R, Outs)
		if err != nil {
			return err
		}
		ub, bb = u, b
	}
	var pd, pdBF []any
	if doutBFs != nil {
		pdBF = buffersAny(doutBFs)
	} else {
		pd = buffersAny(douts)
	}
	return o.runX(op, planLoRABackwardManyInputBF16(viewF32, viewBF16, optional(dx), pd, pdBF, buffersAny(us), xBF, buffersAny(as), buffersAny(bs),
		buffersAny(das), buffersAny(dbs), g, da, ac, ub, bb, gBF, N, In, R, Outs, scale, set))
}

// buffersAny returns bs as a []any of *Buffer, the plans' operand type.
func buffersAny(bs []*Buffer) []any {
	out := make([]any, len(bs))
	for i, b := range bs {
		out[i] = b
	}
	return out
}

// planMatmulBF16 is kernels.LoRAInputRounder's MatmulBF16 (not run on a
// GPU yet): c [M, N] = op(A)·op(B) + beta·c on bfloat16 operands, each
// given either as float32 (a, b: rounded by f32_to_bf16 into ab, bb
// first) or as bfloat16 (aBF, bBF; the float32 one nil), one bf16 GEMM
// with float32 sums; with cBF, c holds bfloat16 values (MatmulBF16To:
// the GEMM stores a bfloat16 C, mm.CBF16).
func planMatmulBF16(c, a, aBF, b, bBF, ab, bb any, M, N, K int, transA, transB bool, beta float32, cBF bool) []xstep {
	var s []xstep
	if a != nil {
		s = append(s, kstep(planFlat("f32_to_bf16", M*K, ab, a, M*K)...)...)
		aBF = ab
	}
	if b != nil {
		s = append(s, kstep(planFlat("f32_to_bf16", K*N, bb, b, K*N)...)...)
		bBF = bb
	}
	return append(s, gstep(mm{C: c, A: aBF, B: bBF, M: M, N: N, K: K, TransA: transA, TransB: transB, Beta: beta, BF16: true, CBF16: cBF}))
}

// MatmulBF16 is kernels.LoRAInputRounder's MatmulBF16 on device buffers
// (planMatmulBF16): aBF and bBF are bfloat16 pairs (bf16Len elements),
// exactly one of a and aBF and of b and bBF not nil; a float32 operand is
// rounded into Ops' scratch (the slots "mmbf.a", "mmbf.b"). M, N and K
// are at least 1. It is refused in PrecisionF32, whose products do not
// round.
func (o *Ops) MatmulBF16(c, a, aBF, b, bBF *Buffer, M, N, K int, transA, transB bool, beta float32) error {
	return o.matmulBF16("MatmulBF16", c, a, aBF, b, bBF, M, N, K, transA, transB, beta, false)
}

// MatmulBF16To is kernels.DinpRounder's MatmulBF16To on device buffers:
// MatmulBF16 with c bfloat16 pairs (bf16Len(M·N) elements), which the
// GEMM stores rounded (mm.CBF16).
func (o *Ops) MatmulBF16To(c, a, aBF, b, bBF *Buffer, M, N, K int, transA, transB bool, beta float32) error {
	return o.matmulBF16("MatmulBF16To", c, a, aBF, b, bBF, M, N, K, transA, transB, beta, true)
}

// matmulBF16 is MatmulBF16, or MatmulBF16To with cBF.
func (o *Ops) matmulBF16(op string, c, a, aBF, b, bBF *Buffer, M, N, K int, transA, transB bool, beta float32, cBF bool) error {
	if o.prec != kernels.PrecisionBF16 {
		return fmt.Errorf("CUDA %s: precision %v: the products multiply bfloat16 operands only in %v", op, o.prec, kernels.PrecisionBF16)
	}
	ch := check{op: op}
	ch.sizes("M, N", M, N)
	ch.sizes("M, K", M, K)
	ch.sizes("K, N", K, N)
	if (a == nil) == (aBF == nil) || (b == nil) == (bBF == nil) {
		ch.fail("want exactly one of a and aBF, and of b and bBF")
		return ch.err
	}
	if M < 1 || N < 1 || K < 1 {
		ch.fail("M %d, N %d, K %d: each must be at least 1", M, N, K)
		return ch.err
	}
	if cBF {
		ch.buf(o.d, "c", c, bf16Len(M*N))
	} else {
		ch.buf(o.d, "c", c, M*N)
	}
	if a != nil {
		ch.buf(o.d, "a", a, M*K)
	} else {
		ch.buf(o.d, "aBF", aBF, bf16Len(M*K))
	}
	if b != nil {
		ch.buf(o.d, "b", b, K*N)
	} else {
		ch.buf(o.d, "bBF", bBF, bf16Len(K*N))
	}
	if ch.err != nil {
		return ch.err
	}
	l := o.lockScratch()
	defer l.unlock()
	var ab, bb *Buffer
	var err error
	if a != nil {
		if ab, err = l.get(op, "mmbf.a", bf16Len(M*K)); err != nil {
			return err
		}
	}
	if b != nil {
		if bb, err = l.get(op, "mmbf.b", bf16Len(K*N)); err != nil {
			return err
		}
	}
	return o.runX(op, planMatmulBF16(optional(c), optional(a), optional(aBF), optional(b), optional(bBF), optional(ab), optional(bb), M, N, K, transA, transB, beta, cBF))
}

// optional is b as a plan operand: nil (not a nil *Buffer) when b is nil,
// so that the plans can tell a missing operand apart.
func optional(b *Buffer) any {
	if b == nil {
		return nil
	}
	return b
}
