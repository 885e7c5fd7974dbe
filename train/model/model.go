package model

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/hugepage"
)

// Model is a decoder-only transformer of the Llama / Qwen2 / Qwen3 families,
// its weights held as float32 (or bfloat16 matrices after ToBF16).
//
// Forward, Logits and Step only read the weights: several may run at once
// (each with its own Cache). Merge, ToBF16 and LoadWeights write them and
// must not overlap with anything else.
type Model struct {
	Embed  Matrix    `hf:"model.embed_tokens.weight"` // [V, C]
	Blocks []Block   `hf:"model.layers"`
	Norm   []float32 `hf:"model.norm.weight"`       // [C]
	Head   Matrix    `hf:"lm_head.weight,optional"` // [V, C]; the same slices as Embed when tied

	Config Config
	be     kernels.Backend
	slabs  slabPool // activation memory of released passes

	// The backend's memory the model owns (Close frees it): the matrices'
	// slab in either precision, and every other weight and table.
	matF32  []float32
	matBF16 []uint16
	owned   [][]float32
}

// Backend returns the backend the model computes with.
func (m *Model) Backend() kernels.Backend { return m.be }

// Batch is a packed batch of sequences: token n belongs to sequence s when
// SeqOff[s] ≤ n < SeqOff[s+1], and attends only to tokens of its own sequence
// at or before it. A padded batch B×T is the special case SeqOff = 0, T, 2T,
// … with its padding as extra segments masked out of the loss (Targets −1).
type Batch struct {
	IDs     []int32 // [N] input token ids
	Pos     []int32 // [N] position of each token in its sequence (RoPE)
	SeqOff  []int32 // [S+1] sequence boundaries, 0 … N
	Targets []int32 // [N] token whose logprob is wanted at each position; −1: none
}

// geometry is what every layer needs to know about the batch being run.
type geometry struct {
	N      int
	pos    []int32 // [N]
	seqOff []int32 // [S+1]

	// Inference only: sequence i of the batch is cache entry seqs[i], which
	// held start[i] tokens before this call.
	cache Cache
	seqs  []int
	start []int
	// kc, vc: each sequence's cache slices of the layer decoding now
	// (scratch reused by the layers of one step).
	kc, vc [][]float32
}

func (m *Model) checkBatch(b *Batch) error {
	N := len(b.IDs)
	if N == 0 {
		return fmt.Errorf("model: empty batch")
	}
	if len(b.Pos) != N || (b.Targets != nil && len(b.Targets) != N) {
		return fmt.Errorf("model: batch has %d ids, %d positions, %d targets", N, len(b.Pos), len(b.Targets))
	}
	if len(b.SeqOff) < 2 || b.SeqOff[0] != 0 || int(b.SeqOff[len(b.SeqOff)-1]) != N {
		return fmt.Errorf("model: sequence offsets %v must run from 0 to %d", b.SeqOff, N)
	}
	for s := 1; s < len(b.SeqOff); s++ {
		if b.SeqOff[s] < b.SeqOff[s-1] {
			return fmt.Errorf("model: sequence offsets decrease at %d: %v", s, b.SeqOff)
		}
	}
	V := m.Config.Vocab
	for n, id := range b.IDs {
		if id < 0 || int(id) >= V {
			return fmt.Errorf("model: token id %d at position %d outside vocabulary [0, %d)", id, n, V)
		}
		if b.Pos[n] < 0 {
			return fmt.Errorf("model: negative position %d at %d", b.Pos[n], n)
		}
		if b.Targets != nil && (b.Targets[n] < -1 || int(b.Targets[n]) >= V) {
			return fmt.Errorf("model: target id %d at position %d outside vocabulary [0, %d)", b.Targets[n], n, V)
		}
	}
	return nil
}

func (m *Model) checkAdapter(ad *Adapter) error {
	if ad == nil {
		return nil
	}
	if len(ad.Layers) != len(m.Blocks) {
		return fmt.Errorf("model: adapter has %d layers, model %d", len(ad.Layers), len(m.Blocks))
	}
	if _, device := m.be.(kernels.Allocator); device && ad.be != m.be {
		return fmt.Errorf("model: the adapter's tensors are not in %s's memory (Adapter.Place with the model's backend first)", m.be.Name())
	}
	for l, layer := range ad.Layers {
		for mod, lr := range layer {
			if lr == nil {
				continue
			}
			in, out := m.Config.dims(Module(mod))
			if lr.In != in || lr.Out != out || len(lr.A) != lr.R*in || len(lr.B) != out*lr.R {
				return fmt.Errorf("model: adapter layer %d %v is [%d→%d] rank %d, model wants [%d→%d]", l, Module(mod), lr.In, lr.Out, lr.R, in, out)
			}
		}
	}
	return nil
}

