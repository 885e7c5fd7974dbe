package model

import "github.com/hone-rl/hone/kernels"

// Block is one decoder layer (pre-norm):
//
//	x2   = x  + Attn(RMSNorm(x;  InputNorm))
//	xout = x2 + MLP(RMSNorm(x2; PostNorm))
type Block struct {
	InputNorm []float32 `hf:"input_layernorm.weight"` // [C]
	Attn      Attention `hf:"self_attn"`
	PostNorm  []float32 `hf:"post_attention_layernorm.weight"` // [C]
	MLP       MLP       `hf:"mlp"`

	C   int
	Eps float32
}

// blockActs are the activations Block.Backward needs (x is the block's input,
// owned by the caller). The normed inputs of attention and MLP are not kept:
// Backward recomputes them from x, x2 and the norm weights (a cheap row
// pass), saving two [N, C] tensors per layer.
type blockActs struct {
	rstd1 []float32 // [N]
	attn  *attnActs
	x2    []float32 // [N, C] residual stream after attention
	rstd2 []float32 // [N]
	mlp   *mlpActs
}

func (b *Block) newActs(ar *arena, N int, lr *[numModules]*LoRA) *blockActs {
	return &blockActs{
		rstd1: ar.take(N),
		attn:  b.Attn.newActs(ar, N, lr),
		x2:    ar.take(N * b.C),
		rstd2: ar.take(N),
		mlp:   b.MLP.newActs(ar, N, lr),
	}
}

// fitLoRA sizes the LoRA scratch of s for layer lr, so one blockActs can be
// reused across layers whose adapted modules or ranks differ.
func (s *blockActs) fitLoRA(N int, lr *[numModules]*LoRA) {
	fit := func(u *[]float32, l *LoRA) {
		switch {
		case l == nil:
			*u = nil
		case len(*u) != N*l.R:
			*u = make([]float32, N*l.R)
		}
	}
	for m := ModQ; m <= ModO; m++ {
		fit(&s.attn.u[m], lr[m])
	}
	for i, m := range [3]Module{ModGate, ModUp, ModDown} {
		fit(&s.mlp.u[i], lr[m])
	}
}

// Forward writes xout [N, C] (which must not alias x) from x [N, C]; w.h and
// w.act are scratch.
func (b *Block) Forward(be kernels.Backend, xout []float32, s *blockActs, x []float32, w *work, g *geometry, layer int, lr *[numModules]*LoRA) error {
	N, C := g.N, b.C
	h := w.h[:N*C]
	be.RMSNormForward(h, s.rstd1, x, b.InputNorm, N, C, b.Eps)
	if err := b.Attn.Forward(be, s.x2, s.attn, h, g, layer, lr); err != nil {
		return err
	}
	be.Add(s.x2, s.x2, x, N*C)
	be.RMSNormForward(h, s.rstd2, s.x2, b.PostNorm, N, C, b.Eps)
	b.MLP.Forward(be, xout, s.mlp, h, w.act, N, lr)
	be.Add(xout, xout, s.x2, N*C)
	return nil
}

// Backward accumulates dx [N, C] += (∂xout/∂x)ᵀ·dxout and the LoRA gradients.
func (b *Block) Backward(be kernels.Backend, dx, dxout []float32, s *blockActs, x []float32, w *work, g *geometry, lr *[numModules]*LoRA) {
	N, C := g.N, b.C
	h, dx2, dh := w.h[:N*C], w.dx2[:N*C], w.dh[:N*C]
	copy(dx2, dxout) // residual
	clear(dh)
	be.RMSNormForward(h, s.rstd2, s.x2, b.PostNorm, N, C, b.Eps) // the MLP's input again
	b.MLP.Backward(be, dh, dxout, s.mlp, h, w, N, lr)
	be.RMSNormBackward(dx2, nil, dh, s.rstd2, s.x2, b.PostNorm, N, C)

	be.AXPY(dx, dx2, 1, N*C) // residual
	clear(dh)
	be.RMSNormForward(h, s.rstd1, x, b.InputNorm, N, C, b.Eps) // the attention's input again
	b.Attn.Backward(be, dh, dx2, s.attn, h, w, g, lr)
	be.RMSNormBackward(dx, nil, dh, s.rstd1, x, b.InputNorm, N, C)
}
