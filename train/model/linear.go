package model

import (
	"fmt"
	"slices"

	"github.com/hone-rl/hone/kernels"
)

// Linear is a frozen projection out = x·Weightᵀ + Bias, with an optional LoRA
// update passed per call (the adapter lives outside the model, so the same
// weights serve the base model and any adapter).
type Linear struct {
	Weight Matrix    // [Out, In]
	Bias   []float32 // [Out] or nil
	In     int
	Out    int
}

// Forward computes out [N, Out] = x·Wᵀ + b + Scale·(x·Aᵀ)·Bᵀ.
// With lora, u [N, R] receives Scale·x·Aᵀ, which Backward needs.
// With bfloat16 weights and lora on a kernels.LinearAdderBF16 the LoRA
// product comes first and the base product adds onto it (forwardMany).
func (l *Linear) Forward(be kernels.Backend, out, u, x []float32, N int, lora *LoRA) {
	l.forward(be, out, u, x, nil, N, lora)
}

// forward is Forward with xBF, x rounded to bfloat16 by a
// kernels.InputRounder whose RoundsLinearInput holds (the op that wrote x
// wrote it; nil: none): with bfloat16 weights the base product takes it
// instead of rounding x again, the same bits (forwardMany).
func (l *Linear) forward(be kernels.Backend, out, u, x []float32, xBF []uint16, N int, lora *LoRA) {
	if xBF != nil && l.Weight.BF16 != nil {
		forwardMany(be, []*Linear{l}, [][]float32{out}, [][]float32{u}, x, xBF, N, []*LoRA{lora})
		return
	}
	if a, ok := be.(kernels.LinearAdderBF16); ok && l.Weight.BF16 != nil && lora != nil {
		l.loraSet(be, out, u, x, N, lora)
		a.LinearForwardBF16ManyAdd([][]float32{out}, x, [][]uint16{l.Weight.BF16}, [][]float32{l.Bias}, N, l.In, []int{l.Out}, []bool{true})
		return
	}
	l.Weight.linear(be, out, x, l.Bias, N, l.In, l.Out)
	l.loraForward(be, out, u, x, N, lora)
}

// forwardMany is Forward of several projections of one input x [N, In]
// (q, k, v; gate, up): outs[i] = x·ls[i]ᵀ + … with LoRA loras[i] into
// us[i]. With bfloat16 weights the base products go together through
// kernels.LinearForwardBF16Many, so kernels/cuda's bf16 precision rounds x
// to bfloat16 once rather than once a projection; then each LoRA update.
//
// On a kernels.LinearAdderBF16 (kernels/cuda) with a LoRA on any of them
// the order turns: each LoRA update first sets its output, out = u·Bᵀ
// (loraSet: the rank-r Matmul with beta 0, which writes out without
// reading it), then LinearForwardBF16ManyAdd adds the base products onto
// those outputs (GEMMs with beta 1, whose epilogue reads out behind a
// compute-bound product) and sets the others: on the 7B shape the rank-r
// products no longer read the [N, Out] outputs, 45.6 GB a step that the
// base GEMMs read instead, hidden behind their arithmetic
// (TestStepTraffic7B's bandwidth-bound bytes). The sums associate
// differently, ((u·Bᵀ + x·Wᵀ) + b) rather than ((x·Wᵀ + b) + u·Bᵀ), so
// with a bias (q, k, v of qwen2) the last bits of the outputs may move;
// without one the same two values are added, in the other order
// (kernels.LinearAdderBF16). Forward turns the order too, so the outputs
// are the ones Forward gives on every backend, bit for bit; ref and cpu,
// no LinearAdderBF16, keep the old order and its bits.
//
// On a kernels.LoRAManyForwarder (kernels/cuda) the LoRA updates of two
// or more projections with one rank and scale set their outputs as one op
// (loraSetMany), which on kernels/cuda reads x once for all their x·Aᵀ
// products rather than once a projection, each value rounded as loraSet
// rounds it (the backend says where the sums' order may differ).
//
// xBF, when not nil, is x rounded to bfloat16 by a kernels.InputRounder
// whose RoundsLinearInput holds, written by the op that wrote x (the
// block's RMSNorm; the MLP's gated unit): the base products take it
// (LinearForwardBF16Rounded, in either order) instead of rounding x
// again, the same bits; the LoRA products still read x.
func forwardMany(be kernels.Backend, ls []*Linear, outs, us [][]float32, x []float32, xBF []uint16, N int, loras []*LoRA) {
	weights := make([][]uint16, len(ls))
	ocs := make([]int, len(ls))
	var biases [][]float32
	for i, l := range ls {
		if l.Weight.BF16 == nil || l.In != ls[0].In {
			for i, l := range ls {
				l.Forward(be, outs[i], us[i], x, N, loras[i])
			}
			return
		}
		weights[i], ocs[i] = l.Weight.BF16, l.Out
		if l.Bias != nil && biases == nil {
			biases = make([][]float32, len(ls))
		}
	}
	if biases != nil {
		for i, l := range ls {
			biases[i] = l.Bias
		}
	}
	a, adds := be.(kernels.LinearAdderBF16)
	var add []bool // the outputs the base products add onto: nil, none
	if adds && slices.ContainsFunc(loras, func(lr *LoRA) bool { return lr != nil }) {
		add = make([]bool, len(ls))
		many := loraSetMany(be, ls, outs, us, x, N, loras)
		for i, l := range ls {
			if loras[i] != nil {
				if !many {
					l.loraSet(be, outs[i], us[i], x, N, loras[i])
				}
				add[i] = true
			}
		}
	}
	switch {
	case xBF != nil:
		be.(kernels.InputRounder).LinearForwardBF16Rounded(outs, xBF, weights, biases, N, ls[0].In, ocs, add)
	case add != nil:
		a.LinearForwardBF16ManyAdd(outs, x, weights, biases, N, ls[0].In, ocs, add)
	default:
		kernels.LinearForwardBF16Many(be, outs, x, weights, biases, N, ls[0].In, ocs)
	}
	if add != nil {
		return
	}
	for i, l := range ls {
		l.loraForward(be, outs[i], us[i], x, N, loras[i])
	}
}

