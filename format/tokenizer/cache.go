package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// wordCache remembers the BPE result of recent multi-token pre-tokens. It is
// direct-mapped: a word has one slot, chosen by its hash, and a new word
// simply replaces the old one (no LRU bookkeeping, no locks). Slots hold
// immutable entries behind atomic pointers, so concurrent Encode calls share
// it safely; a lost race only costs a recomputation.
type wordCache struct {
	seed  maphash.Seed
	slots []atomic.Pointer[cacheEntry]
	mask  uint64
}

type cacheEntry struct {
	word string
	ids  []int32
}

// maxCachedWord bounds the words worth caching: longer ones are rare repeats.
const maxCachedWord = 48

func newWordCache(slots int) *wordCache {
	return &wordCache{seed: maphash.MakeSeed(), slots: make([]atomic.Pointer[cacheEntry], slots), mask: uint64(slots - 1)}
}

func (c *wordCache) get(word string) (*cacheEntry, uint64) {
	h := maphash.String(c.seed, word) & c.mask
	if e := c.slots[h].Load(); e != nil && e.word == word {
		return e, h
	}
	return nil, h
}

func (c *wordCache) put(slot uint64, word string, ids []int) {
	e := &cacheEntry{word: strings.Clone(word), ids: make([]int32, len(ids))}
	for i, id := range ids {
		e.ids[i] = int32(id)
	}
	c.slots[slot].Store(e)
}
