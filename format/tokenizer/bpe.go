package tokenizer

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
)

// bpeModel is byte-level BPE over raw bytes. Symbols are token ids; a merge
// of the pair (a, b) is found by the packed key a<<32|b and yields its rank
// (lower merges first) and the id of the merged token.
type bpeModel struct {
	byteID       [256]int32       // the token of each single byte
	merges       pairTable        // a<<32|b → rank<<32 | merged id
	ignoreMerges bool             // a whole pre-token found in byRaw is taken as is
	byRaw        map[string]int32 // raw bytes → id of every model token
	whole        wholeTable       // which tokens BPE of their own bytes reaches
	cache        *wordCache       // multi-token pre-tokens seen recently; nil disables it
}

const noRank = ^uint32(0)

func (m *bpeModel) init(byRaw map[string]int32, vocab map[string]int32, merges []json.RawMessage, ignoreMerges bool) error {
	for b := 0; b < 256; b++ {
		id, ok := byRaw[string([]byte{byte(b)})]
		if !ok {
			return fmt.Errorf("vocab has no token for byte 0x%02x (%q); not a byte-level BPE", b, byteToRune[b])
		}
		m.byteID[b] = id
	}
	var err error
	if m.merges, err = buildMerges(vocab, merges); err != nil {
		return err
	}
	m.ignoreMerges = ignoreMerges
	m.byRaw = byRaw
	size := 0
	for _, id := range byRaw {
		size = max(size, int(id)+1)
	}
	m.whole = newWholeTable(size)
	return nil
}

// pair returns the rank and merged id of (a, b), or noRank.
func (m *bpeModel) pair(a, b int32) (uint32, int32) { return m.merges.pair(a, b) }

// pair returns the rank and merged id of (a, b), or noRank.
func (t *pairTable) pair(a, b int32) (uint32, int32) {
	v, ok := t.get(uint64(a)<<32 | uint64(b))
	if !ok {
		return noRank, 0
	}
	return uint32(v >> 32), int32(uint32(v))
}

// buildMerges reads the merges of a tokenizer.json into a pair table: the
// parts and the result of each must be tokens of vocab (spelled as the file
// spells them). For a pair listed twice the last rank wins, as in Hugging
// Face's Rust BPE (the merges collected into a HashMap) and its JavaScript
// port (a Map built from them): later entries replace earlier ones.
func buildMerges(vocab map[string]int32, merges []json.RawMessage) (pairTable, error) {
	t := newPairTable(len(merges))
	var ab []byte // a+b; the lookups through string(…) do not allocate
	for rank, raw := range merges {
		a, b, err := splitMerge(raw)
		if err != nil {
			return t, fmt.Errorf("merges[%d]: %w", rank, err)
		}
		ab = append(append(ab[:0], a...), b...)
		ia, oka := vocab[string(a)]
		ib, okb := vocab[string(b)]
		im, okm := vocab[string(ab)]
		if !oka || !okb || !okm {
			return t, fmt.Errorf("merges[%d]: %q + %q: a part or the result is not in the vocabulary", rank, a, b)
		}
		t.insert(uint64(ia)<<32|uint64(ib), uint64(rank)<<32|uint64(im))
	}
	return t, nil
}

// shortWord is the length up to which encodeWord uses the quadratic scan; it
// beats the heap on the short pre-tokens that make up almost all text.
const shortWord = 128

// encodeWord appends the BPE tokens of one pre-token (raw bytes) to out.
//
// Contract: repeatedly merge the adjacent pair with the lowest rank, the
// leftmost one among equal ranks, until no adjacent pair has a merge — the
// loop of encodeWordSlow. encodeShort and encodeLong are faster forms of it.
func (m *bpeModel) encodeWord(word string, out []int) []int {
	switch {
	case len(word) == 0:
		return out
	case len(word) == 1:
		return append(out, int(m.byteID[word[0]]))
	}
	if id, ok := m.byRaw[word]; ok {
		if m.ignoreMerges {
			return append(out, int(id)) // every vocabulary word is taken whole
		}
		switch m.whole.get(id) {
		case wholeYes:
			return append(out, int(id))
		case wholeUnknown:
			n := len(out)
			out = m.merge(word, out)
			m.whole.set(id, len(out) == n+1 && out[n] == int(id))
			return out
		}
	}
	if m.cache == nil || len(word) > maxCachedWord {
		return m.merge(word, out)
	}
	e, slot := m.cache.get(word)
	if e != nil {
		for _, id := range e.ids {
			out = append(out, int(id))
		}
		return out
	}
	n := len(out)
	out = m.merge(word, out)
	m.cache.put(slot, word, out[n:])
	return out
}

