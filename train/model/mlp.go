package model

import (
	"unsafe"

	"github.com/hone-rl/hone/kernels"
)

// MLP is the gated feed-forward down(act(gate(x))·up(x)): SwiGLU (act =
// silu), or Gemma's GeGLU when GELU is set (act = GELU, tanh approximation).
type MLP struct {
	Gate Linear `hf:"gate_proj"`
	Up   Linear `hf:"up_proj"`
	Down Linear `hf:"down_proj"`
	GELU bool
}

// glu writes act = a(gate)·up with the MLP's activation a, and with actBF
// (not nil) its bfloat16 rounding too (kernels.InputRounder).
func (m *MLP) glu(be kernels.Backend, act []float32, actBF []uint16, gate, up []float32) {
	if actBF != nil {
		r := be.(kernels.InputRounder)
		if m.GELU {
			r.GeGLUForwardRounded(act, actBF, gate, up, len(act))
			return
		}
		r.SwiGLUForwardRounded(act, actBF, gate, up, len(act))
		return
	}
	if m.GELU {
		be.GeGLUForward(act, gate, up, len(act))
		return
	}
	be.SwiGLUForward(act, gate, up, len(act))
}

// fusedForward returns be as a kernels.GatedLoRAForwarder when MLP.Forward,
// given act's bf16 copy, computes the down projection's LoRA u inside the
// gated unit: a LoRA down on bfloat16 weights of a rank be fuses.
// Model.actFused asks it of every layer.
func (m *MLP) fusedForward(be kernels.Backend, down *LoRA) (kernels.GatedLoRAForwarder, bool) {
	if down == nil || m.Down.Weight.BF16 == nil {
		return nil, false
	}
	f, ok := be.(kernels.GatedLoRAForwarder)
	return f, ok && f.FusesGatedLoRA(down.R)
}

// fusedBackward returns be as a kernels.GatedLoRABackwarder when
// MLP.Backward, its gated backward writing only dgate's and dup's
// roundings, adds the down projection's DA inside it: a LoRA down of a
// rank be fuses, on bfloat16 operands (roundsLoRAInput). Model.actFused
// asks it of every layer.
func (m *MLP) fusedBackward(be kernels.Backend, down *LoRA) (kernels.GatedLoRABackwarder, bool) {
	if down == nil || !roundsLoRAInput(be) {
		return nil, false
	}
	f, ok := be.(kernels.GatedLoRABackwarder)
	return f, ok && f.FusesGatedLoRABackward(down.R)
}

// mlpActs are the activations MLP.Backward needs. The SwiGLU product is not
// among them: Backward recomputes it from gate and up (one cheap pass)
// instead of keeping a third [N, I] tensor per layer.
type mlpActs struct {
	gate, up []float32 // [N, I]; nil where gateBF and upBF hold them
	// gateBF and upBF [N, I] are gate and up as bfloat16 only, in N·I/2
	// float32s' memory each, where the pass holds them so
	// (Model.gateUpHeld); else nil.
	gateBF, upBF []uint16
	u            [3][]float32 // [N,R] LoRA activations of gate, up, down
}

func (m *MLP) newActs(ar *arena, N int, r *ranks, gateUpBF16 bool) *mlpActs {
	I := m.Gate.Out
	s := &mlpActs{}
	if gateUpBF16 {
		s.gateBF, s.upBF = bf16s(ar.take((N*I+1)/2), N*I), bf16s(ar.take((N*I+1)/2), N*I)
	} else {
		s.gate, s.up = ar.take(N*I), ar.take(N*I)
	}
	for i, mod := range [3]Module{ModGate, ModUp, ModDown} {
		if r[mod] > 0 {
			s.u[i] = ar.take(N * r[mod])
		}
	}
	return s
}

