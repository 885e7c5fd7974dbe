package cuda

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// planLinearForward: out [N,OC] = inp [N,C] · weight [OC,C]ᵀ (cublasSgemm),
// then bias_forward adds bias [OC] to every row.
func planLinearForward(out, inp, weight, bias any, withBias bool, N, C, OC int) []xstep {
	if N == 0 || OC == 0 {
		return nil
	}
	s := []xstep{gstep(mm{C: out, A: inp, B: weight, M: N, N: OC, K: C, TransB: true})}
	if withBias {
		s = append(s, kstep(planFlat("bias_forward", N*OC, out, bias, N, OC)...)...)
	}
	return s
}

// planBias adds bias to out when withBias (LinearForwardBF16's last step).
func planBias(out, bias any, withBias bool, N, OC int) []xstep {
	if !withBias || N == 0 || OC == 0 {
		return nil
	}
	return kstep(planFlat("bias_forward", N*OC, out, bias, N, OC)...)
}

// planLinearBackward: dinp [N,C] += dout [N,OC] · weight [OC,C] and
// dweight [OC,C] += doutᵀ · inp [N,C] (cublasSgemm, beta 1), dbias [OC]
// += the column sums of dout (bias_backward: grid ⌈OC/32⌉, block 32×8,
// deterministic); each only when asked for.
func planLinearBackward(dinp, dweight, dbias, dout, inp, weight any, withDinp, withDweight, withDbias bool, N, C, OC int) []xstep {
	if N == 0 || OC == 0 {
		return nil
	}
	var s []xstep
	if withDinp && C > 0 {
		s = append(s, gstep(mm{C: dinp, A: dout, B: weight, M: N, N: C, K: OC, Beta: 1}))
	}
	if withDweight && C > 0 {
		s = append(s, gstep(mm{C: dweight, A: dout, B: inp, M: OC, N: C, K: N, TransA: true, Beta: 1}))
	}
	if withDbias {
		s = append(s, xstep{k: &step{Kernel: "bias_backward", Grid: Dim3{(OC + 31) / 32, 1, 1}, Block: Dim3{32, 8, 1}, Args: []any{dbias, dout, N, OC}}})
	}
	return s
}

// planLinearForwardBF16: out [N,OC] = inp [N,C] · weight [OC,C]ᵀ +
// beta·out with a bfloat16 weight (beta 0: out is not read; 1: the
// product adds onto it, in the GEMM's epilogue), then the bias.
// PrecisionF32: rows weight rows at a time widened into wf (bf16_to_f32;
// wf holds min(rows, OC)·C floats) and multiplied into out's columns
// (cublasSgemm, row stride OC). PrecisionBF16: inp rounded into xb
// (f32_to_bf16; N·C bfloat16 values), one cublasGemmEx.
func planLinearForwardBF16(out, inp, weight, bias, wf, xb any, withBias bool, beta float32, prec kernels.Precision, N, C, OC, rows int) []xstep {
	if N == 0 || OC == 0 {
		return nil
	}
	var s []xstep
	if prec == kernels.PrecisionBF16 {
		s = append(s, kstep(planFlat("f32_to_bf16", N*C, xb, inp, N*C)...)...)
		s = append(s, gstep(mm{C: out, A: xb, B: weight, M: N, N: OC, K: C, TransB: true, Beta: beta, BF16: true}))
	} else {
		for o0 := 0; o0 < OC; o0 += rows {
			l := min(rows, OC-o0)
			s = append(s, kstep(planFlat("bf16_to_f32", l*C, wf, weight, o0*C, l*C)...)...)
			s = append(s, gstep(mm{C: out, OffC: o0, LDC: OC, A: inp, B: wf, M: N, N: l, K: C, TransB: true, Beta: beta}))
		}
	}
	return append(s, planBias(out, bias, withBias, N, OC)...)
}