// merge runs the BPE loop on word (at least one byte).
func (m *bpeModel) merge(word string, out []int) []int {
	if len(word) == 1 {
		return append(out, int(m.byteID[word[0]]))
	}
	if len(word) <= shortWord {
		return m.encodeShort(word, out)
	}
	return m.encodeLong(word, out)
}

// encodeShort keeps the symbols and the rank of each adjacent pair in arrays
// on the stack; each merge rescans the ranks and recomputes two of them.
func (m *bpeModel) encodeShort(word string, out []int) []int {
	var symBuf, resBuf [shortWord]int32
	var rankBuf [shortWord]uint32
	n := len(word)
	syms := symBuf[:n]
	for i := 0; i < n; i++ {
		syms[i] = m.byteID[word[i]]
	}
	ranks, res := rankBuf[:n-1], resBuf[:n-1]
	for i := range ranks {
		ranks[i], res[i] = m.pair(syms[i], syms[i+1])
	}
	for len(ranks) > 0 {
		best, bi := noRank, -1
		for i, r := range ranks {
			if r < best {
				best, bi = r, i
			}
		}
		if bi < 0 {
			break
		}
		syms[bi] = res[bi]
		copy(syms[bi+1:], syms[bi+2:])
		syms = syms[:len(syms)-1]
		copy(ranks[bi:], ranks[bi+1:])
		ranks = ranks[:len(ranks)-1]
		copy(res[bi:], res[bi+1:])
		res = res[:len(res)-1]
		if bi > 0 {
			ranks[bi-1], res[bi-1] = m.pair(syms[bi-1], syms[bi])
		}
		if bi < len(ranks) {
			ranks[bi], res[bi] = m.pair(syms[bi], syms[bi+1])
		}
	}
	for _, s := range syms {
		out = append(out, int(s))
	}
	return out
}

// heapEntry is a candidate merge at the symbol starting at byte pos.
type heapEntry struct {
	rank uint32
	pos  int32
}

func (a heapEntry) less(b heapEntry) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

type mergeHeap []heapEntry

func (h *mergeHeap) push(e heapEntry) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *mergeHeap) pop() heapEntry {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, min := 2*i+1, 2*i+2, i
		if l < len(s) && s[l].less(s[min]) {
			min = l
		}
		if r < len(s) && s[r].less(s[min]) {
			min = r
		}
		if min == i {
			break
		}
		s[i], s[min] = s[min], s[i]
		i = min
	}
	*h = s
	return top
}

// encodeLong is the same loop for long pre-tokens (long whitespace or digit
// runs), through mergeList.
func (m *bpeModel) encodeLong(word string, out []int) []int {
	sym := make([]int32, len(word))
	for i := 0; i < len(word); i++ {
		sym[i] = m.byteID[word[i]]
	}
	out, _ = m.merges.mergeList(sym, nil, out, nil)
	return out
}

// mergeList runs the BPE loop over the symbols sym (at least one) in
// O(n log n) and appends the result to out: symbols form a linked list
// indexed by their first place, and candidate merges wait in a heap ordered
// by (rank, position). An entry is stale when its pair has changed since it
// was pushed; since every pair has one rank, checking the current pair's
// rank detects that. lens, when not nil, holds each symbol's length in the
// text; a merge adds them, and the result's lengths are appended to
// outLens. sym and lens are overwritten.
func (t *pairTable) mergeList(sym, lens []int32, out []int, outLens []int32) ([]int, []int32) {
	n := len(sym)
	next := make([]int32, n)
	prev := make([]int32, n)
	for i := 0; i < n; i++ {
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
	}
	next[n-1] = -1
	h := make(mergeHeap, 0, n)
	for i := 0; i+1 < n; i++ {
		if r, _ := t.pair(sym[i], sym[i+1]); r != noRank {
			h.push(heapEntry{r, int32(i)})
		}
	}
	dead := make([]bool, n)
	for len(h) > 0 {
		e := h.pop()
		p := e.pos
		if dead[p] {
			continue
		}
		q := next[p]
		if q < 0 {
			continue
		}
		r, id := t.pair(sym[p], sym[q])
		if r != e.rank {
			continue
		}
		sym[p] = id
		if lens != nil {
			lens[p] += lens[q]
		}
		dead[q] = true
		next[p] = next[q]
		if next[q] >= 0 {
			prev[next[q]] = p
		}
		if pp := prev[p]; pp >= 0 {
			if r, _ := t.pair(sym[pp], sym[p]); r != noRank {
				h.push(heapEntry{r, pp})
			}
		}
		if nq := next[p]; nq >= 0 {
			if r, _ := t.pair(sym[p], sym[nq]); r != noRank {
				h.push(heapEntry{r, p})
			}
		}
	}
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, int(sym[i]))
		if lens != nil {
			outLens = append(outLens, lens[i])
		}
	}
	return out, outLens
}

