package engine

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/train/model"
)

// ErrCacheFull means a reservation does not fit the KV cache budget now.
var ErrCacheFull = errors.New("kv cache budget exhausted")

// KVCache implements model.Cache with a byte budget. Reserve books room for
// a fixed number of tokens of a sequence against the budget; Grow beyond the
// reservation fails. The memory itself grows with the sequence (doubling,
// up to the reservation), so a request that stops early never touches most
// of what it booked. Keys and values are float32, so a token costs
// layers·2·KVH·D·4 bytes. With SetKeep, a finished sequence's rows can be
// kept for prefix caching (Keep, Match, Seed in prefix.go); kept bytes
// count against the budget until Reserve evicts them.
//
// The rows live in the model's backend's memory (kernels.AllocF32): a
// growing sequence moves to a larger allocation with the backend's Copy,
// and Free, eviction and Close give the memory back.
//
// The model calls Len/Grow/KV/Truncate from the scheduler goroutine only;
// the mutex makes the accounting readable from other goroutines (metrics).
type KVCache struct {
	layers, kvd int
	be          kernels.Backend
	budget      int64 // bytes; 0: unlimited

	mu   sync.Mutex
	used int64 // bytes reserved
	seqs map[int]*kvSeq

	// Prefix caching (prefix.go): rows of finished sequences kept for
	// later prompts that start with the same tokens.
	keepLimit int64 // bytes of kept rows at most; 0: keep nothing
	kept      []*keptRows
	keptBytes int64
	clock     int64 // use counter for least-recently-used eviction
}

type kvSeq struct {
	n, capTokens int
	k, v         [][]float32 // [layers][≤capTokens, KVH, D], each a whole allocation: len = allocated tokens·KVH·D
}

// ensure makes room for need tokens of s (need ≤ s.capTokens), moving its
// rows to larger allocations. Every buffer is allocated before any is
// moved: when one fails, s is left as it was (the size of its first
// buffer stands for all of them).
func (c *KVCache) ensure(s *kvSeq, need int) error {
	have := 0
	if len(s.k) > 0 && s.k[0] != nil {
		have = len(s.k[0]) / c.kvd
	}
	if need <= have {
		return nil
	}
	n := min(s.capTokens, max(need, 2*have, 16))
	nk, nv := make([][]float32, len(s.k)), make([][]float32, len(s.v))
	for l := range nk {
		for _, b := range []*[]float32{&nk[l], &nv[l]} {
			nb, err := kernels.AllocF32(c.be, n*c.kvd)
			if err != nil {
				for l := range nk {
					kernels.FreeF32(c.be, nk[l])
					kernels.FreeF32(c.be, nv[l])
				}
				return fmt.Errorf("kv cache: allocating %d tokens on %s: %w", n, c.be.Name(), err)
			}
			*b = nb
		}
	}
	for l := range s.k {
		if s.n > 0 {
			c.be.Copy(nk[l], s.k[l], s.n*c.kvd)
			c.be.Copy(nv[l], s.v[l], s.n*c.kvd)
		}
		kernels.FreeF32(c.be, s.k[l])
		kernels.FreeF32(c.be, s.v[l])
		s.k[l], s.v[l] = nk[l], nv[l]
	}
	return nil
}

// freeRows gives s's memory back to the backend.
func (c *KVCache) freeRows(s *kvSeq) {
	for l := range s.k {
		kernels.FreeF32(c.be, s.k[l])
		kernels.FreeF32(c.be, s.v[l])
		s.k[l], s.v[l] = nil, nil
	}
}

// Close frees every sequence's and every kept sequence's rows; the cache
// must not be used afterwards.
func (c *KVCache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for seq, s := range c.seqs {
		c.freeRows(s)
		c.used -= int64(s.capTokens) * c.TokenBytes()
		delete(c.seqs, seq)
	}
	for len(c.kept) > 0 {
		c.evictOldest()
	}
	return nil
}

var _ model.Cache = (*KVCache)(nil)

// NewKVCache returns an empty cache for a model of config c holding at most
// budget bytes of keys and values (0: no limit) in be's memory (the
// model's backend).
func NewKVCache(c *model.Config, be kernels.Backend, budget int64) *KVCache {
	return &KVCache{layers: c.Layers, kvd: c.KVHeads * c.HeadDim, be: be, budget: budget, seqs: map[int]*kvSeq{}}
}

