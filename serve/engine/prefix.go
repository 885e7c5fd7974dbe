package engine

import (
	"fmt"
	"slices"

	"github.com/hone-rl/hone/train/model"
)

// Prefix caching: the keys and values of a finished sequence stay in the
// cache, and a later prompt that starts with the same tokens under the same
// adapter begins from them instead of prefilling those tokens again (what
// vLLM calls automatic prefix caching). It pays off in the loop Hone runs:
// a multi-turn agent sends its whole conversation every turn, so without it
// each turn prefills every turn before it again.
//
// Kept rows are matched token by token against the prompt, longest common
// prefix wins. They live inside the cache's byte budget but give way to
// live sequences: Reserve evicts them, least recently used first, before it
// reports the cache full.

// keptRows are the cached rows of one finished sequence.
//
// adapter is only a key: Match and Keep compare the pointer and never read
// the weights (the rows already hold the keys and values computed with
// them), so kept rows need no hold on the adapter (Request.Done may free
// its weights while rows computed with it are kept). The pointer keeps the
// Go value alive, so no other adapter can take its address and match rows
// that were not computed with it; and since a request can only carry an
// adapter its caller still holds, rows of a freed adapter are never
// matched again: they are freed once the adapter's weights are
// (Engine.ForgetAdapter), or sooner, least recently used, when room is
// needed.
type keptRows struct {
	adapter *model.Adapter // the rows depend on it (nil: the base model)
	tokens  []int32        // the tokens the rows were computed for, one a row
	kv      *kvSeq
	bytes   int64 // memory held (allocated rows, not just used ones)
	lastUse int64
	gone    bool // evicted or taken over: a PrefixMatch on it is stale
}

// PrefixMatch is the outcome of Match: the first N tokens of the prompt can
// start from the kept rows instead of being prefilled. N is 0 without a
// match.
type PrefixMatch struct {
	rows *keptRows
	N    int
}

// SetKeep turns prefix caching on with at most limit bytes of kept rows
// (on top of the budget, which bounds kept and reserved bytes together);
// 0 turns it off and drops what is kept.
func (c *KVCache) SetKeep(limit int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keepLimit = max(limit, 0)
	c.trimKept()
}

// Kept is the number of bytes held by kept rows.
func (c *KVCache) Kept() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keptBytes
}

// Keep ends the live sequence seq like Free, but keeps its rows for later
// prompts under adapter that start with the same tokens. tokens are the
// tokens fed to seq (prompt, then generated), at least Len(seq) of them;
// Keep owns the slice. Rows that these make redundant (their tokens a
// prefix of these, same adapter) are dropped; rows that are themselves
// redundant are not kept.
func (c *KVCache) Keep(seq int, adapter *model.Adapter, tokens []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.seqs[seq]
	if s == nil {
		return
	}
	c.used -= int64(s.capTokens) * c.TokenBytes()
	delete(c.seqs, seq)
	if c.keepLimit == 0 || s.n == 0 || len(tokens) < s.n {
		c.freeRows(s)
		return
	}
	tokens = tokens[:s.n:s.n]
	b := int64(len(s.k[0])/c.kvd) * c.TokenBytes()
	if b > c.keepLimit {
		c.freeRows(s)
		return
	}
	for _, k := range c.kept {
		if k.adapter == adapter && len(k.tokens) >= len(tokens) && slices.Equal(k.tokens[:len(tokens)], tokens) {
			c.touch(k) // already covered, by rows at least as long
			c.freeRows(s)
			return
		}
	}
	c.kept = slices.DeleteFunc(c.kept, func(k *keptRows) bool {
		if k.adapter == adapter && len(k.tokens) < len(tokens) && slices.Equal(k.tokens, tokens[:len(k.tokens)]) {
			k.gone = true
			c.keptBytes -= k.bytes
			c.freeRows(k.kv)
			return true
		}
		return false
	})
	k := &keptRows{adapter: adapter, tokens: tokens, kv: s, bytes: b}
	c.touch(k)
	c.kept = append(c.kept, k)
	c.keptBytes += b
	c.trimKept()
}

