package model

import (
	"fmt"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/hugepage"
)

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

// linearBackward accumulates dinp [N, C] += dout [N, OC]·W. doutBF, when
// not nil, is dout rounded to bfloat16 by a kernels.DoutRounder whose
// RoundsLinearDout holds (the MLP's gated backward writes it): with
// bfloat16 weights the product takes it instead of rounding dout again,
// the same bits.
func (w *Matrix) linearBackward(be kernels.Backend, dinp, dout []float32, doutBF []uint16, inp []float32, N, C, OC int) {
	if w.BF16 != nil {
		if doutBF != nil {
			be.(kernels.DoutRounder).LinearBackwardBF16Rounded(dinp, doutBF, w.BF16, N, C, OC)
			return
		}
		be.LinearBackwardBF16(dinp, dout, w.BF16, N, C, OC)
		return
	}
	be.LinearBackward(dinp, nil, nil, dout, inp, w.F32, N, C, OC)
}

// float32s returns the values as float32 in be's memory (a copy when
// stored as bfloat16, which the caller frees with kernels.FreeF32; free
// reports whether it must).
func (w *Matrix) float32s(be kernels.Backend) (f []float32, free bool, err error) {
	if w.BF16 == nil {
		return w.F32, false, nil
	}
	if f, err = kernels.AllocF32(be, len(w.BF16)); err != nil {
		return nil, false, fmt.Errorf("model: allocating %d float32 values on %s: %w", len(w.BF16), be.Name(), err)
	}
	kernels.FromBF16(f, w.BF16)
	return f, true, nil
}

// ToBF16 converts the projection, embedding and lm_head matrices to
// bfloat16 in place (norm weights and biases stay float32). Results change
// by the rounding of the weights; loading a bf16 checkpoint and converting
// loses nothing. The float32 matrices' memory is freed.
func (m *Model) ToBF16() error {
	if m.Embed.BF16 != nil {
		return nil // already converted: all matrices share one precision
	}
	kernels.Synchronize(m.be) // the host reads the float32 matrices
	var f32 [][]float32
	m.eachMatrix(func(w *Matrix, _ int) { f32 = append(f32, w.F32) })
	old := m.matF32
	if err := m.allocMatrices(true); err != nil {
		return err
	}
	i := 0
	m.eachMatrix(func(w *Matrix, _ int) {
		kernels.ToBF16(w.BF16, f32[i])
		i++
	})
	kernels.FreeF32(m.be, old)
	m.matF32 = nil
	return nil
}

// eachMatrix calls f with every weight matrix of the model and its number
// of elements: the embedding, the lm_head when not tied, then each layer's
// seven projections.
func (m *Model) eachMatrix(f func(w *Matrix, n int)) {
	VC := m.Config.Vocab * m.Config.Hidden
	f(&m.Embed, VC)
	if !m.Config.TieEmbeddings {
		f(&m.Head, VC)
	}
	for i := range m.Blocks {
		b := &m.Blocks[i]
		for _, l := range []*Linear{&b.Attn.Q, &b.Attn.K, &b.Attn.V, &b.Attn.O, &b.MLP.Gate, &b.MLP.Up, &b.MLP.Down} {
			f(&l.Weight, l.Out*l.In)
		}
	}
}

// matrixAlign is the element alignment of each matrix inside the slab:
// whole cache lines in either precision (256 bytes in float32, 128 in
// bfloat16).
const matrixAlign = 64

// padded is n rounded up to matrixAlign: a matrix's share of the slab.
func padded(n int) int { return (n + matrixAlign - 1) &^ (matrixAlign - 1) }

// allocMatrices gives every weight matrix fresh zeroed memory, float32 or
// bfloat16, carved from one allocation of the backend's (kernels.AllocF32)
// that, on a host backend, is advised onto huge pages before it is first
// touched (see kernels/hugepage). Decode reads every matrix once per token;
// in paired runs on the 2-vCPU benchmark machine (two Qwen2.5-0.5B-shaped
// models in one process, decode rounds taking turns), huge pages made
// batch-1 decode with float32 weights 3-7% faster (medians of four runs)
// and left bf16 within noise (0.98-1.02). One slab rather than one
// allocation per matrix also puts the small k/v matrices on huge pages. The
// previous memory of each matrix is dropped (the caller frees it).
func (m *Model) allocMatrices(bf16 bool) error {
	total := 0
	m.eachMatrix(func(_ *Matrix, n int) { total += padded(n) })
	_, device := m.be.(kernels.Allocator)
	var f32 []float32
	var b16 []uint16
	var err error
	if bf16 {
		if b16, err = kernels.AllocBF16(m.be, total); err != nil {
			return fmt.Errorf("model: allocating %d bfloat16 weights on %s: %w", total, m.be.Name(), err)
		}
		if !device {
			hugepage.Uint16s(b16)
		}
		m.matBF16 = b16
	} else {
		if f32, err = kernels.AllocF32(m.be, total); err != nil {
			return fmt.Errorf("model: allocating %d float32 weights on %s: %w", total, m.be.Name(), err)
		}
		if !device {
			hugepage.Float32s(f32)
		}
		m.matF32 = f32
	}
	off := 0
	m.eachMatrix(func(w *Matrix, n int) {
		if bf16 {
			*w = Matrix{BF16: b16[off : off+n : off+n]}
		} else {
			*w = Matrix{F32: f32[off : off+n : off+n]}
		}
		off += padded(n)
	})
	if m.Config.TieEmbeddings {
		m.Head = m.Embed
	}
	return nil
}
