package model

import "github.com/hone-rl/hone/kernels"

// Block is one decoder layer (pre-norm):
//
//	x2   = x  + Attn(RMSNorm(x;  InputNorm))
//	xout = x2 + MLP(RMSNorm(x2; PostNorm))
//
// or, with PreFFNorm and PostFFNorm (Gemma 3's sandwich norms):
//
//	x2   = x  + RMSNorm(Attn(RMSNorm(x; InputNorm)); PostNorm)
//	xout = x2 + RMSNorm(MLP(RMSNorm(x2; PreFFNorm)); PostFFNorm)
//
// With NormOffset every norm multiplies by 1+w instead of w.
type Block struct {
	InputNorm  []float32 `hf:"input_layernorm.weight"` // [C]
	Attn       Attention `hf:"self_attn"`
	PostNorm   []float32 `hf:"post_attention_layernorm.weight"`            // [C]
	PreFFNorm  []float32 `hf:"pre_feedforward_layernorm.weight,optional"`  // [C], Gemma 3 only
	PostFFNorm []float32 `hf:"post_feedforward_layernorm.weight,optional"` // [C], Gemma 3 only
	MLP        MLP       `hf:"mlp"`

	C          int
	Eps        float32
	NormOffset bool
}

// sandwich reports whether the block has Gemma 3's four norms.
func (b *Block) sandwich() bool { return b.PreFFNorm != nil }

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

	// Sandwich norms only: the attention and MLP outputs before their
	// post-norms, and those norms' statistics.
	ao, mo       []float32 // [N, C]
	rstdA, rstdM []float32 // [N]
	// NormOffset only: 1+w of InputNorm, PostNorm, PreFFNorm, PostFFNorm.
	nw [4][]float32 // [C] each
	// lora holds the LoRA activations' memory, [N, R] at the ranks the
	// slot was carved for; fitLoRA points attn.u and mlp.u into it.
	lora [numModules][]float32
}

// norms returns the weights the block's norms multiply by (input, post-
// attention, pre- and post-feed-forward; the last two nil without sandwich
// norms), computing 1+w into s under NormOffset.
func (b *Block) norms(be kernels.Backend, s *blockActs) (in, post, preFF, postFF []float32) {
	ws := [4][]float32{b.InputNorm, b.PostNorm, b.PreFFNorm, b.PostFFNorm}
	var out [4][]float32
	for i, w := range ws {
		if w != nil {
			out[i] = normWeight(be, s.nw[i], w, b.NormOffset)
		}
	}
	return out[0], out[1], out[2], out[3]
}

// newActs lays out a slot for LoRA ranks r (per module, 0: not adapted):
// one layer's ranks, or the largest of every layer's for a slot that
// fitLoRA refits per layer; the MLP's gate and up as bfloat16 only where
// gateUpBF16 (Model.gateUpHeld).
func (b *Block) newActs(ar *arena, N int, r ranks, gateUpBF16 bool) *blockActs {
	s := &blockActs{
		rstd1: ar.take(N),
		attn:  b.Attn.newActs(ar, N, &r),
		x2:    ar.take(N * b.C),
		rstd2: ar.take(N),
		mlp:   b.MLP.newActs(ar, N, &r, gateUpBF16),
	}
	for m := ModQ; m <= ModO; m++ {
		s.lora[m] = s.attn.u[m]
	}
	for i, m := range [3]Module{ModGate, ModUp, ModDown} {
		s.lora[m] = s.mlp.u[i]
	}
	if b.sandwich() {
		s.ao, s.mo = ar.take(N*b.C), ar.take(N*b.C)
		s.rstdA, s.rstdM = ar.take(N), ar.take(N)
	}
	if b.NormOffset {
		for i := range s.nw {
			s.nw[i] = ar.take(b.C)
		}
	}
	return s
}