// TrainOptions tune the training pass.
type TrainOptions struct {
	// Checkpoint keeps only each block's input and recomputes the block's
	// activations during Backward (less memory, one more forward).
	Checkpoint bool
	// Chunk is the vocabulary block of the lm_head kernel (≤ 0: default).
	Chunk int
	// EntropyGradient says Backward will be given dentropy (a loss with an
	// entropy term). Forward then skips what only a backward without it
	// uses: the expected lm_head row, one more product over the vocabulary.
	// Backward is right either way; this only saves that work.
	EntropyGradient bool
	// GateUpBF16 holds the MLP's gate and up projections' outputs as
	// bfloat16 where the backend can (kernels.GateUpRounder: kernels/cuda's
	// bf16 precision; Model.gateUpHeld says when), as PyTorch's bf16
	// autocast holds every linear layer's output: half the memory of the
	// two largest activations every layer keeps (17 GB on the 7B shape at
	// 8×1024 tokens, 22 GB on a 14B's) and 3.1 GB a 7B layer less moved.
	// It may cost precision: the golden models' logprob error is about
	// autocast's, llama's max 26% above the bf16 precision's without it
	// (TestBF16ComputeCUDAEmulated). Elsewhere it changes nothing.
	GateUpBF16 bool
}

// Pass is a finished training forward: the per-token results and what
// Backward needs.
type Pass struct {
	Logprob []float32 // [N] log p(target) (0 where the target is −1)
	Entropy []float32 // [N] entropy of the next-token distribution

	m     *Model
	ad    *Adapter
	opt   TrainOptions
	g     *geometry
	tgt   []int32
	slab  []float32    // every buffer below is carved from it (see plan)
	xs    [][]float32  // [L+1][N, C] residual stream entering each block, then the last block's output
	acts  []*blockActs // per block, or one reused slot under Checkpoint
	w     *work        // scratch shared by all blocks
	xf    []float32    // [N, C] final-norm output
	rstdf []float32    // [N]
	lse   []float32    // [N]
	// expect [N, C]: the lm_head row each position's distribution expects
	// (passes with an adapter, unless EntropyGradient). Backward without
	// dentropy turns it into the
	// logprob's gradient row by row, instead of computing the logits again.
	expect []float32
	// dlp, dent [N]: Backward's incoming gradients, copied from the
	// caller's host slices on a backend that allocates its own memory.
	dlp, dent []float32
}

// work is the scratch of one pass, shared by all blocks: forward needs h
// and act; backward the rest (allocated only for passes with an adapter).
type work struct {
	h   []float32 // [N, C] normed block input (attention, then MLP)
	act []float32 // [N, I] SwiGLU output; nil where no layer writes it (Model.actFused)
	// dact [N, I], or nil where the MLP backward writes it as bfloat16
	// only, into dactbf (N·I values in N·I/2 float32s' memory;
	// Model.dactRounded).
	dact   []float32
	dactbf []uint16
	// dgate and dup [N, I] are nil where every layer's MLP backward takes
	// only their bfloat16 roundings (Model.gatedGradsRounded).
	dgate, dup  []float32
	dh          []float32 // [N, C]
	dq, dqr     []float32 // [N, H·D]
	dkr, dv, dk []float32 // [N, KVH·D]
	dxf, dx     []float32 // [N, C] model-level gradients of the residual stream
	dn          []float32 // [N, C] sandwich norms only: a sub-layer output's gradient
	nwf         []float32 // [C] NormOffset only: the final norm's 1+w
	lg          []float32 // [N, R] the LoRA backward's g = Scale·dout·B, R the largest rank
	// dgbf [N, I] holds 2·N·I bfloat16 values, dgate's and dup's
	// roundings (MLP.Backward), on a kernels.DoutRounder that rounds and
	// a bfloat16 model only; else nil. It is memory traded for traffic:
	// N·I·4 bytes more a pass (620 MB on the 7B shape at 8×1024 tokens)
	// for 1.24 GB less read and written a layer.
	dgbf []float32
	// xbf holds the bfloat16 rounding of the next linear products' input,
	// written by the op that writes that input (kernels.InputRounder): the
	// normed input h [N, C], then the MLP's act [N, I] (Block.Forward),
	// N·max(C, I) values; in passes with an adapter on an InputRounder
	// that rounds and a bfloat16 model only, else nil. Each copy is spent
	// by the products that follow it, before the block's backward writes
	// dgbf, so where dgbf is allocated (a DoutRounder that rounds: cuda's
	// bf16 precision) xbf lies in its memory and costs nothing more;
	// otherwise N·max(C, I)·2 bytes (310 MB on the 7B shape at 8×1024
	// tokens). Either way 0.86 GB a 7B layer less read (TestStepTraffic7B).
	xbf []uint16
	// dxbf [N, C] holds the bfloat16 rounding of the current dx, written
	// by the norm backward that leaves it (kernels.NormDoutRounder) for
	// the next base product that takes dx as its dout: the down
	// projection's of the block below after an input norm's (or the
	// final norm's), the o projection's after a post-attention norm's
	// (Block.backward), each spent before the next norm writes it; on a
	// kernels.DoutRounder that rounds, a bfloat16 pre-norm model; else
	// nil. 58 MB on the 7B shape at 8×1024 tokens.
	dxbf []uint16
}

