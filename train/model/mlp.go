package model

import "github.com/hone-rl/hone/kernels"

// MLP is the SwiGLU feed-forward: down(silu(gate(x))·up(x)).
type MLP struct {
	Gate Linear `hf:"gate_proj"`
	Up   Linear `hf:"up_proj"`
	Down Linear `hf:"down_proj"`
}

// mlpActs are the activations MLP.Backward needs.
type mlpActs struct {
	gate, up, act []float32    // [N, I]
	u             [3][]float32 // [N,R] LoRA activations of gate, up, down
}

func (m *MLP) newActs(N int, lr *[numModules]*LoRA) *mlpActs {
	I := m.Gate.Out
	s := &mlpActs{gate: make([]float32, N*I), up: make([]float32, N*I), act: make([]float32, N*I)}
	for i, mod := range [3]Module{ModGate, ModUp, ModDown} {
		if lr[mod] != nil {
			s.u[i] = make([]float32, N*lr[mod].R)
		}
	}
	return s
}

// Forward writes out [N, C] for x [N, C] (the normed input).
func (m *MLP) Forward(be kernels.Backend, out []float32, s *mlpActs, x []float32, N int, lr *[numModules]*LoRA) {
	m.Gate.Forward(be, s.gate, s.u[0], x, N, lr[ModGate])
	m.Up.Forward(be, s.up, s.u[1], x, N, lr[ModUp])
	be.SwiGLUForward(s.act, s.gate, s.up, N*m.Gate.Out)
	m.Down.Forward(be, out, s.u[2], s.act, N, lr[ModDown])
}

// Backward accumulates dx [N, C] and the LoRA gradients given dout [N, C].
func (m *MLP) Backward(be kernels.Backend, dx, dout []float32, s *mlpActs, x []float32, N int, lr *[numModules]*LoRA) {
	NI := N * m.Gate.Out
	dact := make([]float32, NI)
	m.Down.Backward(be, dact, dout, s.act, s.u[2], N, lr[ModDown])
	dgate, dup := make([]float32, NI), make([]float32, NI)
	be.SwiGLUBackward(dgate, dup, dact, s.gate, s.up, NI)
	m.Gate.Backward(be, dx, dgate, x, s.u[0], N, lr[ModGate])
	m.Up.Backward(be, dx, dup, x, s.u[1], N, lr[ModUp])
}