// fitLoRA sizes the LoRA activations of s for layer lr, so one blockActs
// can be reused across layers whose adapted modules or ranks differ: each
// is a prefix of the memory carved at the largest rank (newActs).
func (s *blockActs) fitLoRA(N int, lr *[numModules]*LoRA) {
	fit := func(u *[]float32, m Module) {
		if lr[m] == nil {
			*u = nil
			return
		}
		*u = s.lora[m][:N*lr[m].R]
	}
	for m := ModQ; m <= ModO; m++ {
		fit(&s.attn.u[m], m)
	}
	for i, m := range [3]Module{ModGate, ModUp, ModDown} {
		fit(&s.mlp.u[i], m)
	}
}

// Forward writes xout [N, C] (which must not alias x) from x [N, C]; w.h and
// w.act are scratch, and w.xbf where the pass has it (newWork): there the
// norms and the MLP's gated unit also write the bfloat16 rounding of their
// output, which the products that follow take instead of rounding it again
// (kernels.InputRounder).
func (b *Block) Forward(be kernels.Backend, xout []float32, s *blockActs, x []float32, w *work, g *geometry, layer int, lr *[numModules]*LoRA) error {
	_, err := b.forward(be, xout, s, x, nil, w, g, layer, lr, false)
	return err
}

// forward is Forward in a chain of blocks whose residual adds go into the
// norms that read their sums (kernels.ResidualNormer). res, when not nil,
// is the residual the previous block left for this one: the input norm
// adds it into x in place (x then holds the block's input as Forward
// takes it, which the backward reads) and normalises the sum in one pass.
// With leave on a kernels.ResidualNormer, the block leaves out its own
// last add: xout holds the sub-layer's output alone and forward returns
// the residual (s.x2) for the next op, the next block's forward or the
// final norm (Model.finalNormAdd), to add; s.x2 is not written again
// before that block's first op reads it, even where the blocks share one
// slot. Otherwise it returns nil, xout complete. The bits are Forward's
// either way: on the 7B step each layer's add after the MLP no longer
// reads the sum back (1 launch and 0.12 GB a layer; TestStepTraffic7B).
func (b *Block) forward(be kernels.Backend, xout []float32, s *blockActs, x, res []float32, w *work, g *geometry, layer int, lr *[numModules]*LoRA, leave bool) ([]float32, error) {
	_, fuses := be.(kernels.ResidualNormer)
	leave = leave && fuses
	if b.sandwich() {
		return b.forwardSandwich(be, xout, s, x, res, w, g, layer, lr, leave)
	}
	N, C := g.N, b.C
	in, post, _, _ := b.norms(be, s)
	h, hBF := w.h[:N*C], w.bf(N*C)
	b.inputNorm(be, h, s.rstd1, hBF, x, res, in, N)
	if err := b.Attn.Forward(be, s.x2, s.attn, h, hBF, g, layer, lr); err != nil {
		return nil, err
	}
	b.addNormRounded(be, h, s.rstd2, hBF, s.x2, x, post, N)
	b.MLP.Forward(be, xout, s.mlp, h, hBF, w.act, w.bf(N*b.MLP.Gate.Out), N, lr)
	if leave {
		return s.x2, nil
	}
	be.Add(xout, xout, s.x2, N*C)
	return nil, nil
}

// inputNorm is the block's input norm of x, after adding res into x when
// res is not nil (forward's residual left by the previous block).
func (b *Block) inputNorm(be kernels.Backend, out, rstd []float32, outBF []uint16, x, res, weight []float32, N int) {
	if res != nil {
		b.addNormRounded(be, out, rstd, outBF, x, res, weight, N)
		return
	}
	b.normRounded(be, out, rstd, outBF, x, weight, N)
}

// normRounded is RMSNormForward over N rows of the block's width, writing
// also out's bfloat16 rounding into outBF unless that is nil
// (kernels.InputRounder).
func (b *Block) normRounded(be kernels.Backend, out, rstd []float32, outBF []uint16, inp, weight []float32, N int) {
	if outBF != nil {
		be.(kernels.InputRounder).RMSNormForwardRounded(out, rstd, outBF, inp, weight, N, b.C, b.Eps)
		return
	}
	be.RMSNormForward(out, rstd, inp, weight, N, b.C, b.Eps)
}