// forwardRoundedU is forward of x given only as its bfloat16 rounding xBF
// (kernels.InputRounder), with lora's u = Scale·x·Aᵀ already in u (the op
// that rounded x computed it: kernels.GatedLoRAForwarder): out = xBF·Wᵀ +
// b + u·Bᵀ in forwardMany's order for be, the rank-r product first on a
// kernels.LinearAdderBF16 (the base product adding onto it), last
// otherwise.
func (l *Linear) forwardRoundedU(be kernels.Backend, out, u []float32, xBF []uint16, N int, lora *LoRA) {
	var biases [][]float32
	if l.Bias != nil {
		biases = [][]float32{l.Bias}
	}
	r := be.(kernels.InputRounder)
	if _, adds := be.(kernels.LinearAdderBF16); adds {
		be.Matmul(out, u, lora.B, N, l.Out, lora.R, false, true, 0) // out = u·Bᵀ
		r.LinearForwardBF16Rounded([][]float32{out}, xBF, [][]uint16{l.Weight.BF16}, biases, N, l.In, []int{l.Out}, []bool{true})
		return
	}
	r.LinearForwardBF16Rounded([][]float32{out}, xBF, [][]uint16{l.Weight.BF16}, biases, N, l.In, []int{l.Out}, nil)
	be.Matmul(out, u, lora.B, N, l.Out, lora.R, false, true, 1) // out += u·Bᵀ
}

// loraSetMany is loraSet of every projection of ls as one
// kernels.LoRAManyForwarder's LoRAForwardMany, when be is one and there
// are at least two projections, over at least one token, each with a LoRA
// update of one rank and scale (oneLoRA); it reports whether it ran (if
// not, nothing ran). One projection alone gains nothing by it: the same
// one read of x, and on kernels/cuda a launch more.
func loraSetMany(be kernels.Backend, ls []*Linear, outs, us [][]float32, x []float32, N int, loras []*LoRA) bool {
	m, ok := be.(kernels.LoRAManyForwarder)
	if !ok || len(ls) < 2 || N < 1 || !oneLoRA(ls, loras) {
		return false
	}
	ocs, as, bs, _, _ := loraLists(ls, loras)
	m.LoRAForwardMany(outs, us, x, as, bs, N, ls[0].In, loras[0].R, ocs, loras[0].Scale)
	return true
}