// encodeWordSlow is the plain BPE loop, kept as the oracle for encodeWord:
// find the lowest-ranked adjacent pair (leftmost on ties), merge it, repeat.
func (m *bpeModel) encodeWordSlow(word string) []int {
	syms := make([]int32, len(word))
	for i := range syms {
		syms[i] = m.byteID[word[i]]
	}
	for {
		best, bi, bid := noRank, -1, int32(0)
		for i := 0; i+1 < len(syms); i++ {
			if r, id := m.pair(syms[i], syms[i+1]); r < best {
				best, bi, bid = r, i, id
			}
		}
		if bi < 0 {
			break
		}
		syms[bi] = bid
		syms = append(syms[:bi+1], syms[bi+2:]...)
	}
	out := make([]int, len(syms))
	for i, s := range syms {
		out[i] = int(s)
	}
	return out
}

// pairTable is an open-addressing hash map from packed pairs to packed
// results, built once and then only read. It is the hot lookup of encoding;
// a Go map costs about twice as much here.
type pairTable struct {
	slots []pairSlot
	mask  uint64
	shift uint
}

type pairSlot struct{ key, val uint64 }

// emptyKey marks a free slot; no pair of ids below 2^32-1 packs to it.
const emptyKey = ^uint64(0)

func newPairTable(n int) pairTable {
	size, bits := 16, uint(4)
	for size < 2*n {
		size *= 2
		bits++
	}
	// Filling the slots first also writes every page of the new table in
	// order: inserts at random slots would read fresh pages first, and each
	// such page is faulted in twice (as the shared zero page, then copied
	// for the write), about 0.07 s of system time for Qwen3's 8 MB table.
	slots := make([]pairSlot, size)
	for i := range slots {
		slots[i].key = emptyKey
	}
	return pairTable{slots: slots, mask: uint64(size - 1), shift: 64 - bits}
}

func (t *pairTable) home(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> t.shift }

// insert sets the value of key, replacing the one it had.
func (t *pairTable) insert(key, val uint64) {
	for i := t.home(key); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.key == key {
			s.val = val
			return
		}
		if s.key == emptyKey {
			s.key, s.val = key, val
			return
		}
	}
}

func (t *pairTable) get(key uint64) (uint64, bool) {
	for i := t.home(key); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.key == key {
			return s.val, true
		}
		if s.key == emptyKey {
			return 0, false
		}
	}
}

// wholeTable records, for each model token, whether BPE of the token's own
// bytes yields just that token, so that a pre-token found in byRaw needs no
// merging: the common case of a word that is one token. It is filled as
// encoding meets the tokens rather than at load: running BPE on all 151k
// words of a vocabulary cost about a sixth of loading one, and a text meets
// a few thousand of them. Entries are written once, atomically, with the
// value any Encode computes; a lost race only repeats the computation.
type wholeTable []atomic.Uint32 // 2 bits a token: known, whole

const (
	wholeUnknown = 0b00
	wholeNo      = 0b10
	wholeYes     = 0b11
)

func newWholeTable(size int) wholeTable { return make(wholeTable, (size+15)/16) }

func (w wholeTable) get(id int32) uint32 {
	return w[id/16].Load() >> (2 * (id % 16)) & 0b11
}

func (w wholeTable) set(id int32, whole bool) {
	v := uint32(wholeNo)
	if whole {
		v = wholeYes
	}
	w[id/16].Or(v << (2 * (id % 16)))
}