// addNormRounded adds res into the residual stream x2 [N, C] and then
// normalises x2 as normRounded does, in one pass on a
// kernels.ResidualNormer (kernels/cuda: x2 is not read back after it is
// written), the same bits as the two ops.
func (b *Block) addNormRounded(be kernels.Backend, out, rstd []float32, outBF []uint16, x2, res, weight []float32, N int) {
	if r, ok := be.(kernels.ResidualNormer); ok {
		r.AddRMSNormForward(x2, out, rstd, outBF, x2, res, weight, N, b.C, b.Eps)
		return
	}
	be.Add(x2, x2, res, N*b.C)
	b.normRounded(be, out, rstd, outBF, x2, weight, N)
}

// Backward turns dx [N, C] from the gradient of xout into that of x,
// (∂xout/∂x)ᵀ·dx, in place, and accumulates the LoRA gradients. The
// residual stream needs no copy of its own: dx, on the way, is the
// gradient of x2, which the attention's backward reads (as its dout)
// before the input norm's backward adds to it.
func (b *Block) Backward(be kernels.Backend, dx []float32, s *blockActs, x []float32, w *work, g *geometry, lr *[numModules]*LoRA) {
	b.backward(be, dx, nil, s, x, w, g, lr, false)
}

// backward is Backward in a chain of blocks that hand each other the
// bfloat16 rounding of dx (kernels.NormDoutRounder, into w.dxbf): dxBF,
// when not nil, is the rounding of the dx given, which the down
// projection's base product takes for its dout instead of rounding dx
// itself (the same bits); with round, where w.dxbf is allocated, the
// input norm's backward writes the rounding of the dx it leaves into
// w.dxbf, which backward returns for the block below (else nil). On the
// 7B step that is 117 MB and a launch a layer (TestStepTraffic7B).
func (b *Block) backward(be kernels.Backend, dx []float32, dxBF []uint16, s *blockActs, x []float32, w *work, g *geometry, lr *[numModules]*LoRA, round bool) []uint16 {
	if b.sandwich() {
		b.backwardSandwich(be, dx, s, x, w, g, lr)
		return nil
	}
	N, C := g.N, b.C
	in, post, _, _ := b.norms(be, s)
	dh := w.dh[:N*C]
	h, hBF := b.normAgain(be, w, s.rstd2, s.x2, post, N, b.MLP.inputBF16(be, N, lr)) // the MLP's input again
	b.MLP.Backward(be, dh, dx, dxBF, s.mlp, h, hBF, w, N, lr)
	doBF := b.postNormBackward(be, dx, dh, s.rstd2, s.x2, post, w, N) // dx: the gradient of x2

	h, hBF = b.normAgain(be, w, s.rstd1, x, in, N, b.Attn.inputBF16(be, N, lr)) // the attention's input again
	b.Attn.Backward(be, dh, dx, doBF, s.attn, h, hBF, w, g, lr)
	if round && w.dxbf != nil {
		be.(kernels.NormDoutRounder).RMSNormBackwardRounded(dx, nil, w.dxbf, dh, s.rstd1, x, in, N, C)
		return w.dxbf
	}
	be.RMSNormBackward(dx, nil, dh, s.rstd1, x, in, N, C)
	return nil
}

// postNormBackward is the post-attention norm's backward, accumulating
// into dx (the gradient of x2 then) from dh, and, where the pass hands
// dx's bfloat16 rounding along (w.dxbf, spent by the MLP's down
// projection by now) and the o projection's weights are bfloat16, writing
// that rounding on the way for o's base product: returned, else nil. The
// product then does not read the float32 dx again to round it (117 MB and
// a launch a 7B layer; TestStepTraffic7B), the same bits.
func (b *Block) postNormBackward(be kernels.Backend, dx, dh, rstd, inp, weight []float32, w *work, N int) []uint16 {
	if w.dxbf == nil || b.Attn.O.Weight.BF16 == nil {
		be.RMSNormBackward(dx, nil, dh, rstd, inp, weight, N, b.C)
		return nil
	}
	be.(kernels.NormDoutRounder).RMSNormBackwardRounded(dx, nil, w.dxbf, dh, rstd, inp, weight, N, b.C)
	return w.dxbf
}

