package model

import (
	"context"
	"fmt"

	"github.com/hone-rl/hone/kernels"
)

// Cache stores the keys and values of past tokens, per sequence and layer,
// for incremental decoding. The model consumes it; serve implements its own
// (paged, shared between requests). Keys are stored after RoPE.
//
// A forward over new tokens of sequence seq calls Grow(seq, n) once, then, for
// every layer, KV(layer, seq) and writes the n new rows at the end; Len(seq)
// includes them from Grow on. If the forward fails, the caller Truncates the
// sequence back to its old length.
type Cache interface {
	// Len is the number of tokens cached for seq (0 for an unknown seq).
	Len(seq int) int
	// Grow makes room for n more tokens of seq, so that Len(seq) grows by n.
	Grow(seq, n int) error
	// KV returns the whole cache of seq in layer, k and v [Len(seq), KVH, D],
	// contiguous and writable (the attention kernel reads it as one block; a
	// paged cache gathers into a scratch slice and scatters the new rows back
	// on the next call). The slices stay valid until the next Grow or Truncate.
	KV(layer, seq int) (k, v []float32)
	// Truncate drops everything of seq after its first n tokens (0 frees it).
	Truncate(seq, n int)
}

// ContiguousCache is a Cache that keeps each sequence in one growing slice
// per layer, in the backend's memory: simple, for tests and single-user
// decoding. Truncate to 0 frees a sequence; Close frees them all.
type ContiguousCache struct {
	layers, kvd int
	be          kernels.Backend
	seqs        map[int]*cacheSeq
}

type cacheSeq struct {
	n    int
	k, v [][]float32 // [layers][n, KVH, D], each a prefix of an allocation (cap)
}

// NewContiguousCache returns an empty cache for a model of config c whose
// keys and values live in be's memory (the model's backend).
func NewContiguousCache(c *Config, be kernels.Backend) *ContiguousCache {
	return &ContiguousCache{layers: c.Layers, kvd: c.kvDim(), be: be, seqs: map[int]*cacheSeq{}}
}

// Len implements Cache.
func (c *ContiguousCache) Len(seq int) int {
	if s := c.seqs[seq]; s != nil {
		return s.n
	}
	return 0
}

// Grow implements Cache.
func (c *ContiguousCache) Grow(seq, n int) error {
	if n < 0 {
		return fmt.Errorf("cache: grow sequence %d by %d", seq, n)
	}
	s := c.seqs[seq]
	if s == nil {
		s = &cacheSeq{k: make([][]float32, c.layers), v: make([][]float32, c.layers)}
		c.seqs[seq] = s
	}
	for l := range s.k {
		for _, b := range []*[]float32{&s.k[l], &s.v[l]} {
			nb, err := c.growTo(*b, (s.n+n)*c.kvd)
			if err != nil {
				return fmt.Errorf("cache: sequence %d: %w", seq, err)
			}
			*b = nb
		}
	}
	s.n += n
	return nil
}

// growTo returns b lengthened to n values, moved (with the backend's Copy)
// to a new allocation of at least twice its capacity when it has no room.
func (c *ContiguousCache) growTo(b []float32, n int) ([]float32, error) {
	if n <= cap(b) {
		return b[:n], nil
	}
	nb, err := kernels.AllocF32(c.be, max(n, 2*cap(b)))
	if err != nil {
		return nil, fmt.Errorf("allocating %d float32 values on %s: %w", max(n, 2*cap(b)), c.be.Name(), err)
	}
	c.be.Copy(nb, b, len(b))
	c.free(b)
	return nb[:n], nil
}

func (c *ContiguousCache) free(b []float32) { kernels.FreeF32(c.be, b[:cap(b)]) }

// KV implements Cache.
func (c *ContiguousCache) KV(layer, seq int) (k, v []float32) {
	s := c.seqs[seq]
	if s == nil {
		return nil, nil
	}
	return s.k[layer], s.v[layer]
}