// DropAdapter frees the kept rows computed under adapter, whose weights
// are gone: no request can carry it again, so the rows could never be
// matched and would hold their memory until evicted for room. stop (nil:
// never) is asked before each set of rows is freed: once it reports true
// (Shutdown gave up on a free stuck on the device) the rest are left, as
// a free on a backend that may be wedged could hang for ever.
func (c *KVCache) DropAdapter(adapter *model.Adapter, stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range slices.Clone(c.kept) {
		if k.adapter != adapter {
			continue
		}
		if stop != nil && stop() {
			return
		}
		c.drop(k)
		c.freeRows(k.kv)
	}
}

// Match finds the kept rows under adapter that share the longest prefix
// with prompt. At most len(prompt)−1 tokens are matched: the last prompt
// token is always fed, since its logits give the first new token.
func (c *KVCache) Match(adapter *model.Adapter, prompt []int32) PrefixMatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best PrefixMatch
	if len(prompt) < 2 {
		return best
	}
	want := prompt[:len(prompt)-1]
	for _, k := range c.kept {
		if k.adapter != adapter {
			continue
		}
		if n := commonPrefix(k.tokens, want); n > best.N {
			best = PrefixMatch{rows: k, N: n}
		}
	}
	if best.rows != nil {
		c.touch(best.rows)
	}
	return best
}

// Seed starts the reserved, empty sequence seq with the first m.N kept
// rows of m. When those are all of m's rows, seq takes them over rather
// than copying them (the usual case: the next turn of a conversation
// extends the last one). It fails when m's rows were evicted or taken over
// since Match; the caller then prefills the whole prompt.
func (c *KVCache) Seed(seq int, m PrefixMatch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, k := c.seqs[seq], m.rows
	switch {
	case d == nil || d.n != 0:
		return fmt.Errorf("kv cache: seed sequence %d: not a reserved, empty sequence", seq)
	case k == nil || k.gone:
		return fmt.Errorf("kv cache: seed sequence %d: the kept rows are gone", seq)
	case m.N <= 0 || m.N > len(k.tokens) || m.N > d.capTokens:
		return fmt.Errorf("kv cache: seed sequence %d with %d of %d kept rows (reservation %d)", seq, m.N, len(k.tokens), d.capTokens)
	}
	if m.N == len(k.tokens) && len(k.kv.k[0])/c.kvd <= d.capTokens {
		d.k, d.v = k.kv.k, k.kv.v
		d.n = m.N
		c.drop(k) // d owns the rows now
		return nil
	}
	return c.copyPrefix(d, k.kv, m.N)
}

func (c *KVCache) touch(k *keptRows) {
	c.clock++
	k.lastUse = c.clock
}

// drop forgets kept rows k (their memory is the caller's: freed, or taken
// over by a sequence).
func (c *KVCache) drop(k *keptRows) {
	if i := slices.Index(c.kept, k); i >= 0 {
		c.kept = slices.Delete(c.kept, i, i+1)
		k.gone = true
		c.keptBytes -= k.bytes
	}
}

// evictOldest drops the least recently used kept rows and frees them.
func (c *KVCache) evictOldest() {
	oldest := c.kept[0]
	for _, k := range c.kept[1:] {
		if k.lastUse < oldest.lastUse {
			oldest = k
		}
	}
	c.drop(oldest)
	c.freeRows(oldest.kv)
}

// trimKept evicts kept rows until they fit the keep limit and, with the
// live reservations, the budget.
func (c *KVCache) trimKept() {
	for len(c.kept) > 0 && (c.keptBytes > c.keepLimit || (c.budget > 0 && c.used+c.keptBytes > c.budget)) {
		c.evictOldest()
	}
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