// gatedGradsRounded reports whether in a backward pass of N tokens with
// adapter ad every layer's MLP backward takes only the bfloat16 roundings
// of dgate and dup, never their float32 values (MLP.Backward): on a
// kernels.DoutRounder that rounds, with a bfloat16 model, where every
// layer's gate and up have no LoRA update or one that roundedLoRA takes
// (a kernels.LoRARoundedBackwarder). Then the pass allocates no float32
// dgate and dup: 2·N·I values less (1.24 GB on the 7B shape at 8×1024
// tokens).
func (m *Model) gatedGradsRounded(ad *Adapter, N int) bool {
	dr, ok := m.be.(kernels.DoutRounder)
	if !ok || !dr.RoundsLinearDout() || m.Embed.BF16 == nil || N < 1 {
		return false
	}
	for l, b := range m.Blocks {
		if b.MLP.Gate.Weight.BF16 == nil || b.MLP.Up.Weight.BF16 == nil {
			return false
		}
		lr := ad.layer(l)
		gl := []*LoRA{lr[ModGate], lr[ModUp]}
		if (gl[0] != nil || gl[1] != nil) && !roundedLoRA(m.be, []*Linear{&b.MLP.Gate, &b.MLP.Up}, gl, N) {
			return false
		}
	}
	return true
}

// dactRounded reports whether in a backward pass of N tokens every
// layer's MLP backward writes dact as bfloat16 only (MLP.Backward): on a
// kernels.DinpRounder that rounds, whose gated backward reads dact so
// (a kernels.DoutRounder that rounds), with a bfloat16 model. Then the
// pass holds N·I bfloat16 values for dact instead of N·I float32 ones
// (310 MB less on the 7B shape at 8×1024 tokens).
func (m *Model) dactRounded(N int) bool {
	di, ok := m.be.(kernels.DinpRounder)
	if !ok || !di.RoundsLinearDinp() || m.Embed.BF16 == nil || N < 1 {
		return false
	}
	if do, ok := m.be.(kernels.DoutRounder); !ok || !do.RoundsLinearDout() {
		return false
	}
	for _, b := range m.Blocks {
		if b.MLP.Gate.Weight.BF16 == nil || b.MLP.Up.Weight.BF16 == nil || b.MLP.Down.Weight.BF16 == nil {
			return false
		}
	}
	return true
}

// actFused reports whether in a training pass of N tokens with adapter ad
// every layer's MLP runs the gated unit with the down projection's LoRA
// products inside it both ways (MLP.Forward: a kernels.GatedLoRAForwarder
// given act's bf16 copy in w.xbf; MLP.Backward: a
// kernels.GatedLoRABackwarder whose gated backward writes only dgate's and
// dup's roundings, Model.gatedGradsRounded), so that no layer writes act
// or reads it: the pass then holds no w.act, N·I values less (620 MB on
// the 7B shape at 8×1024 tokens). The conditions are those under which
// MLP.Forward and MLP.Backward fuse, for every layer.
func (m *Model) actFused(ad *Adapter, N int) bool {
	// gatedGradsRounded: every gated backward writes only the roundings
	// (and the model is bfloat16); the InputRounder gives the forward
	// act's bf16 copy (newWork's xbf).
	if ad == nil || !m.gatedGradsRounded(ad, N) {
		return false
	}
	if ir, ok := m.be.(kernels.InputRounder); !ok || !ir.RoundsLinearInput() {
		return false
	}
	for l, b := range m.Blocks {
		down := ad.layer(l)[ModDown]
		_, fwd := b.MLP.fusedForward(m.be, down)
		_, bwd := b.MLP.fusedBackward(m.be, down)
		if !fwd || !bwd {
			return false
		}
	}
	return true
}