// Truncate implements Cache; truncating to 0 frees the sequence's memory.
func (c *ContiguousCache) Truncate(seq, n int) {
	s := c.seqs[seq]
	if s == nil {
		return
	}
	if n <= 0 {
		c.drop(s)
		delete(c.seqs, seq)
		return
	}
	if n < s.n {
		s.n = n
		for l := range s.k {
			s.k[l], s.v[l] = s.k[l][:n*c.kvd], s.v[l][:n*c.kvd]
		}
	}
}

func (c *ContiguousCache) drop(s *cacheSeq) {
	for l := range s.k {
		c.free(s.k[l])
		c.free(s.v[l])
	}
}

// Close frees every sequence; the cache is empty afterwards.
func (c *ContiguousCache) Close() error {
	for seq, s := range c.seqs {
		c.drop(s)
		delete(c.seqs, seq)
	}
	return nil
}

// StepInput is the new tokens of one sequence for Step.
type StepInput struct {
	Seq int     // cache entry of the sequence
	IDs []int32 // new tokens (a whole prompt for prefill, one token for decode)
}

// Step runs new tokens of several sequences against the cache, all with the
// same adapter (nil: base model), and returns the logits of each sequence's
// last new token, [len(in), V], for the host to read (a sampler): on a
// backend that copies to the host (kernels.HostCopier: a device backend)
// they are host memory of the backend's (AllocHostF32: page-locked on
// kernels/cuda), brought over in one bulk copy (the device's logits live
// in the step's pooled activation slab), since a host read of a device
// backend's memory costs more (kernels/cuda: a page fault per page of
// managed memory, and the next step's kernel faults it back); on any other
// backend they are the backend's memory (a host backend's is the host's).
// Either way free them with FreeLogits. The
// tokens' positions continue from what the cache holds. On error every
// sequence is truncated back to its old length.
func (m *Model) Step(ctx context.Context, cache Cache, in []StepInput, ad *Adapter) ([]float32, error) {
	return m.StepInto(ctx, cache, in, ad, nil)
}

// StepInto is Step writing the logits into dst when it has the capacity
// (len(in)·V) and into a new allocation otherwise, freeing dst (which must
// then be nil or logits a Step or StepInto of this model returned); it
// returns the logits (on a kernels.HostCopier, dst and the logits are its
// host memory, and the device's logits reuse the pooled slab). A
// decode loop passes back what the previous step returned: the logits are
// the biggest thing a step writes (19 MB for 32 sequences of a 152k
// vocabulary), and a fresh slice each step costs page faults on memory the
// Go runtime has returned to the system (measured on the 0.5B shape at 32
// sequences: a tenth of the step's time).
func (m *Model) StepInto(ctx context.Context, cache Cache, in []StepInput, ad *Adapter, dst []float32) ([]float32, error) {
	return m.step(ctx, cache, in, ad, dst, false)
}

// StepDevice is StepInto leaving the logits in the backend's memory, on
// every backend (on a host backend that is what StepInto returns): for a
// caller that reads only a few values of them on the host, through the
// backend (a kernels.RowChooser: serve/engine), or copies the rows it
// needs (kernels.CopyToHost). dst is nil or logits a StepDevice of this
// model returned; free the logits with FreeDeviceLogits. On a
// stream-ordered backend the logits may still be being written when it
// returns: the backend's own calls order themselves after them.
func (m *Model) StepDevice(ctx context.Context, cache Cache, in []StepInput, ad *Adapter, dst []float32) ([]float32, error) {
	return m.step(ctx, cache, in, ad, dst, true)
}

// FreeDeviceLogits frees logits that StepDevice returned (kernels.FreeF32:
// nothing on a host backend).
func (m *Model) FreeDeviceLogits(logits []float32) {
	if cap(logits) > 0 {
		kernels.FreeF32(m.be, logits[:cap(logits)])
	}
}