// normAgain recomputes a sub-layer's normed input [N, C] (the norm with
// weight of inp; rstd rewritten with the forward's values) for its
// backward, into w.h's memory: as float32 h, or, with bf, as its bfloat16
// rounding hBF only (kernels.NormInputRounder's RMSNormForwardBF16), for
// a sub-layer whose backward reads it only so (the inputBF16 of MLP and
// Attention: the LoRA DA products of gate, up or of q, k, v, which then
// multiply its rounding). The other of h and hBF is nil. On the 7B shape
// the bfloat16 h is 0.06 GB less written and 0.06 GB less read, twice a
// layer (TestStepTraffic7B); it moves the bits of those LoRA gradients.
func (b *Block) normAgain(be kernels.Backend, w *work, rstd, inp, weight []float32, N int, bf bool) (h []float32, hBF []uint16) {
	if bf {
		hBF = bf16s(w.h, N*b.C)
		be.(kernels.NormInputRounder).RMSNormForwardBF16(hBF, rstd, inp, weight, N, b.C, b.Eps)
		return nil, hBF
	}
	h = w.h[:N*b.C]
	be.RMSNormForward(h, rstd, inp, weight, N, b.C, b.Eps)
	return h, nil
}

// forwardSandwich is forward with Gemma 3's four norms.
func (b *Block) forwardSandwich(be kernels.Backend, xout []float32, s *blockActs, x, res []float32, w *work, g *geometry, layer int, lr *[numModules]*LoRA, leave bool) ([]float32, error) {
	N, C := g.N, b.C
	in, post, preFF, postFF := b.norms(be, s)
	h, hBF := w.h[:N*C], w.bf(N*C)
	b.inputNorm(be, h, s.rstd1, hBF, x, res, in, N)
	if err := b.Attn.Forward(be, s.ao, s.attn, h, hBF, g, layer, lr); err != nil {
		return nil, err
	}
	be.RMSNormForward(s.x2, s.rstdA, s.ao, post, N, C, b.Eps)
	b.addNormRounded(be, h, s.rstd2, hBF, s.x2, x, preFF, N)
	b.MLP.Forward(be, s.mo, s.mlp, h, hBF, w.act, w.bf(N*b.MLP.Gate.Out), N, lr)
	be.RMSNormForward(xout, s.rstdM, s.mo, postFF, N, C, b.Eps)
	if leave {
		return s.x2, nil
	}
	be.Add(xout, xout, s.x2, N*C)
	return nil, nil
}

// backwardSandwich is Backward with Gemma 3's four norms; w.dn is the
// gradient of a sub-layer's output before its post-norm.
func (b *Block) backwardSandwich(be kernels.Backend, dx []float32, s *blockActs, x []float32, w *work, g *geometry, lr *[numModules]*LoRA) {
	N, C := g.N, b.C
	in, post, preFF, postFF := b.norms(be, s)
	dh, dn := w.dh[:N*C], w.dn[:N*C]
	be.Zero(dn, N*C)
	be.RMSNormBackward(dn, nil, dx, s.rstdM, s.mo, postFF, N, C)
	h, hBF := b.normAgain(be, w, s.rstd2, s.x2, preFF, N, b.MLP.inputBF16(be, N, lr)) // the MLP's input again
	b.MLP.Backward(be, dh, dn, nil, s.mlp, h, hBF, w, N, lr)
	be.RMSNormBackward(dx, nil, dh, s.rstd2, s.x2, preFF, N, C) // dx: the gradient of x2

	be.Zero(dn, N*C)
	be.RMSNormBackward(dn, nil, dx, s.rstdA, s.ao, post, N, C)
	h, hBF = b.normAgain(be, w, s.rstd1, x, in, N, b.Attn.inputBF16(be, N, lr)) // the attention's input again
	b.Attn.Backward(be, dh, dn, nil, s.attn, h, hBF, w, g, lr)
	be.RMSNormBackward(dx, nil, dh, s.rstd1, x, in, N, C)
}