// gateUpHeld reports whether in a training pass of N tokens with adapter
// ad every layer's MLP holds its gate and up projections' outputs as
// bfloat16 only (kernels.GateUpRounder; MLP.Forward, MLP.Backward): where
// every layer fuses the down projection's LoRA products both ways
// (actFused, at a rank the backend holds them for), and its gate and up
// have no biases and either no LoRA update or one of one rank and scale
// each (LoRAForwardManyTo). Then the pass keeps 2·N·I bfloat16 values a
// layer for them where it kept float32 ones (17 GB less on the 7B shape at
// 8×1024 tokens), and each layer moves 1.24 GB less written and 1.86 GB
// less read (TestStepTraffic7B). It moves bits: gate and up rounded, and
// the LoRA term of each rounded before the base product adds onto it.
func (m *Model) gateUpHeld(ad *Adapter, N int) bool {
	gr, ok := m.be.(kernels.GateUpRounder)
	if !ok || !m.actFused(ad, N) {
		return false
	}
	for l, b := range m.Blocks {
		mlp, lr := &b.MLP, ad.layer(l)
		if mlp.Gate.Bias != nil || mlp.Up.Bias != nil || mlp.Gate.In != mlp.Up.In || !gr.HoldsGateUpBF16(lr[ModDown].R) {
			return false
		}
		gl := []*LoRA{lr[ModGate], lr[ModUp]}
		if (gl[0] != nil || gl[1] != nil) && !oneLoRA([]*Linear{&mlp.Gate, &mlp.Up}, gl) {
			return false
		}
	}
	return true
}

// GateUpHeld reports whether a training pass with adapter ad holds the
// MLP's gate and up as bfloat16 when asked to (TrainOptions.GateUpBF16):
// on a kernels.GateUpRounder (kernels/cuda's bf16 precision), a bfloat16
// model and an adapter whose every layer has a LoRA update on the down
// projection of a rank the backend fuses, and on gate and up both (of one
// rank and scale) or neither; false where the option would change nothing.
func (m *Model) GateUpHeld(ad *Adapter) bool { return m.gateUpHeld(ad, 1) }

// bf returns the first n values of w.xbf, or nil when the pass has none.
func (w *work) bf(n int) []uint16 {
	if w.xbf == nil {
		return nil
	}
	return w.xbf[:n:n]
}

// newWork lays out the scratch of a pass with adapter ad (nil: none; in a
// backward pass, its largest rank sizes w.lg).
func (m *Model) newWork(ar *arena, N int, backward bool, ad *Adapter) *work {
	c := &m.Config
	C, I, qd, kvd := c.Hidden, c.Intermediate, c.qDim(), c.kvDim()
	w := &work{h: ar.take(N * C)}
	if !(backward && m.actFused(ad, N)) {
		w.act = ar.take(N * I)
	}
	if c.NormOffset {
		w.nwf = ar.take(C)
	}
	if backward && c.SandwichNorms {
		w.dn = ar.take(N * C)
	}
	if backward {
		maxR := ad.maxRank()
		if m.dactRounded(N) {
			w.dactbf = bf16s(ar.take((N*I+1)/2), N*I)
		} else {
			w.dact = ar.take(N * I)
		}
		if !m.gatedGradsRounded(ad, N) {
			w.dgate, w.dup = ar.take(N*I), ar.take(N*I)
		}
		w.dh = ar.take(N * C)
		w.dq, w.dqr = ar.take(N*qd), ar.take(N*qd)
		w.dkr, w.dv, w.dk = ar.take(N*kvd), ar.take(N*kvd), ar.take(N*kvd)
		w.dxf, w.dx = ar.take(N*C), ar.take(N*C)
		w.lg = ar.take(N * maxR)
		dr, ok := m.be.(kernels.DoutRounder)
		roundsDout := ok && dr.RoundsLinearDout() && m.Embed.BF16 != nil
		if roundsDout {
			w.dgbf = ar.take(N * I)
		}
		if _, ok := m.be.(kernels.NormDoutRounder); ok && roundsDout && !c.SandwichNorms {
			w.dxbf = bf16s(ar.take((N*C+1)/2), N*C)
		}
		if ir, ok := m.be.(kernels.InputRounder); ok && ir.RoundsLinearInput() && m.Embed.BF16 != nil {
			n := N * max(C, I)
			f := w.dgbf // 2·N·I bfloat16 values
			if !roundsDout || C > 2*I {
				f = ar.take((n + 1) / 2)
			}
			w.xbf = bf16s(f, n)
		}
	}
	return w
}

// bf16s is the memory of f as n bfloat16 values (2·len(f) ≥ n), or nil
// when f is empty (an arena that only counts; no tokens).
func bf16s(f []float32, n int) []uint16 {
	if len(f) == 0 || n == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&f[0])), n)
}

