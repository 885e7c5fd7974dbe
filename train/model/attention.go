package model

import (
	"fmt"
	"math"

	"github.com/hone-rl/hone/kernels"
)

// Attention is the self-attention of one block: q/k/v projections, the
// optional Qwen3 per-head norms, RoPE, causal grouped-query attention and the
// output projection.
type Attention struct {
	Q     Linear    `hf:"q_proj"`
	K     Linear    `hf:"k_proj"`
	V     Linear    `hf:"v_proj"`
	O     Linear    `hf:"o_proj"`
	QNorm []float32 `hf:"q_norm.weight,optional"` // [D], Qwen3 and Gemma 3
	KNorm []float32 `hf:"k_norm.weight,optional"` // [D], Qwen3 and Gemma 3

	H, KVH, D int
	Eps       float32
	InvFreq   []float32 // [D/2] RoPE inverse frequencies, shared by the blocks of one kind

	Scale      float32 // score scale; 0: 1/√D
	NormOffset bool    // the q/k norms multiply by 1+w (Gemma)
	Window     int     // > 0: a query sees only the last Window keys, itself included (Gemma's sliding layers)
}

// attnActs are the activations Attention.Backward needs. RoPE runs in place
// (qr aliases qn, kr aliases kn) and without the Qwen3 per-head norms qn
// aliases q and kn aliases k: the pre-RoPE projections are only needed as
// the norms' inputs.
type attnActs struct {
	q, k, v      []float32    // [N,H,D], [N,KVH,D], [N,KVH,D] projections
	qn, kn       []float32    // after the per-head norms (alias q, k without them)
	qrstd, krstd []float32    // [N·H], [N·KVH] norm statistics
	qr, kr       []float32    // [N,H,D], [N,KVH,D] after RoPE (alias qn, kn)
	out          []float32    // [N,H,D] attention output
	lse          []float32    // [N,H] log-sum-exp of the scores
	u            [4][]float32 // [N,R] LoRA activations of q, k, v, o
	qnw, knw     []float32    // [D] the q/k norms' 1+w (NormOffset only)
}

func (a *Attention) newActs(ar *arena, N int, r *ranks) *attnActs {
	qd, kvd := N*a.H*a.D, N*a.KVH*a.D
	s := &attnActs{
		q: ar.take(qd), k: ar.take(kvd), v: ar.take(kvd),
		out: ar.take(qd), lse: ar.take(N * a.H),
	}
	s.qn, s.kn = s.q, s.k
	if a.QNorm != nil {
		s.qn, s.kn = ar.take(qd), ar.take(kvd)
		s.qrstd, s.krstd = ar.take(N*a.H), ar.take(N*a.KVH)
		if a.NormOffset {
			s.qnw, s.knw = ar.take(a.D), ar.take(a.D)
		}
	}
	s.qr, s.kr = s.qn, s.kn
	for m := ModQ; m <= ModO; m++ {
		if r[m] > 0 {
			s.u[m] = ar.take(N * r[m])
		}
	}
	return s
}

func (a *Attention) scale() float32 {
	if a.Scale != 0 {
		return a.Scale
	}
	return float32(1 / math.Sqrt(float64(a.D)))
}

// qkNormWeights returns the weights the q and k norms multiply by.
func (a *Attention) qkNormWeights(be kernels.Backend, s *attnActs) (qw, kw []float32) {
	return normWeight(be, s.qnw, a.QNorm, a.NormOffset), normWeight(be, s.knw, a.KNorm, a.NormOffset)
}

// Forward writes out [N, C] = attention(x) for x [N, C] (the normed input);
// xBF, when not nil, is x rounded to bfloat16 (kernels.InputRounder: the
// norm wrote it), which the q, k and v products take.
func (a *Attention) Forward(be kernels.Backend, out []float32, s *attnActs, x []float32, xBF []uint16, g *geometry, layer int, lr *[numModules]*LoRA) error {
	N := g.N
	forwardMany(be, []*Linear{&a.Q, &a.K, &a.V}, [][]float32{s.q, s.k, s.v}, [][]float32{s.u[ModQ], s.u[ModK], s.u[ModV]},
		x, xBF, N, []*LoRA{lr[ModQ], lr[ModK], lr[ModV]})
	if a.QNorm != nil {
		qw, kw := a.qkNormWeights(be, s)
		be.RMSNormForward(s.qn, s.qrstd, s.q, qw, N*a.H, a.D, a.Eps)
		be.RMSNormForward(s.kn, s.krstd, s.k, kw, N*a.KVH, a.D, a.Eps)
	}
	be.RoPEForward(s.qr, s.qn, g.pos, a.InvFreq, N, a.H, a.D)
	be.RoPEForward(s.kr, s.kn, g.pos, a.InvFreq, N, a.KVH, a.D)
	switch {
	case g.cache == nil && a.Window > 0:
		be.AttentionWindowForward(s.out, s.lse, s.qr, s.kr, s.v, g.seqOff, N, a.H, a.KVH, a.D, a.Window, a.scale())
	case g.cache == nil:
		be.AttentionForward(s.out, s.lse, s.qr, s.kr, s.v, g.seqOff, N, a.H, a.KVH, a.D, a.scale())
	default:
		if err := a.decode(be, s, g, layer); err != nil {
			return err
		}
	}
	a.O.Forward(be, out, s.u[ModO], s.out, N, lr[ModO])
	return nil
}