// step is StepInto, or StepDevice when device.
func (m *Model) step(ctx context.Context, cache Cache, in []StepInput, ad *Adapter, dst []float32, device bool) ([]float32, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("model: step with no sequences")
	}
	if err := m.checkAdapter(ad); err != nil {
		return nil, err
	}
	g := &geometry{cache: cache, seqOff: make([]int32, 1, len(in)+1), seqs: make([]int, len(in)), start: make([]int, len(in))}
	var ids []int32
	seen := map[int]bool{}
	for i, s := range in {
		if len(s.IDs) == 0 {
			return nil, fmt.Errorf("model: step input %d (sequence %d) has no tokens", i, s.Seq)
		}
		if seen[s.Seq] {
			return nil, fmt.Errorf("model: sequence %d appears twice in one step", s.Seq)
		}
		seen[s.Seq] = true
		for _, id := range s.IDs {
			if id < 0 || int(id) >= m.Config.Vocab {
				return nil, fmt.Errorf("model: sequence %d: token id %d outside vocabulary [0, %d)", s.Seq, id, m.Config.Vocab)
			}
		}
		g.seqs[i], g.start[i] = s.Seq, cache.Len(s.Seq)
		for j := range s.IDs {
			g.pos = append(g.pos, int32(g.start[i]+j))
		}
		ids = append(ids, s.IDs...)
		g.seqOff = append(g.seqOff, int32(len(ids)))
	}
	g.N = len(ids)
	grown := 0
	rollback := func() {
		for i := range grown {
			cache.Truncate(g.seqs[i], g.start[i])
		}
	}
	for i, s := range in {
		if err := cache.Grow(s.Seq, len(s.IDs)); err != nil {
			rollback()
			return nil, fmt.Errorf("model: cache grow for sequence %d: %w", s.Seq, err)
		}
		grown = i + 1
	}
	C, V, S := m.Config.Hidden, m.Config.Vocab, len(in)
	host, copies := m.be.(kernels.HostCopier)
	copies = copies && !device
	extra := S * C
	if copies {
		extra += S * V // the device's logits, copied to the host below
	}
	xf, ext, slab, err := m.hidden(ctx, ids, g, ad, extra)
	if err != nil {
		rollback()
		return nil, err
	}
	defer m.slabs.put(slab)
	last := ext[:S*C] // [S, C]
	// Each sequence's last hidden row, gathered as an embedding lookup with
	// the rows of xf as the table.
	rows := make([]int32, S)
	for i := range in {
		rows[i] = g.seqOff[i+1] - 1
	}
	m.be.EmbeddingForward(last, rows, xf, S, C, g.N)
	if copies {
		logits := ext[S*C:]
		m.Head.linear(m.be, logits, last, nil, S, C, V)
		out := dst[:0]
		if cap(out) < S*V {
			if out, err = host.AllocHostF32(S * V); err != nil {
				rollback()
				return nil, fmt.Errorf("model: allocating host logits on %s: %w", m.be.Name(), err)
			}
			if dst != nil {
				m.FreeLogits(dst)
			}
		}
		out = out[:S*V]
		host.CopyToHost(out, logits, S*V)
		return out, nil
	}
	out := dst[:0]
	if cap(out) < S*V {
		if out, err = kernels.AllocF32(m.be, S*V); err != nil {
			rollback()
			return nil, fmt.Errorf("model: allocating logits on %s: %w", m.be.Name(), err)
		}
		if dst != nil {
			m.FreeDeviceLogits(dst)
		}
	}
	out = out[:S*V]
	m.Head.linear(m.be, out, last, nil, S, C, V)
	return out, nil
}

// FreeLogits frees logits that Step or StepInto returned: the host memory
// of a kernels.HostCopier (FreeHostF32), the memory of a kernels.Allocator
// (FreeF32); on a host backend it does nothing.
func (m *Model) FreeLogits(logits []float32) {
	if h, copies := m.be.(kernels.HostCopier); copies {
		if cap(logits) > 0 {
			h.FreeHostF32(logits[:cap(logits)])
		}
		return
	}
	if cap(logits) > 0 {
		kernels.FreeF32(m.be, logits[:cap(logits)])
	}
}