// arena hands out consecutive pieces of one slab. With a nil slab it only
// counts: running the same allocation code twice, first counting, gives the
// pass's memory plan and then carves it out of a single allocation. Every
// piece starts at a multiple of arenaAlign values from the slab's start
// (the slab itself, from kernels.AllocF32 or the pool, is at least 16-byte
// aligned), so a piece that follows an odd-sized one ([N] norms, [N,H]
// lse) is still 16-byte aligned: the CUDA backend's tc2 attention loads
// q, k, v and dout four floats at a time and runs tc1 instead on a
// misaligned operand.
type arena struct {
	slab []float32
	off  int
}

// arenaAlign is the alignment of every arena piece, in float32 values:
// 16 bytes. The padding is at most 3 values a piece.
const arenaAlign = 4

func (a *arena) take(n int) []float32 {
	o := (a.off + arenaAlign - 1) / arenaAlign * arenaAlign
	a.off = o + n
	if a.slab == nil {
		return nil
	}
	return a.slab[o:a.off:a.off]
}

// slabPool keeps the slabs of released passes for the next Forward: a
// training loop then reuses the same memory every step instead of leaving
// gigabytes of garbage for the collector (whose heap target would double
// the peak) and page-faulting fresh memory in each step (and, on a device,
// instead of allocating device memory each step). Slabs are the backend's
// memory (kernels.AllocF32); one the pool does not keep is freed. On a
// host backend a new slab is advised for transparent huge pages
// (kernels/hugepage) before anything touches it: a training pass of the
// 0.5B shape then faults its activations in 2 MiB at a time (66k minor
// faults a process instead of 807k), which on this 2-vCPU VM cut the
// first step from 17 to 12 s.
type slabPool struct {
	be     kernels.Backend
	mu     sync.Mutex
	free   [][]float32 // whole allocations (len = cap)
	closed bool        // after drain: put frees at once
}

// maxFreeSlabs bounds the slabs kept: one per pass that may run at once.
const maxFreeSlabs = 2