// loraForward adds the LoRA path to out [N, Out] = x·Wᵀ + b: u [N, R]
// receives Scale·x·Aᵀ and out += u·Bᵀ (nothing without lora).
func (l *Linear) loraForward(be kernels.Backend, out, u, x []float32, N int, lora *LoRA) {
	if lora == nil {
		return
	}
	l.loraU(be, u, x, N, lora)
	be.Matmul(out, u, lora.B, N, l.Out, lora.R, false, true, 1) // out += u·Bᵀ
}

// loraSet writes the LoRA path alone into out [N, Out]: u [N, R] receives
// Scale·x·Aᵀ and out = u·Bᵀ (its contents ignored), for the base product
// to add onto (kernels.LinearAdderBF16).
func (l *Linear) loraSet(be kernels.Backend, out, u, x []float32, N int, lora *LoRA) {
	l.loraU(be, u, x, N, lora)
	be.Matmul(out, u, lora.B, N, l.Out, lora.R, false, true, 0) // out = u·Bᵀ
}

// loraU computes u [N, R] = Scale·x·Aᵀ.
func (l *Linear) loraU(be kernels.Backend, u, x []float32, N int, lora *LoRA) {
	be.LinearForward(u, x, lora.A, nil, N, l.In, lora.R) // u = x·Aᵀ   [N, R]
	be.Scale(u, u, lora.Scale, N*lora.R)                 // u *= Scale
}

// Backward accumulates dx [N, In] += dout·W (+ the LoRA path) and the LoRA
// gradients:
//
//	DB += doutᵀ·u                    [Out, R]
//	g   = Scale·dout·B               [N, R]
//	DA += gᵀ·x                       [R, In]
//	dx += g·A
//
// g is scratch of at least N·R values. dx may be nil when the input's
// gradient is not needed. With set, dx is written instead (its contents
// ignored): with LoRA, the rank-r product g·A overwrites it (beta 0) and
// the base product accumulates onto that, which spares the pass zeroing dx
// and the product's read of it; without LoRA dx is zeroed first. The two
// products are then summed in the other order: on ref and cpu, which add
// the base product in pieces, the LoRA gradients of the micro models
// moved by up to 2e-7 of their largest value.
func (l *Linear) Backward(be kernels.Backend, dx, dout, x, u, g []float32, N int, lora *LoRA, set bool) {
	l.backward(be, dx, dout, nil, x, u, g, N, lora, set)
}

// backward is Backward with doutBF, dout rounded to bfloat16 for the base
// product (Matrix.linearBackward; nil: none).
func (l *Linear) backward(be kernels.Backend, dx, dout []float32, doutBF []uint16, x, u, g []float32, N int, lora *LoRA, set bool) {
	if lora == nil {
		if dx != nil {
			if set {
				be.Zero(dx, N*l.In)
			}
			l.Weight.linearBackward(be, dx, dout, doutBF, x, N, l.In, l.Out)
		}
		return
	}
	if dx != nil && !set {
		l.Weight.linearBackward(be, dx, dout, doutBF, x, N, l.In, l.Out)
	}
	g = l.loraG(be, dout, u, g, N, lora)
	l.loraDA(be, g, x, N, lora)
	if dx != nil {
		l.loraDX(be, dx, g, dout, doutBF, x, N, lora, set)
	}
}

