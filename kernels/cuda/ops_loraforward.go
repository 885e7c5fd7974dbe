package cuda

import (
	"fmt"
	"slices"

	"github.com/hone-rl/hone/kernels"
)

// planLoRAForwardMany is kernels.LoRAManyForwarder's LoRAForwardMany for
// k = len(Outs) projections of one input x [N, In] (not run on a GPU
// yet):
//
//  1. per projection, as[i] copied into rows i·R… of ac [k·R, In]
//     (copy_f32; the adapter keeps each A apart, beside its B);
//  2. uc [N, k·R] = x·acᵀ: one GEMM reading x once, not once a
//     projection;
//  3. per projection, us[i] = scale·(the R columns i·R… of uc)
//     (scale_cols);
//  4. per projection, outs[i] = us[i]·bs[i]ᵀ (a GEMM, beta 0).
//
// 3k + 1 launches where one projection at a time makes 3k (LinearForward,
// Scale, Matmul each), for k − 1 reads of x fewer.
//
// Each step keeps the arithmetic of the one it replaces: the x product is
// LinearForward's cublasSgemm in both precisions (exact float32, as
// LinearForward is: no TF32 whatever K), scale multiplies each of its
// values once as Scale does, after the sum (not A before it, which would
// round differently for a scale that is not a power of two), and the
// rank-r products are Backend.Matmul's (loraTF32 of K = R). What may
// differ is only the x product's sum order: each value of uc is the dot
// product over In that x·A_iᵀ alone forms, but cuBLAS may pick another
// algorithm for the k·R-column product than for an R-column one (another
// split of K), so the last bits of us and outs may move on a GPU; the
// emulated device (one float64 sum a value) gives the same bits as one
// projection at a time (TestLoRAForwardMany).
// view(b, off, n) is n elements of b from off.
func planLoRAForwardMany(view func(b any, off, n int) any, outs, us []any, x any, as, bs []any, uc, ac any,
	prec kernels.Precision, N, In, R int, Outs []int, scale float32) []xstep {
	return planLoRAForwardManyOf(view, outs, us, x, as, bs, uc, ac, nil, nil, prec, N, In, R, Outs, scale)
}

// planLoRAForwardManyTo is kernels.GateUpRounder's LoRAForwardManyTo:
// planLoRAForwardMany with step 4 on bfloat16 operands, storing outs[i]
// rounded (bfloat16 pairs): us[i] rounded into ubf [N, R] and bs[i] into
// bbf [Out, R] (f32_to_bf16, each), then the bf16 GEMM with mm.CBF16, as
// MatmulBF16To computes it. 5k + 1 launches.
func planLoRAForwardManyTo(view func(b any, off, n int) any, outBFs, us []any, x any, as, bs []any, uc, ac, ubf, bbf any,
	N, In, R int, Outs []int, scale float32) []xstep {
	return planLoRAForwardManyOf(view, outBFs, us, x, as, bs, uc, ac, ubf, bbf, kernels.PrecisionBF16, N, In, R, Outs, scale)
}

// planLoRAForwardManyOf is planLoRAForwardMany, its rank-r products
// planLoRAForwardManyTo's where ubf is not nil.
func planLoRAForwardManyOf(view func(b any, off, n int) any, outs, us []any, x any, as, bs []any, uc, ac, ubf, bbf any,
	prec kernels.Precision, N, In, R int, Outs []int, scale float32) []xstep {
	k := len(Outs)
	kR := k * R
	var s []xstep
	for i := range k {
		s = append(s, kstep(planFlat("copy_f32", R*In, view(ac, i*R*In, R*In), as[i], R*In)...)...)
	}
	s = append(s, gstep(mm{C: uc, A: x, B: ac, M: N, N: kR, K: In, TransB: true}))
	for i, out := range Outs {
		s = append(s, kstep(planFlat("scale_cols", N*R, us[i], uc, scale, R, kR, i*R, N*R)...)...)
		if ubf != nil {
			s = append(s, kstep(planFlat("f32_to_bf16", N*R, ubf, us[i], N*R)...)...)
			s = append(s, kstep(planFlat("f32_to_bf16", out*R, bbf, bs[i], out*R)...)...)
			s = append(s, gstep(mm{C: outs[i], A: ubf, B: bbf, M: N, N: out, K: R, TransB: true, BF16: true, CBF16: true}))
			continue
		}
		s = append(s, gstep(mm{C: outs[i], A: us[i], B: bs[i], M: N, N: out, K: R, TransB: true, TF32: loraTF32(prec, R)}))
	}
	return s
}

// LoRAForwardMany is kernels.LoRAManyForwarder's LoRAForwardMany on device
// buffers (planLoRAForwardMany), its uc and ac in Ops' scratch: the slots
// "lora.g" and "lora.a" of LoRABackwardMany, whose g [N, k·R] and ac
// [k·R, In] have their sizes, so the forward and backward of a layer
// share that memory.
func (o *Ops) LoRAForwardMany(outs, us []*Buffer, x *Buffer, as, bs []*Buffer, N, In, R int, Outs []int, scale float32) error {
	return o.loraForwardMany("LoRAForwardMany", false, outs, us, x, as, bs, N, In, R, Outs, scale)
}

// LoRAForwardManyTo is kernels.GateUpRounder's LoRAForwardManyTo on device
// buffers (planLoRAForwardManyTo): LoRAForwardMany with outBFs bfloat16
// pairs (bf16Len(N·Outs[i]) elements), u and B rounded into Ops' scratch
// (the slots "loraTo.u", "loraTo.b"). It is refused in PrecisionF32.
func (o *Ops) LoRAForwardManyTo(outBFs, us []*Buffer, x *Buffer, as, bs []*Buffer, N, In, R int, Outs []int, scale float32) error {
	const op = "LoRAForwardManyTo"
	if o.prec != kernels.PrecisionBF16 {
		return fmt.Errorf("CUDA %s: precision %v: the products multiply bfloat16 operands only in %v", op, o.prec, kernels.PrecisionBF16)
	}
	return o.loraForwardMany(op, true, outBFs, us, x, as, bs, N, In, R, Outs, scale)
}