func (sp *slabPool) get(n int) ([]float32, error) {
	sp.mu.Lock()
	best := -1
	for i, s := range sp.free {
		if cap(s) >= n && (best < 0 || cap(s) < cap(sp.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		s := sp.free[best]
		sp.free = append(sp.free[:best], sp.free[best+1:]...)
		sp.mu.Unlock()
		return s[:n], nil
	}
	sp.mu.Unlock()
	s, err := kernels.AllocF32(sp.be, n)
	if err != nil {
		return nil, fmt.Errorf("model: allocating %d float32 values of activations on %s: %w", n, sp.be.Name(), err)
	}
	if _, device := sp.be.(kernels.Allocator); !device {
		hugepage.Float32s(s)
	}
	return s, nil
}

func (sp *slabPool) put(s []float32) {
	s = s[:cap(s)]
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.closed {
		kernels.FreeF32(sp.be, s)
		return
	}
	if len(sp.free) < maxFreeSlabs {
		sp.free = append(sp.free, s)
		return
	}
	// Keep the larger slabs: they serve more shapes.
	small := 0
	for i, f := range sp.free {
		if cap(f) < cap(sp.free[small]) {
			small = i
		}
	}
	if cap(s) > cap(sp.free[small]) {
		s, sp.free[small] = sp.free[small], s
	}
	kernels.FreeF32(sp.be, s)
}

// drain frees the kept slabs; slabs put afterwards are freed at once.
func (sp *slabPool) drain() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, s := range sp.free {
		kernels.FreeF32(sp.be, s)
	}
	sp.free, sp.closed = nil, true
}

// Release hands the pass's activation memory back to the model for the next
// Forward. The pass (its Logprob and Entropy included) must not be used
// afterwards. On a host backend it is optional (an unreleased pass is
// garbage collected); on a backend that allocates its own memory
// (kernels.Allocator) an unreleased pass leaks its activations.
func (p *Pass) Release() {
	if p.slab == nil {
		return
	}
	p.m.slabs.put(p.slab)
	p.slab, p.xs, p.acts, p.w, p.Logprob, p.Entropy, p.expect, p.dlp, p.dent = nil, nil, nil, nil, nil, nil, nil, nil, nil
}

// Forward runs the training pass: per-token log-probabilities of b.Targets
// and the entropy, with the adapter ad (nil: base model). It returns once
// the backend has finished them (kernels.Synchronize): the host reads
// p.Logprob and p.Entropy in place.
func (m *Model) Forward(ctx context.Context, b *Batch, ad *Adapter, opt TrainOptions) (*Pass, error) {
	if err := m.checkBatch(b); err != nil {
		return nil, err
	}
	if err := m.checkAdapter(ad); err != nil {
		return nil, err
	}
	be, c := m.be, &m.Config
	N, C, V := len(b.IDs), c.Hidden, c.Vocab
	g := &geometry{N: N, pos: b.Pos, seqOff: b.SeqOff}
	p := &Pass{m: m, ad: ad, opt: opt, g: g, tgt: b.Targets}
	if p.tgt == nil {
		p.tgt = make([]int32, N)
		for i := range p.tgt {
			p.tgt[i] = -1
		}
	}
	var plan arena
	p.carve(&plan)
	slab, err := m.slabs.get(plan.off)
	if err != nil {
		return nil, err
	}
	p.slab = slab
	p.carve(&arena{slab: p.slab})

	m.embed(p.xs[0], b.IDs)
	var res []float32 // the residual a block left for the next op to add (Block.forward)
	for l := range m.Blocks {
		if err := ctx.Err(); err != nil {
			p.Release()
			return nil, err
		}
		if res, err = m.Blocks[l].forward(be, p.xs[l+1], p.slot(l), p.xs[l], res, p.w, g, l, ad.layer(l), true); err != nil {
			p.Release()
			return nil, err
		}
	}
	m.finalNormAdd(p.xf, p.rstdf, p.xs[len(m.Blocks)], res, p.w, N)
	if m.Head.BF16 != nil {
		be.LogprobForwardBF16(p.Logprob, p.Entropy, p.lse, p.expect, p.xf, m.Head.BF16, p.tgt, N, C, V, opt.Chunk)
	} else {
		be.LogprobForward(p.Logprob, p.Entropy, p.lse, p.expect, p.xf, m.Head.F32, p.tgt, N, C, V, opt.Chunk)
	}
	kernels.Synchronize(be) // the host reads p.Logprob and p.Entropy in place
	return p, nil
}

// carve lays out every buffer of the pass in ar: the residual stream of
// each block (two alternating buffers for a pass without an adapter, which
// has no backward), one activation slot per block (one shared slot under
// Checkpoint or without an adapter), the scratch, and the head's results.
func (p *Pass) carve(ar *arena) {
	m := p.m
	N, C, L := p.g.N, m.Config.Hidden, len(m.Blocks)
	train := p.ad != nil
	p.xs = make([][]float32, L+1)
	if train {
		for l := range p.xs {
			p.xs[l] = ar.take(N * C)
		}
	} else {
		x0, x1 := ar.take(N*C), ar.take(N*C)
		for l := range p.xs {
			p.xs[l] = x0
			if l%2 == 1 {
				p.xs[l] = x1
			}
		}
	}
	held := train && p.opt.GateUpBF16 && m.gateUpHeld(p.ad, N)
	if p.opt.Checkpoint || !train {
		p.acts = []*blockActs{m.Blocks[0].newActs(ar, N, p.ad.maxRanks(), held)}
	} else {
		p.acts = make([]*blockActs, L)
		for l := range p.acts {
			p.acts[l] = m.Blocks[l].newActs(ar, N, p.ad.ranks(l), held)
		}
	}
	p.w = m.newWork(ar, N, train, p.ad)
	p.xf, p.rstdf = ar.take(N*C), ar.take(N)
	p.Logprob, p.Entropy, p.lse = ar.take(N), ar.take(N), ar.take(N)
	if train && !p.opt.EntropyGradient {
		p.expect = ar.take(N * C)
	}
	if train {
		p.dlp, p.dent = ar.take(N), ar.take(N)
	}
}

// slot returns the activation storage of block l (shared under Checkpoint
// and in passes without an adapter).
func (p *Pass) slot(l int) *blockActs {
	if len(p.acts) == 1 {
		p.acts[0].fitLoRA(p.g.N, p.ad.layer(l))
		return p.acts[0]
	}
	return p.acts[l]
}

// Backward accumulates into the adapter's DA and DB the gradient of
// Σ_n dlogprob[n]·Logprob[n] + dentropy[n]·Entropy[n] (either may be nil).
// Call Adapter.ZeroGrad first for a fresh gradient. It returns once the
// backend has finished (kernels.Synchronize). A pass without an
// adapter has nothing to differentiate. Without dentropy (a GRPO or SFT
// loss) the lm_head's part is one row operation per position, from what
// Forward kept; with dentropy (or after a Forward with EntropyGradient) the
// logits are computed again, chunk by chunk.
func (p *Pass) Backward(ctx context.Context, dlogprob, dentropy []float32) error {
	if p.ad == nil {
		return fmt.Errorf("model: backward of a pass without an adapter")
	}
	m, be, c, g := p.m, p.m.be, &p.m.Config, p.g
	N, C, V := g.N, c.Hidden, c.Vocab
	if (dlogprob != nil && len(dlogprob) != N) || (dentropy != nil && len(dentropy) != N) {
		return fmt.Errorf("model: backward wants %d-long gradients, got %d and %d", N, len(dlogprob), len(dentropy))
	}
	if p.slab == nil {
		return fmt.Errorf("model: backward of a released pass")
	}
	// The gradients are host slices (the loss's, an edge): a backend that
	// allocates its own memory reads them from the pass's copies.
	if _, device := be.(kernels.Allocator); device {
		kernels.Synchronize(be) // the host writes the pass's memory
		if dlogprob != nil {
			copy(p.dlp, dlogprob)
			dlogprob = p.dlp
		}
		if dentropy != nil {
			copy(p.dent, dentropy)
			dentropy = p.dent
		}
	}
	w := p.w
	dxf, dx := w.dxf, w.dx
	be.Zero(dxf, N*C)
	switch {
	case dentropy == nil && dlogprob == nil:
	case dentropy == nil && p.expect != nil && m.Head.BF16 != nil:
		be.LogprobBackwardExpectBF16(dxf, dlogprob, p.expect, m.Head.BF16, p.tgt, N, C, V)
	case dentropy == nil && p.expect != nil:
		be.LogprobBackwardExpect(dxf, dlogprob, p.expect, m.Head.F32, p.tgt, N, C, V)
	case m.Head.BF16 != nil:
		be.LogprobBackwardBF16(dxf, dlogprob, dentropy, p.lse, p.Entropy, p.xf, m.Head.BF16, p.tgt, N, C, V, p.opt.Chunk)
	default:
		be.LogprobBackward(dxf, nil, dlogprob, dentropy, p.lse, p.Entropy, p.xf, m.Head.F32, p.tgt, N, C, V, p.opt.Chunk)
	}
	be.Zero(dx, N*C)
	var dxBF []uint16 // dx's bfloat16 rounding for the next block's down projection (Block.backward)
	if w.dxbf != nil {
		be.(kernels.NormDoutRounder).RMSNormBackwardRounded(dx, nil, w.dxbf, dxf, p.rstdf, p.xs[len(m.Blocks)], m.finalNorm(w), N, C)
		dxBF = w.dxbf
	} else {
		be.RMSNormBackward(dx, nil, dxf, p.rstdf, p.xs[len(m.Blocks)], m.finalNorm(w), N, C)
	}
	for l := len(m.Blocks) - 1; l >= 0; l-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		blk, lr := &m.Blocks[l], p.ad.layer(l)
		s := p.slot(l)
		if p.opt.Checkpoint {
			// Recompute this block's activations from its saved input; its
			// output (already in xs[l+1]) goes to the spent dxf.
			if err := blk.Forward(be, dxf, s, p.xs[l], w, g, l, lr); err != nil {
				return err
			}
		}
		dxBF = blk.backward(be, dx, dxBF, s, p.xs[l], w, g, lr, l > 0) // dx becomes the gradient of the block's input
	}
	kernels.Synchronize(be) // the gradients are readable in place on return
	return nil
}