// backwardMany is backward of several projections of one input x [N, In]
// (q, k, v; gate, up): dx [N, In] is written (its contents ignored) with
// the sum of their input gradients, and their LoRA gradients accumulate;
// doutBFs[i] (doutBFs nil: none) is douts[i] rounded as backward takes
// it. On a backend that is a kernels.LoRAManyBackwarder, when every
// projection has a LoRA update of one rank and scale (and dx is wanted,
// over at least one token), their LoRA backward runs as one op, which on
// kernels/cuda reads x once for all their DA products and writes dx once
// for all their rank-r products, and then each base product accumulates
// onto dx; on a kernels.LoRARoundedBackwarder given doutBFs
// (roundedLoRA), that one op takes the roundings, and douts may be nil.
// Otherwise each projection's backward runs in order, the first one
// setting dx, as before (ref and cpu: the same bits).
//
// xBF, when not nil (x then nil), is x as its bfloat16 rounding only, which
// the caller may give where normInputBF16 holds: the LoRA backward runs as
// one kernels.NormInputRounder's LoRABackwardManyInputBF16 (on the
// roundings doutBFs where roundedLoRA holds, else on douts), whose DA
// products multiply x's and g's roundings; without LoRA updates nothing
// reads x (the base products of bfloat16 weights do not).
func backwardMany(be kernels.Backend, ls []*Linear, dx []float32, douts [][]float32, doutBFs [][]uint16, x []float32, xBF []uint16, us [][]float32, g []float32, N int, loras []*LoRA) {
	bf := func(i int) []uint16 {
		if doutBFs == nil {
			return nil
		}
		return doutBFs[i]
	}
	if xBF != nil && oneLoRA(ls, loras) {
		outs, as, bs, das, dbs := loraLists(ls, loras)
		r := be.(kernels.NormInputRounder)
		if doutBFs != nil && roundedLoRA(be, ls, loras, N) {
			r.LoRABackwardManyInputBF16(dx, nil, doutBFs, us, xBF, as, bs, das, dbs, N, ls[0].In, loras[0].R, outs, loras[0].Scale, true)
		} else {
			r.LoRABackwardManyInputBF16(dx, douts, nil, us, xBF, as, bs, das, dbs, N, ls[0].In, loras[0].R, outs, loras[0].Scale, true)
		}
		for i, l := range ls {
			l.Weight.linearBackward(be, dx, douts[i], bf(i), nil, N, l.In, l.Out)
		}
		return
	}
	if doutBFs != nil && dx != nil && roundedLoRA(be, ls, loras, N) {
		outs, as, bs, das, dbs := loraLists(ls, loras)
		be.(kernels.LoRARoundedBackwarder).LoRABackwardManyRounded(dx, doutBFs, us, x, as, bs, das, dbs, N, ls[0].In, loras[0].R, outs, loras[0].Scale, true)
		for i, l := range ls {
			l.Weight.linearBackward(be, dx, nil, doutBFs[i], x, N, l.In, l.Out)
		}
		return
	}
	if m, ok := be.(kernels.LoRAManyBackwarder); ok && dx != nil && N > 0 && oneLoRA(ls, loras) {
		outs, as, bs, das, dbs := loraLists(ls, loras)
		m.LoRABackwardMany(dx, douts, us, x, as, bs, das, dbs, N, ls[0].In, loras[0].R, outs, loras[0].Scale, true)
		for i, l := range ls {
			l.Weight.linearBackward(be, dx, douts[i], bf(i), x, N, l.In, l.Out)
		}
		return
	}
	for i, l := range ls {
		l.backward(be, dx, douts[i], bf(i), x, us[i], g, N, loras[i], i == 0)
	}
}

// loraLists returns the output sizes of ls and the A, B, DA and DB of
// their LoRA updates loras (none nil), in order: LoRABackwardMany's lists.
func loraLists(ls []*Linear, loras []*LoRA) (outs []int, as, bs, das, dbs [][]float32) {
	k := len(ls)
	outs = make([]int, k)
	as, bs, das, dbs = make([][]float32, k), make([][]float32, k), make([][]float32, k), make([][]float32, k)
	for i, l := range ls {
		outs[i] = l.Out
		as[i], bs[i], das[i], dbs[i] = loras[i].A, loras[i].B, loras[i].DA, loras[i].DB
	}
	return outs, as, bs, das, dbs
}

// roundedLoRA reports whether backwardMany, given the bfloat16 roundings
// of ls' output gradients, runs their LoRA backward on those
// (kernels.LoRARoundedBackwarder's LoRABackwardManyRounded, which
// kernels/cuda's bf16 precision implements): over at least one token,
// every projection with a LoRA update of one rank and scale. Then neither
// their LoRA backward nor their base products read the float32 gradients.
func roundedLoRA(be kernels.Backend, ls []*Linear, loras []*LoRA, N int) bool {
	r, ok := be.(kernels.LoRARoundedBackwarder)
	return ok && r.RoundsLoRADout() && N > 0 && oneLoRA(ls, loras)
}