// planLinearBackwardBF16: dinp [N,C] += dout [N,OC] · weight [OC,C] with a
// bfloat16 weight. PrecisionF32: rows weight rows at a time widened into
// wf and multiplied by dout's columns (row stride OC), beta 1.
// PrecisionBF16: dout rounded into db (N·OC bfloat16 values), one
// cublasGemmEx, beta 1.
func planLinearBackwardBF16(dinp, dout, weight, wf, db any, prec kernels.Precision, N, C, OC, rows int) []xstep {
	if N == 0 || C == 0 || OC == 0 {
		return nil
	}
	if prec == kernels.PrecisionBF16 {
		s := kstep(planFlat("f32_to_bf16", N*OC, db, dout, N*OC)...)
		return append(s, gstep(mm{C: dinp, A: db, B: weight, M: N, N: C, K: OC, Beta: 1, BF16: true}))
	}
	var s []xstep
	for o0 := 0; o0 < OC; o0 += rows {
		l := min(rows, OC-o0)
		s = append(s, kstep(planFlat("bf16_to_f32", l*C, wf, weight, o0*C, l*C)...)...)
		s = append(s, gstep(mm{C: dinp, A: dout, OffA: o0, LDA: OC, B: wf, M: N, N: C, K: l, Beta: 1}))
	}
	return s
}

// linearCheck checks a Linear op's sizes and buffers; bufs are name,
// buffer, elements triples, a nil buffer skipped when optional (name
// starting with '?').
func (o *Ops) linearCheck(op string, N, C, OC int, bufs ...any) error {
	c := check{op: op}
	c.sizes("N, C", N, C)
	c.sizes("N, OC", N, OC)
	c.sizes("OC, C", OC, C)
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
	return c.err
}

// LinearForward is kernels.Backend.LinearForward on device buffers: out
// [N,OC] = inp [N,C] · weight [OC,C]ᵀ + bias [OC] (nil: none), a
// cublasSgemm and bias_forward.
func (o *Ops) LinearForward(out, inp, weight, bias *Buffer, N, C, OC int) error {
	const op = "LinearForward"
	if err := o.linearCheck(op, N, C, OC, "out", out, N*OC, "inp", inp, N*C, "weight", weight, OC*C, "?bias", bias, OC); err != nil {
		return err
	}
	return o.runX(op, planLinearForward(out, inp, weight, bias, bias != nil, N, C, OC))
}

// LinearBackward is kernels.Backend.LinearBackward on device buffers: it
// accumulates dinp [N,C] += dout·weight, dweight [OC,C] += doutᵀ·inp
// (cublasSgemm, beta 1) and dbias [OC] += Σ_n dout[n,:] (a deterministic
// column sum); a nil gradient is skipped, and inp (weight) may be nil when
// dweight (dinp) is.
func (o *Ops) LinearBackward(dinp, dweight, dbias, dout, inp, weight *Buffer, N, C, OC int) error {
	const op = "LinearBackward"
	bufs := []any{"?dinp", dinp, N * C, "?dweight", dweight, OC * C, "?dbias", dbias, OC, "dout", dout, N * OC}
	if dweight != nil {
		bufs = append(bufs, "inp", inp, N*C)
	}
	if dinp != nil {
		bufs = append(bufs, "weight", weight, OC*C)
	}
	if err := o.linearCheck(op, N, C, OC, bufs...); err != nil {
		return err
	}
	return o.runX(op, planLinearBackward(dinp, dweight, dbias, dout, inp, weight, dinp != nil, dweight != nil, dbias != nil, N, C, OC))
}

// bf16Len is the number of buffer elements n bfloat16 values take.
func bf16Len(n int) int { return (n + 1) / 2 }

// LinearForwardBF16 is kernels.Backend.LinearForwardBF16 on device
// buffers: weight [OC,C] holds bfloat16 values (UploadBF16), multiplied
// as SetPrecision says; bias [OC] may be nil. Its scratch is Ops' own,
// kept between calls (scratch.go).
func (o *Ops) LinearForwardBF16(out, inp, weight, bias *Buffer, N, C, OC int) error {
	return o.linearForwardBF16("LinearForwardBF16", out, inp, weight, bias, N, C, OC, 0)
}