// TokenBytes is what one cached token costs.
func (c *KVCache) TokenBytes() int64 { return int64(c.layers) * 2 * int64(c.kvd) * 4 }

// Budget is the byte budget (0: unlimited).
func (c *KVCache) Budget() int64 { return c.budget }

// Used is the number of bytes reserved now.
func (c *KVCache) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// Fits reports whether a reservation of tokens could ever succeed.
func (c *KVCache) Fits(tokens int64) bool {
	// Divided rather than multiplied: tokens·TokenBytes can overflow.
	return c.budget == 0 || tokens >= 0 && tokens <= c.budget/c.TokenBytes()
}

// Reserve allocates room for tokens tokens of the new sequence seq.
func (c *KVCache) Reserve(seq, tokens int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seqs[seq]; ok {
		return fmt.Errorf("kv cache: sequence %d already reserved", seq)
	}
	b := int64(tokens) * c.TokenBytes()
	if c.budget > 0 {
		if c.used+b > c.budget {
			return ErrCacheFull // evicting kept rows would not make room
		}
		// Kept rows give way to live sequences, least recently used first.
		for c.used+c.keptBytes+b > c.budget && len(c.kept) > 0 {
			c.evictOldest()
		}
	}
	c.seqs[seq] = &kvSeq{capTokens: tokens, k: make([][]float32, c.layers), v: make([][]float32, c.layers)}
	c.used += b
	return nil
}

// Room reports whether a reservation of tokens fits now beside the live
// ones (kept rows give way to it).
func (c *KVCache) Room(tokens int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.budget == 0 || c.used+tokens*c.TokenBytes() <= c.budget
}

// Free releases seq and its reservation.
func (c *KVCache) Free(seq int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.seqs[seq]; ok {
		c.used -= int64(s.capTokens) * c.TokenBytes()
		c.freeRows(s)
		delete(c.seqs, seq)
	}
}

// Fork copies the first n cached tokens of src into the reserved, empty
// sequence dst: the prompt of an n > 1 request is prefilled once and shared
// this way.
func (c *KVCache) Fork(dst, src, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, d := c.seqs[src], c.seqs[dst]
	if s == nil || d == nil || n > s.n || n > d.capTokens {
		return fmt.Errorf("kv cache: fork %d tokens of sequence %d into %d", n, src, dst)
	}
	return c.copyPrefix(d, s, n)
}

// copyPrefix makes d hold the first n rows of s (n ≤ d.capTokens), copied
// with the backend's Copy.
func (c *KVCache) copyPrefix(d, s *kvSeq, n int) error {
	d.n = 0
	if err := c.ensure(d, n); err != nil {
		return err
	}
	if n > 0 {
		for l := range s.k {
			c.be.Copy(d.k[l], s.k[l], n*c.kvd)
			c.be.Copy(d.v[l], s.v[l], n*c.kvd)
		}
	}
	d.n = n
	return nil
}

// Len implements model.Cache.
func (c *KVCache) Len(seq int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.seqs[seq]; s != nil {
		return s.n
	}
	return 0
}

// Grow implements model.Cache; it fails past the sequence's reservation.
func (c *KVCache) Grow(seq, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.seqs[seq]
	if s == nil {
		return fmt.Errorf("kv cache: sequence %d has no reservation", seq)
	}
	if n < 0 || s.n+n > s.capTokens {
		return fmt.Errorf("kv cache: sequence %d: %d+%d tokens exceed its reservation of %d", seq, s.n, n, s.capTokens)
	}
	if err := c.ensure(s, s.n+n); err != nil {
		return err
	}
	s.n += n
	return nil
}

// KV implements model.Cache.
func (c *KVCache) KV(layer, seq int) (k, v []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.seqs[seq]
	if s == nil || s.k[layer] == nil {
		return nil, nil
	}
	return s.k[layer][:s.n*c.kvd], s.v[layer][:s.n*c.kvd]
}

// Truncate implements model.Cache. The reservation is kept until Free, so
// a failed step can be retried without losing the sequence's room.
func (c *KVCache) Truncate(seq, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.seqs[seq]; s != nil && n < s.n {
		s.n = max(n, 0)
	}
}