// Forward writes out [N, C] for x [N, C] (the normed input); act [N, I] is
// scratch. xBF, when not nil, is x rounded to bfloat16 (kernels.InputRounder:
// the norm wrote it), which the gate and up projections' products take;
// actBF, when not nil, is scratch of N·I bfloat16 values (it may be xBF's
// memory, spent by then) where the gated unit writes act's rounding for
// the down projection's product.
func (m *MLP) Forward(be kernels.Backend, out []float32, s *mlpActs, x []float32, xBF []uint16, act []float32, actBF []uint16, N int, lr *[numModules]*LoRA) {
	NI := N * m.Gate.Out
	if s.gateBF != nil {
		m.forwardHeld(be, out, s, x, xBF, actBF, N, lr)
		return
	}
	forwardMany(be, []*Linear{&m.Gate, &m.Up}, [][]float32{s.gate, s.up}, [][]float32{s.u[0], s.u[1]}, x, xBF, N, []*LoRA{lr[ModGate], lr[ModUp]})
	if actBF != nil {
		actBF = actBF[:NI:NI]
		if g, ok := m.fusedForward(be, lr[ModDown]); ok {
			// The gated unit and the down projection's u = Scale·act·Aᵀ
			// as one op, act never written as float32: its only float32
			// reader was that product (the base product takes actBF).
			// 1.24 GB a 7B layer less moved (TestStepTraffic7B); u's sums
			// run in the backend's order, so its last bits may move.
			down := lr[ModDown]
			g.GatedLoRAForwardRounded(actBF, s.u[2], s.gate, s.up, down.A, N, m.Gate.Out, down.R, down.Scale, m.GELU)
			m.Down.forwardRoundedU(be, out, s.u[2], actBF, N, down)
			return
		}
	}
	m.glu(be, act[:NI], actBF, s.gate, s.up)
	m.Down.forward(be, out, s.u[2], act, actBF, N, lr[ModDown])
}

// forwardHeld is Forward where s holds gate and up as bfloat16 only
// (Model.gateUpHeld, whose conditions it takes as given): the rank-r
// products of gate and up stored rounded (LoRAForwardManyTo), the base
// products adding onto them and storing their sums rounded
// (LinearForwardBF16RoundedTo), then the gated unit with the down
// projection's u from those roundings (GatedLoRAForwardBF16) and the down
// projection as Forward runs it.
func (m *MLP) forwardHeld(be kernels.Backend, out []float32, s *mlpActs, x []float32, xBF []uint16, actBF []uint16, N int, lr *[numModules]*LoRA) {
	if xBF == nil || actBF == nil {
		panic("model: MLP.Forward holds gate and up as bfloat16 without the rounded input and act (Model.gateUpHeld)")
	}
	r := be.(kernels.GateUpRounder)
	ls := []*Linear{&m.Gate, &m.Up}
	gl := []*LoRA{lr[ModGate], lr[ModUp]}
	outs := [][]uint16{s.gateBF, s.upBF}
	I := m.Gate.Out
	ocs := []int{I, I}
	var add []bool // nil: no LoRA on gate and up, the base products set them
	if gl[0] != nil {
		_, as, bs, _, _ := loraLists(ls, gl)
		r.LoRAForwardManyTo(outs, [][]float32{s.u[0], s.u[1]}, x, as, bs, N, m.Gate.In, gl[0].R, ocs, gl[0].Scale)
		add = []bool{true, true}
	}
	r.LinearForwardBF16RoundedTo(outs, xBF, [][]uint16{m.Gate.Weight.BF16, m.Up.Weight.BF16}, N, m.Gate.In, ocs, add)
	down := lr[ModDown]
	actBF = actBF[: N*I : N*I]
	r.GatedLoRAForwardBF16(actBF, s.u[2], s.gateBF, s.upBF, down.A, N, I, down.R, down.Scale, m.GELU)
	m.Down.forwardRoundedU(be, out, s.u[2], actBF, N, down)
}

