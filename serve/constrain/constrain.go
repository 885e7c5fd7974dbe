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

// scanAll is the vocabulary size up to which Mask tests every token; above
// it, only the topK most likely candidates are tested first.
const (
	scanAll = 8192
	topK    = 64
)

// JSON is a per-sequence constraint (serve/engine's Constraint): the output
// must be compact JSON valid for a Schema, then an end-of-sequence token.
type JSON struct {
	v   Vocab
	eos []int32
	m   machine
	buf []int32
}

// NewJSON returns the constraint for one sequence. eos are the ids that end
// a sequence; one of them is allowed exactly when the document is complete.
func NewJSON(v Vocab, eos []int32, s *Schema) *JSON {
	return &JSON{v: v, eos: eos, m: newMachine(s)}
}

func (j *JSON) allowed(id int32) bool {
	if slices.Contains(j.eos, id) {
		return j.m.complete()
	}
	if j.m.done || j.v.IsSpecial(int(id)) {
		return false
	}
	b, ok := j.v.TokenBytes(int(id))
	if !ok || len(b) == 0 {
		return false
	}
	c := j.m.clone()
	for _, x := range b {
		if !c.feed(x) {
			return false
		}
	}
	return true
}

// Mask sets every token that cannot continue the document to -Inf. For a
// large vocabulary it tests the topK most likely tokens first and scans the
// whole vocabulary only when none of them fits, so the choice is made among
// the likely valid tokens (a truncation of the distribution, as top_k is).
func (j *JSON) Mask(logits []float32) {
	V := len(logits)
	keep := make([]bool, V)
	found := false
	if V > scanAll {
		for _, id := range topIndices(logits, topK) {
			if j.allowed(id) {
				keep[id], found = true, true
			}
		}
	}
	if !found {
		for id := range V {
			if !math.IsInf(float64(logits[id]), -1) && j.allowed(int32(id)) {
				keep[id], found = true, true
			}
		}
	}
	if !found && len(j.eos) > 0 {
		keep[j.eos[0]] = true // nothing fits (cannot happen for a byte vocabulary): end
	}
	for id := range logits {
		if !keep[id] {
			logits[id] = float32(math.Inf(-1))
		}
	}
}

// Accept advances the document by the chosen token.
func (j *JSON) Accept(id int32) error {
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
	if suffix != "" {
		j.m.stack = append(j.m.stack, frame{kind: fLiteral, cands: []string{suffix}})
	}
	j.m.stack = append(j.m.stack, frame{kind: fValue, s: s})
	if prefix != "" {
		j.m.stack = append(j.m.stack, frame{kind: fLiteral, cands: []string{prefix}})
	}
	return j
}