// linearForwardBF16 is LinearForwardBF16 as op, its product added onto
// out when beta is 1 (planLinearForwardBF16).
func (o *Ops) linearForwardBF16(op string, out, inp, weight, bias *Buffer, N, C, OC int, beta float32) error {
	if err := o.linearCheck(op, N, C, OC, "out", out, N*OC, "inp", inp, N*C, "weight", weight, bf16Len(OC*C), "?bias", bias, OC); err != nil {
		return err
	}
	if N == 0 || OC == 0 {
		return nil
	}
	rows := bf16ChunkRows(C)
	n := min(rows, OC) * C // PrecisionF32: the widened weight rows
	if o.prec == kernels.PrecisionBF16 {
		n = bf16Len(N * C) // the rounded inp
	}
	l := o.lockScratch()
	defer l.unlock()
	sc, err := l.get(op, "linear.bf16", n)
	if err != nil {
		return err
	}
	steps := planLinearForwardBF16(out, inp, weight, bias, sc, sc, bias != nil, beta, o.prec, N, C, OC, rows)
	if err := o.throughLt(op, l, steps); err != nil {
		return err
	}
	return o.runX(op, steps)
}

// LinearForwardBF16Many is LinearForwardBF16 for several weights on one
// input (kernels.LinearManyBF16er): outs[i] [N,OCs[i]] = inp ·
// weights[i]ᵀ + biases[i] (a nil entry: no bias). In PrecisionBF16 inp is
// rounded into the scratch once (f32_to_bf16) and every product is a
// cublasGemmEx from it, then its bias_forward: the steps
// LinearForwardBF16 makes for each, less all roundings but the first, so
// the same bits. In PrecisionF32 there is nothing to share: one
// LinearForwardBF16 each.
func (o *Ops) LinearForwardBF16Many(outs []*Buffer, inp *Buffer, weights, biases []*Buffer, N, C int, OCs []int) error {
	return o.linearForwardBF16Many("LinearForwardBF16Many", outs, inp, weights, biases, N, C, OCs, nil)
}

// LinearForwardBF16ManyAdd is LinearForwardBF16Many whose products add
// onto outs[i] where add[i] (kernels.LinearAdderBF16): outs[i] += inp ·
// weights[i]ᵀ, the GEMM with beta 1 (cublasGemmEx, or cublasLtMatmul
// under GEMMCublasLt, in PrecisionBF16; the chunks' cublasSgemm in
// PrecisionF32), then biases[i]; where not, LinearForwardBF16Many's steps
// and bits. The launches and bytes are LinearForwardBF16Many's but for
// the GEMMs' reads of the outputs they add onto, in their epilogues.
func (o *Ops) LinearForwardBF16ManyAdd(outs []*Buffer, inp *Buffer, weights, biases []*Buffer, N, C int, OCs []int, add []bool) error {
	const op = "LinearForwardBF16ManyAdd"
	if len(add) != len(outs) {
		return fmt.Errorf("CUDA %s: %d outputs, %d add flags", op, len(outs), len(add))
	}
	return o.linearForwardBF16Many(op, outs, inp, weights, biases, N, C, OCs, add)
}

