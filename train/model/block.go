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
// owned by the caller).
type blockActs struct {
	h1, rstd1 []float32 // [N, C], [N]
	attn      *attnActs
	x2        []float32 // [N, C] residual stream after attention
	h2, rstd2 []float32 // [N, C], [N]
	mlp       *mlpActs
}

func (b *Block) newActs(N int, lr *[numModules]*LoRA) *blockActs {
	return &blockActs{
		h1: make([]float32, N*b.C), rstd1: make([]float32, N),
		attn: b.Attn.newActs(N, lr),
		x2:   make([]float32, N*b.C),
		h2:   make([]float32, N*b.C), rstd2: make([]float32, N),
		mlp: b.MLP.newActs(N, lr),
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

// Forward writes xout [N, C] (which must not alias x) from x [N, C].
func (b *Block) Forward(be kernels.Backend, xout []float32, s *blockActs, x []float32, g *geometry, layer int, lr *[numModules]*LoRA) error {
	N, C := g.N, b.C
	be.RMSNormForward(s.h1, s.rstd1, x, b.InputNorm, N, C, b.Eps)
	if err := b.Attn.Forward(be, s.x2, s.attn, s.h1, g, layer, lr); err != nil {
		return err
	}
	be.Add(s.x2, s.x2, x, N*C)
	be.RMSNormForward(s.h2, s.rstd2, s.x2, b.PostNorm, N, C, b.Eps)
	b.MLP.Forward(be, xout, s.mlp, s.h2, N, lr)
	be.Add(xout, xout, s.x2, N*C)
	return nil
}

// Backward accumulates dx [N, C] += (∂xout/∂x)ᵀ·dxout and the LoRA gradients.
func (b *Block) Backward(be kernels.Backend, dx, dxout []float32, s *blockActs, x []float32, g *geometry, lr *[numModules]*LoRA) {
	N, C := g.N, b.C
	dx2 := make([]float32, N*C)
	copy(dx2, dxout) // residual
	dh2 := make([]float32, N*C)
	b.MLP.Backward(be, dh2, dxout, s.mlp, s.h2, N, lr)
	be.RMSNormBackward(dx2, nil, dh2, s.rstd2, s.x2, b.PostNorm, N, C)

	be.AXPY(dx, dx2, 1, N*C) // residual
	dh1 := make([]float32, N*C)
	b.Attn.Backward(be, dh1, dx2, s.attn, s.h1, g, lr)
	be.RMSNormBackward(dx, nil, dh1, s.rstd1, x, b.InputNorm, N, C)
}