// normInputBF16 reports whether the backward of the projections ls of one
// input (q, k, v; gate, up; dx wanted), with LoRA updates loras, may take
// that input as its bfloat16 rounding only (backwardMany's xBF): on a
// kernels.NormInputRounder whose RoundsNormInput holds (kernels/cuda's
// bf16 precision), over at least one token, with bfloat16 weights (their
// base products do not read x), and with a LoRA update on none of them or
// on all, of one rank and scale (oneLoRA: one LoRABackwardManyInputBF16).
// Then the block's backward recomputes the input as bfloat16 only
// (Block.normAgain); otherwise as float32, for the readers that need it.
func normInputBF16(be kernels.Backend, ls []*Linear, loras []*LoRA, N int) bool {
	r, ok := be.(kernels.NormInputRounder)
	if !ok || !r.RoundsNormInput() || N < 1 {
		return false
	}
	none := true
	for i, l := range ls {
		if l.Weight.BF16 == nil {
			return false
		}
		none = none && loras[i] == nil
	}
	return none || oneLoRA(ls, loras)
}

// oneLoRA reports whether every projection of ls has a LoRA update, all of
// one rank and scale, and all take inputs of one width.
func oneLoRA(ls []*Linear, loras []*LoRA) bool {
	for i, lr := range loras {
		if lr == nil || lr.R != loras[0].R || lr.Scale != loras[0].Scale || ls[i].In != ls[0].In {
			return false
		}
	}
	return len(loras) > 0
}

// loraG is the first part of Backward's LoRA path: DB += doutᵀ·u, and g =
// Scale·dout·B into the scratch g, which it returns ([N, R]).
func (l *Linear) loraG(be kernels.Backend, dout, u, g []float32, N int, lora *LoRA) []float32 {
	be.Matmul(lora.DB, dout, u, l.Out, lora.R, N, true, false, 1) // DB += doutᵀ·u
	g = g[:N*lora.R]                                              // [N, R]
	be.Matmul(g, dout, lora.B, N, lora.R, l.Out, false, false, 0)
	be.Scale(g, g, lora.Scale, N*lora.R)
	return g
}

// loraDA accumulates DA += gᵀ·x.
func (l *Linear) loraDA(be kernels.Backend, g, x []float32, N int, lora *LoRA) {
	be.Matmul(lora.DA, g, x, lora.R, l.In, N, true, false, 1)
}

// loraDX is Backward's dx with LoRA: dx += g·A, after the base product
// (which the caller ran); with set, dx = g·A and then the base product
// accumulates (x is only the base product's input: nil with bfloat16
// weights; doutBF as in backward).
func (l *Linear) loraDX(be kernels.Backend, dx, g, dout []float32, doutBF []uint16, x []float32, N int, lora *LoRA, set bool) {
	if set {
		be.Matmul(dx, g, lora.A, N, l.In, lora.R, false, false, 0) // dx = g·A
		l.Weight.linearBackward(be, dx, dout, doutBF, x, N, l.In, l.Out)
		return
	}
	be.Matmul(dx, g, lora.A, N, l.In, lora.R, false, false, 1) // dx += g·A
}

// merge adds Scale·B·A into the weight: W [Out, In] += Scale·B [Out, R]·A [R, In].
func (l *Linear) merge(be kernels.Backend, lora *LoRA) error {
	ba, err := kernels.AllocF32(be, l.Out*l.In)
	if err != nil {
		return fmt.Errorf("model: merge: allocating %d float32 values on %s: %w", l.Out*l.In, be.Name(), err)
	}
	defer kernels.FreeF32(be, ba)
	be.Matmul(ba, lora.B, lora.A, l.Out, l.In, lora.R, false, false, 0)
	w, free, err := l.Weight.float32s(be)
	if err != nil {
		return err
	}
	be.AXPY(w, ba, lora.Scale, l.Out*l.In)
	if free {
		kernels.Synchronize(be) // the host reads the sum
		kernels.ToBF16(l.Weight.BF16, w)
		kernels.FreeF32(be, w)
	}
	return nil
}