// Backward writes dx [N, C] (its contents ignored) and accumulates the
// LoRA gradients given dout [N, C] (and doutBF, its bfloat16 rounding,
// or nil: downDX). w supplies four [N, I] scratch
// buffers (w.act, w.dact, w.dgate, w.dup), and a fifth (w.dgbf) on a
// backend that rounds the products' dout to bfloat16 (newWork): there the
// gated backward also writes dgate and dup rounded, which the gate and up
// projections' products take instead of rounding them again; and where
// their LoRA backward takes the roundings too (roundedLoRA), or they have
// no LoRA update, it writes only the roundings. Where the pass holds dact
// as bfloat16 only (w.dactbf: Model.dactRounded), the down projection's
// backward writes it so and the gated backward reads it so (downDX).
// xBF, when not nil (x then nil), is the input x given as its bfloat16
// rounding only, where inputBF16 holds (backwardMany).
func (m *MLP) Backward(be kernels.Backend, dx, dout []float32, doutBF []uint16, s *mlpActs, x []float32, xBF []uint16, w *work, N int, lr *[numModules]*LoRA) {
	NI := N * m.Gate.Out
	var dact []float32
	var dactBF []uint16
	if w.dactbf != nil {
		dactBF = w.dactbf[:NI:NI]
	} else {
		dact = w.dact[:NI]
	}
	var dgate, dup []float32
	if w.dgate != nil {
		dgate, dup = w.dgate[:NI], w.dup[:NI]
	}
	var dgateBF, dupBF []uint16
	if len(w.dgbf) > 0 && m.Gate.Weight.BF16 != nil && m.Up.Weight.BF16 != nil {
		bf := unsafe.Slice((*uint16)(unsafe.Pointer(&w.dgbf[0])), 2*len(w.dgbf))
		dgateBF, dupBF = bf[:NI:NI], bf[NI:2*NI:2*NI]
	}
	gu, gl := []*Linear{&m.Gate, &m.Up}, []*LoRA{lr[ModGate], lr[ModUp]}
	if dgateBF != nil && dx != nil && (gl[0] == nil && gl[1] == nil || roundedLoRA(be, gu, gl, N)) {
		// Every reader of dgate and dup takes their roundings (the base
		// products, and the LoRA backward where there is one): the gated
		// backward writes no float32 copy.
		dgate, dup = nil, nil
	} else if dgate == nil {
		panic("model: MLP.Backward needs float32 dgate and dup, which the pass did not allocate (Model.gatedGradsRounded)")
	}
	if dactBF != nil && dgateBF == nil {
		panic("model: MLP.Backward has dact as bfloat16 only (Model.dactRounded), which only the rounded gated backward reads")
	}
	if down := lr[ModDown]; down != nil {
		// Only the down projection's LoRA gradient DA reads its input act,
		// which the gated backward writes on the way: DA comes last.
		g := m.Down.loraG(be, dout, s.u[2], w.lg, N, down)
		m.downDX(be, dact, dactBF, g, dout, doutBF, N, down)
		if s.gateBF != nil {
			// gate and up held as bfloat16 (Model.gateUpHeld): the fused
			// gated backward reading them so.
			if _, ok := m.fusedBackward(be, down); !ok || dgate != nil {
				panic("model: MLP.Backward holds gate and up as bfloat16, which only the fused gated backward reads (Model.gateUpHeld)")
			}
			be.(kernels.GateUpRounder).GatedLoRABackwardBF16(dgateBF, dupBF, down.DA, g, dact, dactBF, s.gateBF, s.upBF, N, m.Gate.Out, down.R, m.GELU)
		} else if f, ok := m.fusedBackward(be, down); ok && dgate == nil {
			// The gated backward adds the DA product on act's and g's
			// roundings itself (kernels.GatedLoRABackwarder), act not
			// written at all: 0.62 GB a 7B layer less again
			// (TestStepTraffic7B). DA's sums run in the backend's order.
			f.GatedLoRABackwardRounded(dgateBF, dupBF, down.DA, g, dact, dactBF, s.gate, s.up, N, m.Gate.Out, down.R, m.GELU)
		} else if dgateBF != nil && roundsLoRAInput(be) {
			// act as bfloat16 only, in w.act's memory, for a DA product
			// on bfloat16 operands (kernels.LoRAInputRounder): 0.62 GB a
			// 7B layer less written and read (TestStepTraffic7B).
			actBF := bf16s(w.act, NI)
			m.gluBackward(be, dgate, dup, nil, actBF, dgateBF, dupBF, dact, dactBF, s.gate, s.up)
			be.(kernels.LoRAInputRounder).MatmulBF16(down.DA, g, nil, nil, actBF, down.R, m.Down.In, N, true, false, 1)
		} else {
			act := w.act[:NI]
			m.gluBackward(be, dgate, dup, act, nil, dgateBF, dupBF, dact, dactBF, s.gate, s.up)
			m.Down.loraDA(be, g, act, N, down)
		}
	} else {
		m.downDX(be, dact, dactBF, nil, dout, doutBF, N, nil)
		m.gluBackward(be, dgate, dup, nil, nil, dgateBF, dupBF, dact, dactBF, s.gate, s.up)
	}
	var doutBFs [][]uint16
	if dgateBF != nil {
		doutBFs = [][]uint16{dgateBF, dupBF}
	}
	backwardMany(be, gu, dx, [][]float32{dgate, dup}, doutBFs, x, xBF, [][]float32{s.u[0], s.u[1]}, w.lg, N, gl)
}