// decode stores each sequence's new keys and values in the cache and lets its
// new queries attend to everything cached for that sequence (the last
// Window rows of it on a sliding layer): one AttentionDecodeBatch for all
// the sequences of the step.
func (a *Attention) decode(be kernels.Backend, s *attnActs, g *geometry, layer int) error {
	kvd := a.KVH * a.D
	S := len(g.seqs)
	if cap(g.kc) < S {
		g.kc, g.vc = make([][]float32, S), make([][]float32, S)
	}
	g.kc, g.vc = g.kc[:S], g.vc[:S]
	for i, seq := range g.seqs {
		n := int(g.seqOff[i+1] - g.seqOff[i])
		rows := g.start[i] + n
		kc, vc := g.cache.KV(layer, seq)
		if len(kc) < rows*kvd || len(vc) < rows*kvd {
			return fmt.Errorf("model: cache for sequence %d layer %d holds %d values, need %d", seq, layer, min(len(kc), len(vc)), rows*kvd)
		}
		g.kc[i], g.vc[i] = kc[:rows*kvd], vc[:rows*kvd]
	}
	be.AttentionDecodeBatch(s.out, s.qr, s.kr, s.v, g.kc, g.vc, g.seqOff, g.N, a.H, a.KVH, a.D, max(a.Window, 0), a.scale())
	return nil
}

// Backward writes dx [N, C] = d out/d x · dout (its contents ignored) and
// accumulates the LoRA gradients; w supplies the scratch. doutBF, when
// not nil, is dout rounded as the o projection's base product rounds it
// (Block.postNormBackward), which that product then takes. xBF, when not
// nil (x then nil), is the input x given as its bfloat16 rounding only,
// where inputBF16 holds (backwardMany).
func (a *Attention) Backward(be kernels.Backend, dx, dout []float32, doutBF []uint16, s *attnActs, x []float32, xBF []uint16, w *work, g *geometry, lr *[numModules]*LoRA) {
	N := g.N
	qd, kvd := N*a.H*a.D, N*a.KVH*a.D
	datt := w.dq[:qd] // [N,H,D]
	a.O.backward(be, datt, dout, doutBF, s.out, s.u[ModO], w.lg, N, lr[ModO], true)

	dqr, dkr, dv := w.dqr[:qd], w.dkr[:kvd], w.dv[:kvd]
	be.Zero(dqr, qd)
	be.Zero(dkr, kvd)
	be.Zero(dv, kvd)
	if a.Window > 0 {
		be.AttentionWindowBackward(dqr, dkr, dv, datt, s.out, s.lse, s.qr, s.kr, s.v, g.seqOff, N, a.H, a.KVH, a.D, a.Window, a.scale())
	} else {
		be.AttentionBackward(dqr, dkr, dv, datt, s.out, s.lse, s.qr, s.kr, s.v, g.seqOff, N, a.H, a.KVH, a.D, a.scale())
	}

	dq, dk := datt, w.dk[:kvd] // gradients w.r.t. q, k before RoPE; datt is spent
	kernels.RoPEBackwardSet(be, dq, dqr, g.pos, a.InvFreq, N, a.H, a.D)
	kernels.RoPEBackwardSet(be, dk, dkr, g.pos, a.InvFreq, N, a.KVH, a.D)
	if a.QNorm != nil {
		dqp, dkp := dqr, dkr // spent as well
		be.Zero(dqp, qd)
		be.Zero(dkp, kvd)
		qw, kw := a.qkNormWeights(be, s)
		be.RMSNormBackward(dqp, nil, dq, s.qrstd, s.q, qw, N*a.H, a.D)
		be.RMSNormBackward(dkp, nil, dk, s.krstd, s.k, kw, N*a.KVH, a.D)
		dq, dk = dqp, dkp
	}
	backwardMany(be, []*Linear{&a.Q, &a.K, &a.V}, dx, [][]float32{dq, dk, dv}, nil, x, xBF, [][]float32{s.u[ModQ], s.u[ModK], s.u[ModV]}, w.lg, N,
		[]*LoRA{lr[ModQ], lr[ModK], lr[ModV]})
}

// inputBF16 reports whether Backward may take its input x as bfloat16
// only (normInputBF16 of q, k and v).
func (a *Attention) inputBF16(be kernels.Backend, N int, lr *[numModules]*LoRA) bool {
	return normInputBF16(be, []*Linear{&a.Q, &a.K, &a.V}, []*LoRA{lr[ModQ], lr[ModK], lr[ModV]}, N)
}
