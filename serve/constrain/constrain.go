package constrain

import (
	"fmt"
	"math"
	"slices"
)

// Vocab is what the constraint needs of a tokenizer.
type Vocab interface {
	VocabSize() int
	TokenBytes(id int) ([]byte, bool)
	IsSpecial(id int) bool
}

// Index is a Vocab read once: every token's bytes in one buffer, in id
// order, with each token's first byte beside it. Build one per tokenizer
// (NewIndex) and pass it to NewJSON instead of the tokenizer; masking then
// neither allocates per token nor tests tokens whose first byte cannot
// come next, and it reads memory in order.
type Index struct {
	data  []byte
	off   []uint32 // token id's bytes are data[off[id]:off[id+1]]; empty: special or none (never allowed)
	first []int16  // first byte, or -1 for an empty token
}

// NewIndex reads every token of v.
func NewIndex(v Vocab) *Index {
	n := v.VocabSize()
	x := &Index{off: make([]uint32, n+1), first: make([]int16, n)}
	for id := range n {
		x.first[id] = -1
		if !v.IsSpecial(id) {
			if b, ok := v.TokenBytes(id); ok && len(b) > 0 {
				x.data = append(x.data, b...)
				x.first[id] = int16(b[0])
			}
		}
		x.off[id+1] = uint32(len(x.data))
	}
	return x
}

// VocabSize implements Vocab.
func (x *Index) VocabSize() int { return len(x.first) }

// TokenBytes implements Vocab; the slice must not be written.
func (x *Index) TokenBytes(id int) ([]byte, bool) {
	if id < 0 || id >= len(x.first) || x.first[id] < 0 {
		return nil, false
	}
	return x.data[x.off[id]:x.off[id+1]], true
}

// IsSpecial implements Vocab: the index keeps no special token.
func (x *Index) IsSpecial(id int) bool { return id < 0 || id >= len(x.first) || x.first[id] < 0 }

// topK is how many of the most likely tokens Mask tests first in a large
// vocabulary; scanAll is the size up to which it tests every token.
const (
	scanAll = 8192
	topK    = 64
)

// JSON is a per-sequence constraint (serve/engine's Constraint): the output
// must be compact JSON valid for a Schema, then an end-of-sequence token.
type JSON struct {
	v       Vocab
	idx     *Index // v as an Index, when it is one
	eos     []int32
	m       machine
	scratch machine // reused for trial feeds

	maxTokens int // 0: no budget
	used      int // tokens accepted
	limit     int // per Mask: the most minBytes a candidate may leave (math.MaxInt: no budget; −1: only an end token)

	keep []bool
}

// NewJSON returns the constraint for one sequence. eos are the ids that end
// a sequence; one of them is allowed exactly when the document is complete.
// Pass an *Index as v (NewIndex, once per tokenizer) for speed.
func NewJSON(v Vocab, eos []int32, s *Schema) *JSON {
	j := &JSON{v: v, eos: eos, m: newMachine(s)}
	j.idx, _ = v.(*Index)
	return j
}

// WithMaxTokens makes the constraint finish the document within n tokens
// (the request's max_tokens, end-of-sequence token included): a token is
// allowed only if the shortest completion after it, one byte per token,
// plus the end token still fits. Vocabularies that hold every single byte
// as a token (byte-level BPE) then always end with a complete document
// when n covers the schema's shortest one; with a smaller n the
// constraint heads for the shortest completion and the output is cut at
// max_tokens (finish_reason "length"). It returns j.
func (j *JSON) WithMaxTokens(n int) *JSON {
	j.maxTokens = n
	return j
}

func (j *JSON) allowed(id int32, firstOK *[256]bool) bool {
	if slices.Contains(j.eos, id) {
		return j.m.complete()
	}
	if j.m.done || j.v.IsSpecial(int(id)) {
		return false
	}
	b, ok := j.v.TokenBytes(int(id))
	if !ok || len(b) == 0 || (firstOK != nil && !firstOK[b[0]]) {
		return false
	}
	return j.fits(b)
}

// fits reports whether the bytes b of a token may come next.
func (j *JSON) fits(b []byte) bool {
	if j.m.done {
		return false
	}
	j.m.copyInto(&j.scratch)
	for _, x := range b {
		if !j.scratch.feed(x) {
			return false
		}
	}
	return j.scratch.minBytes() <= j.limit
}

