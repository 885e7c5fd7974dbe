package model

import "github.com/hone-rl/hone/kernels"

// Matrix is a frozen weight matrix held either as float32 or, after
// Model.ToBF16, as bfloat16 bits; exactly one of the two is set. bfloat16
// halves the memory and the bytes read per decoded token; the arithmetic
// stays float32 (the kernels widen each value as they read it).
type Matrix struct {
	F32  []float32 // row-major
	BF16 []uint16  // row-major bfloat16 bits
}

// linear computes out [N, OC] = inp [N, C]·Wᵀ + bias.
func (w *Matrix) linear(be kernels.Backend, out, inp, bias []float32, N, C, OC int) {
	if w.BF16 != nil {
		be.LinearForwardBF16(out, inp, w.BF16, bias, N, C, OC)
		return
	}
	be.LinearForward(out, inp, w.F32, bias, N, C, OC)
}

// linearBackward accumulates dinp [N, C] += dout [N, OC]·W.
func (w *Matrix) linearBackward(be kernels.Backend, dinp, dout, inp []float32, N, C, OC int) {
	if w.BF16 != nil {
		be.LinearBackwardBF16(dinp, dout, w.BF16, N, C, OC)
		return
	}
	be.LinearBackward(dinp, nil, nil, dout, inp, w.F32, N, C, OC)
}

// float32s returns the values as float32 (a copy when stored as bfloat16).
func (w *Matrix) float32s() []float32 {
	if w.BF16 != nil {
		f := make([]float32, len(w.BF16))
		kernels.FromBF16(f, w.BF16)
		return f
	}
	return w.F32
}

// toBF16 rounds the matrix to bfloat16 and drops the float32 copy.
func (w *Matrix) toBF16() {
	if w.BF16 != nil {
		return
	}
	w.BF16 = make([]uint16, len(w.F32))
	kernels.ToBF16(w.BF16, w.F32)
	w.F32 = nil
}

// ToBF16 converts the projection, embedding and lm_head matrices to
// bfloat16 in place (norm weights and biases stay float32). Results change
// by the rounding of the weights; loading a bf16 checkpoint and converting
// loses nothing.
func (m *Model) ToBF16() {
	for i := range m.Blocks {
		b := &m.Blocks[i]
		for _, l := range []*Linear{&b.Attn.Q, &b.Attn.K, &b.Attn.V, &b.Attn.O, &b.MLP.Gate, &b.MLP.Up, &b.MLP.Down} {
			l.Weight.toBF16()
		}
	}
	m.Embed.toBF16()
	if m.Config.TieEmbeddings {
		m.Head = m.Embed
	} else {
		m.Head.toBF16()
	}
}
