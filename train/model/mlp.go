package model

import "github.com/hone-rl/hone/kernels"

// MLP is the gated feed-forward down(act(gate(x))·up(x)): SwiGLU (act =
// silu), or Gemma's GeGLU when GELU is set (act = GELU, tanh approximation).
type MLP struct {
	Gate Linear `hf:"gate_proj"`
	Up   Linear `hf:"up_proj"`
	Down Linear `hf:"down_proj"`
	GELU bool
}

// glu writes act = a(gate)·up with the MLP's activation a.
func (m *MLP) glu(be kernels.Backend, act, gate, up []float32) {
	if m.GELU {
		be.GeGLUForward(act, gate, up, len(act))
		return
	}
	be.SwiGLUForward(act, gate, up, len(act))
}

// mlpActs are the activations MLP.Backward needs. The SwiGLU product is not
// among them: Backward recomputes it from gate and up (one cheap pass)
// instead of keeping a third [N, I] tensor per layer.
type mlpActs struct {
	gate, up []float32    // [N, I]
	u        [3][]float32 // [N,R] LoRA activations of gate, up, down
}

func (m *MLP) newActs(ar *arena, N int, r *ranks) *mlpActs {
	I := m.Gate.Out
	s := &mlpActs{gate: ar.take(N * I), up: ar.take(N * I)}
	for i, mod := range [3]Module{ModGate, ModUp, ModDown} {
		if r[mod] > 0 {
			s.u[i] = ar.take(N * r[mod])
		}
	}
	return s
}

// Forward writes out [N, C] for x [N, C] (the normed input); act [N, I] is
// scratch.
func (m *MLP) Forward(be kernels.Backend, out []float32, s *mlpActs, x, act []float32, N int, lr *[numModules]*LoRA) {
	forwardMany(be, []*Linear{&m.Gate, &m.Up}, [][]float32{s.gate, s.up}, [][]float32{s.u[0], s.u[1]}, x, N, []*LoRA{lr[ModGate], lr[ModUp]})
	m.glu(be, act[:N*m.Gate.Out], s.gate, s.up)
	m.Down.Forward(be, out, s.u[2], act, N, lr[ModDown])
}

// Backward writes dx [N, C] (its contents ignored) and accumulates the
// LoRA gradients given dout [N, C]. w supplies three [N, I] scratch
// buffers (w.act, w.dact, w.dup).
func (m *MLP) Backward(be kernels.Backend, dx, dout []float32, s *mlpActs, x []float32, w *work, N int, lr *[numModules]*LoRA) {
	NI := N * m.Gate.Out
	act, dact, dup := w.act[:NI], w.dact[:NI], w.dup[:NI]
	if lr[ModDown] != nil { // only the LoRA gradient DA reads the down projection's input
		m.glu(be, act, s.gate, s.up)
	}
	m.Down.Backward(be, dact, dout, act, s.u[2], w.lg, N, lr[ModDown], true)
	dgate := act // act is spent: reuse it for dgate
	// Written, not accumulated (kernels.GatedSetter): on kernels/cuda no
	// pass zeroes the two [N, I] buffers and the kernel does not read them.
	if m.GELU {
		kernels.GeGLUBackwardSet(be, dgate, dup, dact, s.gate, s.up, NI)
	} else {
		kernels.SwiGLUBackwardSet(be, dgate, dup, dact, s.gate, s.up, NI)
	}
	m.Gate.Backward(be, dx, dgate, x, s.u[0], w.lg, N, lr[ModGate], true)
	m.Up.Backward(be, dx, dup, x, s.u[1], w.lg, N, lr[ModUp], false)
}