// Mask sets every token that cannot continue the document to -Inf. When
// none is left that the model gave more than -Inf, the whole row is -Inf,
// which the engine reports as a NoCandidateError naming the constraint
// (engine.Constraint). For a large vocabulary it tests the topK most
// likely tokens first and scans the whole vocabulary only when none of
// them fits, so the choice is made among the likely valid tokens (a
// truncation of the distribution, as top_k is).
func (j *JSON) Mask(logits []float32) {
	V := len(logits)
	j.limit = math.MaxInt
	if j.maxTokens > 0 {
		// This token and the end token come out of what is left. Below 0
		// only when the document is complete (minBytes 0) and only the
		// end token still fits.
		j.limit = max(j.maxTokens-j.used-2, j.m.minBytes()-1)
	}
	var firstOK *[256]bool
	if j.idx != nil {
		var f [256]bool
		for b := range 256 {
			j.m.copyInto(&j.scratch)
			f[b] = j.scratch.feed(byte(b))
		}
		firstOK = &f
	}
	if cap(j.keep) < V {
		j.keep = make([]bool, V)
	}
	keep := j.keep[:V]
	clear(keep)
	found := false
	if V > scanAll {
		for _, id := range topIndices(logits, topK) {
			if j.allowed(id, firstOK) {
				keep[id], found = true, true
			}
		}
	}
	if !found {
		if x := j.idx; x != nil {
			n := min(V, len(x.first))
			for id := range n {
				f := x.first[id]
				if f < 0 || !firstOK[f] || math.IsInf(float64(logits[id]), -1) {
					continue
				}
				if j.fits(x.data[x.off[id]:x.off[id+1]]) {
					keep[id], found = true, true
				}
			}
			for _, id := range j.eos {
				if int(id) < V && !math.IsInf(float64(logits[id]), -1) && j.allowed(id, firstOK) {
					keep[id], found = true, true
				}
			}
		} else {
			for id := range V {
				if !math.IsInf(float64(logits[id]), -1) && j.allowed(int32(id), nil) {
					keep[id], found = true, true
				}
			}
		}
	}
	// When nothing fits (the model gave -Inf to every token that could
	// continue the document, or the vocabulary cannot spell what comes
	// next), every logit is left -Inf: the engine ends the sequence with a
	// NoCandidateError that names the constraint, which hone-serve answers
	// with its code constraint_no_token. Ending it with an end token
	// instead would only have Accept refuse that token, in words that name
	// no cause.
	for id := range logits {
		if !keep[id] {
			logits[id] = float32(math.Inf(-1))
		}
	}
}

// Accept advances the document by the chosen token.
func (j *JSON) Accept(id int32) error {
	j.used++
	if slices.Contains(j.eos, id) {
		if !j.m.complete() {
			return fmt.Errorf("end of sequence before the JSON document is complete")
		}
		return nil
	}
	b, _ := j.v.TokenBytes(int(id))
	for _, x := range b {
		if !j.m.feed(x) {
			return fmt.Errorf("token %d (%q) does not continue the JSON document", id, b)
		}
	}
	return nil
}

// Complete reports whether the output so far is a whole document.
func (j *JSON) Complete() bool { return j.m.complete() }

// topIndices returns the ids of the k largest logits.
func topIndices(logits []float32, k int) []int32 {
	idx := make([]int32, 0, k+1)
	for i, v := range logits {
		if len(idx) == k && v <= logits[idx[k-1]] {
			continue
		}
		j := len(idx)
		if j < k {
			idx = append(idx, 0)
		} else {
			j = k - 1
		}
		for j > 0 && logits[idx[j-1]] < v {
			idx[j] = idx[j-1]
			j--
		}
		idx[j] = int32(i)
	}
	return idx
}

// NewWrapped is NewJSON for output that must read prefix, then a document
// of s, then suffix (a tool call in the model's own markup, say).
func NewWrapped(v Vocab, eos []int32, prefix string, s *Schema, suffix string) *JSON {
	j := &JSON{v: v, eos: eos}
	j.idx, _ = v.(*Index)
	if suffix != "" {
		j.m.stack = append(j.m.stack, frame{kind: fLiteral, cands: []string{suffix}})
	}
	j.m.stack = append(j.m.stack, frame{kind: fValue, s: s})
	if prefix != "" {
		j.m.stack = append(j.m.stack, frame{kind: fLiteral, cands: []string{prefix}})
	}
	return j
}

// State is the recogniser on its own, for callers that work in bytes: the
// document read so far and what may follow it. Advance never changes the
// state it is called on.
type State struct{ m machine }

// Start returns the state before the first byte of a document of s.
func (s *Schema) Start() *State { return &State{m: newMachine(s)} }

// Advance returns the state after b, or false if b cannot continue the
// document.
func (st *State) Advance(b []byte) (*State, bool) {
	next := &State{m: st.m.clone()}
	for _, x := range b {
		if !next.m.feed(x) {
			return st, false
		}
	}
	return next, true
}

// Allowed reports whether b can continue the document.
func (st *State) Allowed(b []byte) bool {
	_, ok := st.Advance(b)
	return ok
}

// Clone returns an independent copy.
func (st *State) Clone() *State { return &State{m: st.m.clone()} }

// Done reports whether the bytes so far form a whole document (an end of
// sequence is allowed only then).
func (st *State) Done() bool { return st.m.complete() }

// MinBytes is the fewest bytes that complete the document.
func (st *State) MinBytes() int { return st.m.minBytes() }