// hidden runs the blocks and the final norm into xf [N, C], carved with
// extra more values (ext) from a slab of the pool, which the caller puts
// back (m.slabs.put) when done with xf and ext.
func (m *Model) hidden(ctx context.Context, ids []int32, g *geometry, ad *Adapter, extra int) (xf, ext, slab []float32, err error) {
	be, c := m.be, &m.Config
	N, C := g.N, c.Hidden
	// One layout for every layer: the LoRA scratch is refitted per layer.
	var plan arena
	carve := func(ar *arena) (x, next []float32, s *blockActs, w *work, xf, rstd, ext []float32) {
		x, next = ar.take(N*C), ar.take(N*C)
		s = m.Blocks[0].newActs(ar, N, ad.maxRanks(), false)
		w = m.newWork(ar, N, false, nil)
		return x, next, s, w, ar.take(N * C), ar.take(N), ar.take(extra)
	}
	carve(&plan)
	if slab, err = m.slabs.get(plan.off); err != nil {
		return nil, nil, nil, err
	}
	x, next, s, w, xf, rstd, ext := carve(&arena{slab: slab})
	m.embed(x, ids)
	var res []float32 // the residual a block left for the next op to add (Block.forward)
	for l := range m.Blocks {
		if err := ctx.Err(); err != nil {
			m.slabs.put(slab)
			return nil, nil, nil, err
		}
		s.fitLoRA(N, ad.layer(l))
		if res, err = m.Blocks[l].forward(be, next, s, x, res, w, g, l, ad.layer(l), true); err != nil {
			m.slabs.put(slab)
			return nil, nil, nil, err
		}
		x, next = next, x
	}
	m.finalNormAdd(xf, rstd, x, res, w, N)
	return xf, ext, slab, nil
}