// loraForwardMany is LoRAForwardMany as op, its outputs bfloat16
// (LoRAForwardManyTo) where outBF.
func (o *Ops) loraForwardMany(op string, outBF bool, outs, us []*Buffer, x *Buffer, as, bs []*Buffer, N, In, R int, Outs []int, scale float32) error {
	if err := o.loraForwardManyCheck(op, outBF, outs, us, x, as, bs, N, In, R, Outs); err != nil {
		return err
	}
	k := len(Outs)
	l := o.lockScratch()
	defer l.unlock()
	uc, err := l.get(op, "lora.g", N*k*R)
	if err != nil {
		return err
	}
	ac, err := l.get(op, "lora.a", k*R*In)
	if err != nil {
		return err
	}
	if !outBF {
		return o.runX(op, planLoRAForwardMany(viewF32, buffersAny(outs), buffersAny(us), x, buffersAny(as), buffersAny(bs), uc, ac,
			o.prec, N, In, R, Outs, scale))
	}
	ubf, err := l.get(op, "loraTo.u", bf16Len(N*R))
	if err != nil {
		return err
	}
	bbf, err := l.get(op, "loraTo.b", bf16Len(slices.Max(Outs)*R))
	if err != nil {
		return err
	}
	return o.runX(op, planLoRAForwardManyTo(viewF32, buffersAny(outs), buffersAny(us), x, buffersAny(as), buffersAny(bs), uc, ac, ubf, bbf,
		N, In, R, Outs, scale))
}

// loraForwardManyCheck is LoRAForwardMany's check of its lists, sizes and
// buffers, the outputs bfloat16 where outBF.
func (o *Ops) loraForwardManyCheck(op string, outBF bool, outs, us []*Buffer, x *Buffer, as, bs []*Buffer, N, In, R int, Outs []int) error {
	c := check{op: op}
	k := len(Outs)
	if k == 0 || len(outs) != k || len(us) != k || len(as) != k || len(bs) != k {
		c.fail("%d output sizes, %d outputs, %d us, %d As, %d Bs", k, len(outs), len(us), len(as), len(bs))
		return c.err
	}
	c.loraSizes(N, In, R, k)
	c.buf(o.d, "x", x, N*In)
	for i, out := range Outs {
		if out < 1 {
			c.fail("output size %d of projection %d", out, i)
			continue
		}
		c.sizes("N, Out", N, out)
		if outBF {
			c.buf(o.d, "out", outs[i], bf16Len(N*out))
		} else {
			c.buf(o.d, "out", outs[i], N*out)
		}
		c.buf(o.d, "u", us[i], N*R)
		c.buf(o.d, "A", as[i], R*In)
		c.buf(o.d, "B", bs[i], out*R)
	}
	return c.err
}

var _ kernels.LoRAManyForwarder = (*Backend)(nil)

// LoRAForwardMany implements kernels.LoRAManyForwarder
// (Ops.LoRAForwardMany: one product over x for all the projections), after
// kernels.NeedLoRAForwardMany's checks.
func (b *Backend) LoRAForwardMany(outs, us [][]float32, x []float32, as, bs [][]float32, N, In, R int, Outs []int, scale float32) {
	const op = "LoRAForwardMany"
	kernels.NeedLoRAForwardMany(op, outs, us, x, as, bs, N, In, R, Outs)
	b.onDeviceCost(op, func() opCost { return loraForwardManyCost(N, In, R, Outs) }, func() error {
		return b.ops.LoRAForwardMany(b.f32s(op, "out", outs), b.f32s(op, "u", us), b.f32(op, "x", x), b.f32s(op, "A", as), b.f32s(op, "B", bs),
			N, In, R, Outs, scale)
	})
}

// loraForwardManyCost is LoRAForwardMany's (planLoRAForwardMany's
// products): uc [N,k·R] = x·acᵀ, then per projection out [N,Out] = u·Bᵀ;
// named as loraManyCost names the backward.
func loraForwardManyCost(N, In, R int, Outs []int) opCost {
	sum, name := loraOuts(Outs)
	kR := int64(len(Outs)) * int64(R)
	f := 2*int64(N)*kR*int64(In) + 2*int64(N)*int64(R)*sum
	return opCost{f, name + dims("×", In) + dims(" r", R)}
}

// LoRAForwardManyTo implements kernels.GateUpRounder
// (Ops.LoRAForwardManyTo) after kernels.NeedLoRAForwardMany's checks; it
// panics in PrecisionF32. The profile counts it as LoRAForwardMany
// (loraForwardManyCost).
func (b *Backend) LoRAForwardManyTo(outBFs [][]uint16, us [][]float32, x []float32, as, bs [][]float32, N, In, R int, Outs []int, scale float32) {
	const op = "LoRAForwardManyTo"
	kernels.NeedLoRAForwardMany(op, outBFs, us, x, as, bs, N, In, R, Outs)
	outs := make([]*Buffer, len(outBFs))
	b.onDeviceCost(op, func() opCost { return loraForwardManyCost(N, In, R, Outs) }, func() error {
		for i, o := range outBFs {
			outs[i] = b.bf16(op, "out", o)
		}
		return b.ops.LoRAForwardManyTo(outs, b.f32s(op, "u", us), b.f32(op, "x", x), b.f32s(op, "A", as), b.f32s(op, "B", bs),
			N, In, R, Outs, scale)
	})
}