// inputBF16 reports whether Backward may take its input x as bfloat16
// only (normInputBF16 of gate and up).
func (m *MLP) inputBF16(be kernels.Backend, N int, lr *[numModules]*LoRA) bool {
	return normInputBF16(be, []*Linear{&m.Gate, &m.Up}, []*LoRA{lr[ModGate], lr[ModUp]}, N)
}

// downDX writes the down projection's input gradient dact [N, I] (its
// contents ignored): dout·W, plus g·A with the LoRA update down (g from
// loraG; Linear.Backward's dx with set). With dactBF instead of dact
// (kernels.DinpRounder), it is written as bfloat16 only: the rank-r
// product g·A first, on g's and A's roundings, stored rounded
// (MatmulBF16To, beta 0), then the base product adding onto it
// (LinearBackwardBF16To, beta 1), its float32 sum rounded once more.
// doutBF, dout's rounding, when given, is what the base product takes
// either way (LinearBackwardBF16Rounded, LinearBackwardBF16ToRounded):
// the same bits.
// That order rounds the small LoRA term to its own bfloat16 precision,
// not to the base product's. It moves bits against the float32 dact: the
// micro models' LoRA gradients by at most 0.7% of their largest
// (TestDactRoundedCUDAEmulated), the goldens' within their bf16-compute
// bound (TestBF16ComputeCUDAEmulated).
func (m *MLP) downDX(be kernels.Backend, dact []float32, dactBF []uint16, g, dout []float32, doutBF []uint16, N int, down *LoRA) {
	if dactBF == nil {
		if down == nil {
			m.Down.backward(be, dact, dout, doutBF, nil, nil, nil, N, nil, true)
			return
		}
		m.Down.loraDX(be, dact, g, dout, doutBF, nil, N, down, true)
		return
	}
	r := be.(kernels.DinpRounder)
	var beta float32
	if down != nil {
		r.MatmulBF16To(dactBF, g, nil, down.A, nil, N, m.Down.In, down.R, false, false, 0) // dact = g·A
		beta = 1
	}
	if doutBF != nil { // dout's rounding, made by the norm backward that wrote dout (Block.backward)
		r.LinearBackwardBF16ToRounded(dactBF, doutBF, m.Down.Weight.BF16, N, m.Down.In, m.Down.Out, beta) // dact += dout·W
		return
	}
	r.LinearBackwardBF16To(dactBF, dout, m.Down.Weight.BF16, N, m.Down.In, m.Down.Out, beta) // dact += dout·W
}

// gluBackward writes dgate and dup (not accumulated) and, unless act is
// nil, the forward's act = a(gate)·up: kernels.GatedSetter's, so that on
// kernels/cuda no pass zeroes the two [N, I] gradients, the kernel does
// not read them, and act costs no pass of its own. With dgateBF (and
// dupBF) it writes their bfloat16 roundings too (kernels.DoutRounder),
// and then dgate and dup may be nil (the roundings only), actBF, when
// not nil, receives act's rounding (act may then be nil), and dact may
// be given as bfloat16 only (dactBF, dact nil).
func (m *MLP) gluBackward(be kernels.Backend, dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dact []float32, dactBF []uint16, gate, up []float32) {
	if dgateBF != nil {
		r := be.(kernels.DoutRounder)
		n := len(dact) + len(dactBF)
		if m.GELU {
			r.GeGLUBackwardSetRounded(dgate, dup, act, actBF, dgateBF, dupBF, dact, dactBF, gate, up, n)
			return
		}
		r.SwiGLUBackwardSetRounded(dgate, dup, act, actBF, dgateBF, dupBF, dact, dactBF, gate, up, n)
		return
	}
	if m.GELU {
		kernels.GeGLUBackwardSet(be, dgate, dup, act, dact, gate, up, len(dact))
		return
	}
	kernels.SwiGLUBackwardSet(be, dgate, dup, act, dact, gate, up, len(dact))
}

// roundsLoRAInput reports whether be's LoRA products may take their
// activation operand as its bfloat16 rounding (a kernels.LoRAInputRounder
// whose RoundsLoRAInput holds: kernels/cuda's bf16 precision). MLP.Backward
// then has the gated backward rewrite act as bfloat16 only and computes
// the down projection's DA from it. It moves bits: DA from act's and g's
// roundings.
func roundsLoRAInput(be kernels.Backend) bool {
	r, ok := be.(kernels.LoRAInputRounder)
	return ok && r.RoundsLoRAInput()
}