// linearForwardBF16Many is LinearForwardBF16Many as op, each product
// added onto its output where add[i] (add nil: none).
func (o *Ops) linearForwardBF16Many(op string, outs []*Buffer, inp *Buffer, weights, biases []*Buffer, N, C int, OCs []int, add []bool) error {
	if len(weights) != len(outs) || len(biases) != len(outs) || len(OCs) != len(outs) {
		return fmt.Errorf("CUDA %s: %d outputs, %d weights, %d biases, %d output sizes", op, len(outs), len(weights), len(biases), len(OCs))
	}
	beta := func(i int) float32 {
		if add != nil && add[i] {
			return 1
		}
		return 0
	}
	if o.prec != kernels.PrecisionBF16 {
		for i := range outs {
			if err := o.linearForwardBF16(op, outs[i], inp, weights[i], biases[i], N, C, OCs[i], beta(i)); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range outs {
		if err := o.linearCheck(op, N, C, OCs[i], "out", outs[i], N*OCs[i], "inp", inp, N*C, "weight", weights[i], bf16Len(OCs[i]*C), "?bias", biases[i], OCs[i]); err != nil {
			return err
		}
	}
	if N == 0 {
		return nil
	}
	l := o.lockScratch()
	defer l.unlock()
	sc, err := l.get(op, "linear.bf16", bf16Len(N*C))
	if err != nil {
		return err
	}
	steps := kstep(planFlat("f32_to_bf16", N*C, sc, inp, N*C)...)
	for i := range outs {
		if OCs[i] == 0 {
			continue
		}
		steps = append(steps, gstep(mm{C: outs[i], A: sc, B: weights[i], M: N, N: OCs[i], K: C, TransB: true, Beta: beta(i), BF16: true}))
		steps = append(steps, planBias(outs[i], biases[i], biases[i] != nil, N, OCs[i])...)
	}
	if err := o.throughLt(op, l, steps); err != nil {
		return err
	}
	return o.runX(op, steps)
}

// LinearForwardBF16Rounded is LinearForwardBF16ManyAdd in PrecisionBF16
// with inp [N,C] already rounded to bfloat16 (bfloat16 pairs,
// bf16Len(N·C) elements; RMSNormForwardBF16, SwiGLUForwardBF16 and
// GeGLUForwardBF16 write them): the same GEMMs on the same operands and
// the same biases, without the f32_to_bf16 pass, so the same bits; add
// nil sets every output (LinearForwardBF16Many's, and with one weight
// LinearForwardBF16's, steps but the rounding). It is refused in
// PrecisionF32, whose products do not round inp.
func (o *Ops) LinearForwardBF16Rounded(outs []*Buffer, inp *Buffer, weights, biases []*Buffer, N, C int, OCs []int, add []bool) error {
	return o.linearForwardBF16Rounded("LinearForwardBF16Rounded", outs, inp, weights, biases, N, C, OCs, add, false)
}

// LinearForwardBF16RoundedTo is kernels.GateUpRounder's
// LinearForwardBF16RoundedTo on device buffers: LinearForwardBF16Rounded
// without biases, each GEMM storing its output as bfloat16 pairs
// (bf16Len(N·OCs[i]) elements; mm.CBF16), where add[i] onto its old
// values widened; under GEMMCublasLt through cublasLtMatmul with
// bfloat16 C and D layouts (throughLt). It is refused in PrecisionF32.
func (o *Ops) LinearForwardBF16RoundedTo(outBFs []*Buffer, inp *Buffer, weights []*Buffer, N, C int, OCs []int, add []bool) error {
	return o.linearForwardBF16Rounded("LinearForwardBF16RoundedTo", outBFs, inp, weights, make([]*Buffer, len(outBFs)), N, C, OCs, add, true)
}

// linearForwardBF16Rounded is LinearForwardBF16Rounded as op, its outputs
// bfloat16 where cBF.
func (o *Ops) linearForwardBF16Rounded(op string, outs []*Buffer, inp *Buffer, weights, biases []*Buffer, N, C int, OCs []int, add []bool, cBF bool) error {
	if o.prec != kernels.PrecisionBF16 {
		return fmt.Errorf("CUDA %s: precision %v: the products round their input to bfloat16 only in %v", op, o.prec, kernels.PrecisionBF16)
	}
	if len(weights) != len(outs) || len(biases) != len(outs) || len(OCs) != len(outs) || (add != nil && len(add) != len(outs)) {
		return fmt.Errorf("CUDA %s: %d outputs, %d weights, %d biases, %d output sizes, %d add flags", op, len(outs), len(weights), len(biases), len(OCs), len(add))
	}
	for i := range outs {
		outLen := N * OCs[i]
		if cBF {
			outLen = bf16Len(outLen)
		}
		if err := o.linearCheck(op, N, C, OCs[i], "out", outs[i], outLen, "inp", inp, bf16Len(N*C), "weight", weights[i], bf16Len(OCs[i]*C), "?bias", biases[i], OCs[i]); err != nil {
			return err
		}
	}
	if N == 0 {
		return nil
	}
	var steps []xstep
	for i := range outs {
		if OCs[i] == 0 {
			continue
		}
		var beta float32
		if add != nil && add[i] {
			beta = 1
		}
		steps = append(steps, gstep(mm{C: outs[i], A: inp, B: weights[i], M: N, N: OCs[i], K: C, TransB: true, Beta: beta, BF16: true, CBF16: cBF}))
		steps = append(steps, planBias(outs[i], biases[i], biases[i] != nil, N, OCs[i])...)
	}
	l := o.lockScratch()
	defer l.unlock()
	if err := o.throughLt(op, l, steps); err != nil {
		return err
	}
	return o.runX(op, steps)
}

// LinearBackwardBF16 is kernels.Backend.LinearBackwardBF16 on device
// buffers: dinp [N,C] += dout [N,OC] · weight [OC,C] with a bfloat16
// weight, multiplied as SetPrecision says. Its scratch is Ops' own, kept
// between calls (scratch.go).
func (o *Ops) LinearBackwardBF16(dinp, dout, weight *Buffer, N, C, OC int) error {
	const op = "LinearBackwardBF16"
	if err := o.linearCheck(op, N, C, OC, "dinp", dinp, N*C, "dout", dout, N*OC, "weight", weight, bf16Len(OC*C)); err != nil {
		return err
	}
	if N == 0 || C == 0 || OC == 0 {
		return nil
	}
	rows := bf16ChunkRows(C)
	n := min(rows, OC) * C
	if o.prec == kernels.PrecisionBF16 {
		n = bf16Len(N * OC)
	}
	l := o.lockScratch()
	defer l.unlock()
	sc, err := l.get(op, "linear.bf16", n)
	if err != nil {
		return err
	}
	steps := planLinearBackwardBF16(dinp, dout, weight, sc, sc, o.prec, N, C, OC, rows)
	if err := o.throughLt(op, l, steps); err != nil {
		return err
	}
	return o.runX(op, steps)
}

// LinearBackwardBF16Rounded is LinearBackwardBF16 in PrecisionBF16 with
// dout [N,OC] already rounded to bfloat16 (bfloat16 pairs, bf16Len(N·OC)
// elements; SwiGLUBackwardSetBF16 writes them): the same GEMM on the same
// operands, without the f32_to_bf16 pass, so the same bits. It is refused
// in PrecisionF32, whose product does not round dout.
func (o *Ops) LinearBackwardBF16Rounded(dinp, dout, weight *Buffer, N, C, OC int) error {
	const op = "LinearBackwardBF16Rounded"
	if o.prec != kernels.PrecisionBF16 {
		return fmt.Errorf("CUDA %s: precision %v: the product rounds dout to bfloat16 only in %v", op, o.prec, kernels.PrecisionBF16)
	}
	if err := o.linearCheck(op, N, C, OC, "dinp", dinp, N*C, "dout", dout, bf16Len(N*OC), "weight", weight, bf16Len(OC*C)); err != nil {
		return err
	}
	if N == 0 || C == 0 || OC == 0 {
		return nil
	}
	l := o.lockScratch()
	defer l.unlock()
	steps := []xstep{gstep(mm{C: dinp, A: dout, B: weight, M: N, N: C, K: OC, Beta: 1, BF16: true})}
	if err := o.throughLt(op, l, steps); err != nil {
		return err
	}
	return o.runX(op, steps)
}

// planLinearBackwardBF16To is kernels.DinpRounder's LinearBackwardBF16To
// (not run on a GPU yet): dout [N,OC] rounded into db by f32_to_bf16, then
// one bf16 GEMM storing a bfloat16 dinp [N,C] (mm.CBF16) with beta: the
// product LinearBackwardBF16 runs in PrecisionBF16, its float32 result
// (plus beta times dinp's old values) rounded once to bfloat16.
func planLinearBackwardBF16To(dinp, dout, weight, db any, N, C, OC int, beta float32) []xstep {
	s := kstep(planFlat("f32_to_bf16", N*OC, db, dout, N*OC)...)
	return append(s, gstep(mm{C: dinp, A: db, B: weight, M: N, N: C, K: OC, Beta: beta, BF16: true, CBF16: true}))
}

// LinearBackwardBF16To is kernels.DinpRounder's LinearBackwardBF16To on
// device buffers (planLinearBackwardBF16To): dinp holds bfloat16 pairs
// (bf16Len(N·C) elements), dout is rounded into LinearBackwardBF16's
// scratch slot; N, C and OC are at least 1. Its GEMM runs on the library
// SetGEMMLibrary picked (throughLt). It is refused in PrecisionF32, whose
// products do not round.
func (o *Ops) LinearBackwardBF16To(dinp, dout, weight *Buffer, N, C, OC int, beta float32) error {
	const op = "LinearBackwardBF16To"
	if o.prec != kernels.PrecisionBF16 {
		return fmt.Errorf("CUDA %s: precision %v: the product writes a bfloat16 dinp only in %v", op, o.prec, kernels.PrecisionBF16)
	}
	if N < 1 || C < 1 || OC < 1 {
		return fmt.Errorf("CUDA %s: N %d, C %d, OC %d: each must be at least 1", op, N, C, OC)
	}
	if err := o.linearCheck(op, N, C, OC, "dinp", dinp, bf16Len(N*C), "dout", dout, N*OC, "weight", weight, bf16Len(OC*C)); err != nil {
		return err
	}
	l := o.lockScratch()
	defer l.unlock()
	db, err := l.get(op, "linear.bf16", bf16Len(N*OC))
	if err != nil {
		return err
	}
	steps := planLinearBackwardBF16To(dinp, dout, weight, db, N, C, OC, beta)
	if err := o.throughLt(op, l, steps); err != nil {
		return err
	}
	return o.runX(op, steps)
}

// LinearBackwardBF16ToRounded is kernels.DinpRounder's
// LinearBackwardBF16ToRounded on device buffers: LinearBackwardBF16To's
// GEMM on dout already rounded (doutBF, bfloat16 pairs, bf16Len(N·OC)
// elements), without its f32_to_bf16 pass: the same operands, the same
// bits. Refused in PrecisionF32 as LinearBackwardBF16To is.
func (o *Ops) LinearBackwardBF16ToRounded(dinp, doutBF, weight *Buffer, N, C, OC int, beta float32) error {
	const op = "LinearBackwardBF16ToRounded"
	if o.prec != kernels.PrecisionBF16 {
		return fmt.Errorf("CUDA %s: precision %v: the product writes a bfloat16 dinp only in %v", op, o.prec, kernels.PrecisionBF16)
	}
	if N < 1 || C < 1 || OC < 1 {
		return fmt.Errorf("CUDA %s: N %d, C %d, OC %d: each must be at least 1", op, N, C, OC)
	}
	if err := o.linearCheck(op, N, C, OC, "dinp", dinp, bf16Len(N*C), "doutBF", doutBF, bf16Len(N*OC), "weight", weight, bf16Len(OC*C)); err != nil {
		return err
	}
	l := o.lockScratch()
	defer l.unlock()
	steps := []xstep{gstep(mm{C: dinp, A: doutBF, B: weight, M: N, N: C, K: OC, Beta: beta, BF16: true, CBF16: true})}
	if err := o.throughLt(op, l, steps); err != nil {
		return err
	}
	return o.runX(op, steps)
}

// The GEMM libraries of the bf16 precision's products on bfloat16 weights
// (Ops.SetGEMMLibrary).
const (
	GEMMCublas   = "cublas"   // cublasGemmEx, the default
	GEMMCublasLt = "cublaslt" // cublasLtMatmul with a workspace (gemmlt.go)
)

// SetGEMMLibrary picks the library of the bf16 precision's linear-layer
// products on bfloat16 weights (LinearForwardBF16 and LinearBackwardBF16
// in kernels.PrecisionBF16): GEMMCublas (cublasGemmEx; "" means it too),
// the default, or GEMMCublasLt (cublasLtMatmul with an algorithm for each
// shape, the fastest of the heuristic's candidates unless
// SetGEMMAutotune turned that off, and a LtWorkspaceBytes workspace from
// Ops' scratch), which needs cuBLASLt bound to the device (Options.BLASLt);
// without it SetGEMMLibrary returns why it is not (a *MissingError when
// Open looked for it) and the ops keep cublasGemmEx. The products and their
// rounding points are the same either way; only the algorithm differs. It
// changes nothing in PrecisionF32 (cublasSgemm on the widened weight), for
// the chunked logprob ops or the attention. cublasGemmEx stays the default
// until TestGemmLtOnHardware has timed both on a GPU. Call it before the
// ops run; it is not safe concurrently with them.
func (o *Ops) SetGEMMLibrary(name string) error {
	switch name {
	case "", GEMMCublas:
		o.gemmLib = GEMMCublas
	case GEMMCublasLt:
		if ok, err := o.d.HasBLASLt(); !ok {
			return fmt.Errorf("CUDA Ops: GEMM library %s: %w", name, err)
		}
		o.gemmLib = GEMMCublasLt
	default:
		return fmt.Errorf("CUDA Ops: unknown GEMM library %q (want %q or %q)", name, GEMMCublas, GEMMCublasLt)
	}
	return nil
}

// SetGEMMAutotune sets how many of cuBLASLt's candidate algorithms the
// GEMMCublasLt products time on each new shape before keeping the fastest
// (Device.SetLtAutotune, which says what it costs and what it means for a
// bit-identical resume): LtAutotuneCandidates by default, n ≤ 1 off (the
// heuristic's first algorithm). It changes nothing on cublasGemmEx.
func (o *Ops) SetGEMMAutotune(n int) { o.d.SetLtAutotune(n) }

// GEMMLibrary returns the library SetGEMMLibrary picked.
func (o *Ops) GEMMLibrary() string {
	if o.gemmLib == "" {
		return GEMMCublas
	}
	return o.gemmLib
}

// throughLt sends steps' single bfloat16 GEMMs through cuBLASLt with the
// workspace slot of l when SetGEMMLibrary picked it, those storing a
// bfloat16 C (mm.CBF16: the dact product, the gate and up products of
// GateUpRounder) too: a C and D layout of CUDA_R_16BF, the float32 sums
// and beta·C rounded once on store, as cublasGemmEx does. Without them
// the MLP's largest backward product (the down projection's dinp, 29% of
// the 7B step's backward base-GEMM FLOPs) would stay on cublasGemmEx
// whichever library is picked.
func (o *Ops) throughLt(op string, l *scratchLease, steps []xstep) error {
	if o.gemmLib != GEMMCublasLt {
		return nil
	}
	var ws *Buffer
	for _, s := range steps {
		if s.g == nil || !s.g.BF16 || s.g.Batch > 1 {
			continue
		}
		if ws == nil {
			var err error
			if ws, err = l.get(op, "gemmlt.workspace", LtWorkspaceBytes/4); err != nil {
				return err
			}
		}
		s.g.Lt, s.g.LtWS = true, ws
	}
	return nil
}