// Logits returns the full logits [N, V] of a packed batch (b.Targets is
// ignored), in Go memory. Meant for tests and small vocabularies; training
// uses Forward.
func (m *Model) Logits(ctx context.Context, b *Batch, ad *Adapter) ([]float32, error) {
	if err := m.checkBatch(b); err != nil {
		return nil, err
	}
	if err := m.checkAdapter(ad); err != nil {
		return nil, err
	}
	g := &geometry{N: len(b.IDs), pos: b.Pos, seqOff: b.SeqOff}
	xf, _, slab, err := m.hidden(ctx, b.IDs, g, ad, 0)
	if err != nil {
		return nil, err
	}
	defer m.slabs.put(slab)
	out, err := kernels.AllocF32(m.be, g.N*m.Config.Vocab)
	if err != nil {
		return nil, fmt.Errorf("model: allocating logits on %s: %w", m.be.Name(), err)
	}
	m.Head.linear(m.be, out, xf, nil, g.N, m.Config.Hidden, m.Config.Vocab)
	if _, device := m.be.(kernels.Allocator); device {
		host := make([]float32, len(out)) // read back: an edge
		kernels.CopyToHost(m.be, host, out, len(out))
		kernels.FreeF32(m.be, out)
		out = host
	}
	return out, nil
}

// Merge adds the adapter's updates into the model's weights (W += scale·B·A),
// for exporting a merged checkpoint. The model no longer equals the base
// model afterwards; a tied lm_head is unaffected (LoRA never targets it).
func (m *Model) Merge(ad *Adapter) error {
	if err := m.checkAdapter(ad); err != nil {
		return err
	}
	for l := range m.Blocks {
		b := &m.Blocks[l]
		lins := [numModules]*Linear{&b.Attn.Q, &b.Attn.K, &b.Attn.V, &b.Attn.O, &b.MLP.Gate, &b.MLP.Up, &b.MLP.Down}
		for mod, lr := range ad.Layers[l] {
			if lr != nil {
				if err := lins[mod].merge(m.be, lr); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// finalNormAdd is the final norm of x [N, C] into xf and rstd, after
// adding res (the last block's residual, Block.forward; nil: none) into x
// in place, in one pass (kernels.ResidualNormer).
func (m *Model) finalNormAdd(xf, rstd, x, res []float32, w *work, N int) {
	c := &m.Config
	if res != nil {
		m.be.(kernels.ResidualNormer).AddRMSNormForward(x, xf, rstd, nil, x, res, m.finalNorm(w), N, c.Hidden, c.RMSNormEps)
		return
	}
	m.be.RMSNormForward(xf, rstd, x, m.finalNorm(w), N, c.Hidden, c.RMSNormEps)
}

// finalNorm returns the weight the final norm multiplies by (1+w, in w's
// scratch, under NormOffset).
func (m *Model) finalNorm(w *work) []float32 {
	return normWeight(m.be, w.nwf, m.Norm, m.Config.NormOffset)
}

// embed gathers out [N, C] = Embed[ids], times EmbedScale when set.
func (m *Model) embed(out []float32, ids []int32) {
	c := &m.Config
	if m.Embed.BF16 != nil {
		m.be.EmbeddingForwardBF16(out, ids, m.Embed.BF16, len(ids), c.Hidden, c.Vocab)
	} else {
		m.be.EmbeddingForward(out, ids, m.Embed.F32, len(ids), c.Hidden, c.Vocab)
	}
	if c.EmbedScale != 0 {
		m.be.Scale(out, out, c.EmbedScale, len(ids)*c.Hidden)
	}
}

// Pack builds a packed Batch from sequences of token ids and, optionally,
// their targets (targets[s][i] is the token whose logprob is wanted after
// ids[s][i], −1 for none; nil targets: none at all). Positions restart at 0
// in every sequence.
func Pack(ids, targets [][]int32) (*Batch, error) {
	if targets != nil && len(targets) != len(ids) {
		return nil, fmt.Errorf("model: pack: %d sequences but %d target lists", len(ids), len(targets))
	}
	b := &Batch{SeqOff: []int32{0}}
	for s, seq := range ids {
		if targets != nil && len(targets[s]) != len(seq) {
			return nil, fmt.Errorf("model: pack: sequence %d has %d ids but %d targets", s, len(seq), len(targets[s]))
		}
		b.IDs = append(b.IDs, seq...)
		for i := range seq {
			b.Pos = append(b.Pos, int32(i))
		}
		if targets != nil {
			b.Targets = append(b.Targets, targets[s]...)
		}
		b.SeqOff = append(b.SeqOff, int32(len(b.IDs)))
	}
	return b, nil
}
