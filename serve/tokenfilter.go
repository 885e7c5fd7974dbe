package serve

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/hone-rl/hone/serve/engine"
)

// tokenFilter is vLLM's allowed_token_ids and bad_words as an
// engine.Constraint, around the output constraint (response_format, a
// forced tool call) when there is one: its mask comes after the logit
// bias and the penalties and before min_p, top_k and top_p, and the
// logprobs reported stay the raw model's, as with logit_bias.
type tokenFilter struct {
	allowed []int32       // nil: every token
	keep    []float32     // allowed's logits while the row is cleared
	bad     *badWordIndex // bad_words; nil: none
	out     []int32       // the tokens chosen so far, for bad's prefixes
	inner   engine.Constraint
}

func (f *tokenFilter) Mask(row []float32) {
	ninf := float32(math.Inf(-1))
	if f.allowed != nil {
		f.keep = f.keep[:0]
		for _, id := range f.allowed {
			f.keep = append(f.keep, row[id])
		}
		for i := range row {
			row[i] = ninf
		}
		for i, id := range f.allowed {
			row[id] = f.keep[i]
		}
	}
	if f.bad != nil {
		f.bad.mask(row, f.out)
	}
	if f.inner != nil {
		f.inner.Mask(row)
	}
}

func (f *tokenFilter) Accept(id int32) error {
	if f.bad != nil {
		f.out = append(f.out, id)
	}
	if f.inner != nil {
		return f.inner.Accept(id)
	}
	return nil
}

// filterTokens wraps the per-choice constraint cons (nil: none) with the
// request's allowed_token_ids and bad_words, refusing ids outside the
// vocabulary and empty lists or words with a 400 naming the field, and a
// request that samples and whose first token they leave no candidate
// (firstTokenLeft); cons comes back as is when the request has neither. p
// is the request's sampling parameters (max_tokens, min_tokens and
// stop_token_ids).
func (s *Server) filterTokens(f *samplingFields, p *engine.Params, cons func(int) engine.Constraint) (func(int) engine.Constraint, error) {
	if f.AllowedTokenIDs == nil && len(f.BadWords) == 0 {
		return cons, nil
	}
	var allowed []int32
	if f.AllowedTokenIDs != nil {
		if len(f.AllowedTokenIDs) == 0 {
			// As vLLM refuses it: no token could be chosen.
			return nil, badRequest("allowed_token_ids", "allowed_token_ids must not be empty")
		}
		for i, id := range f.AllowedTokenIDs {
			at := fmt.Sprintf("allowed_token_ids[%d]", i)
			if id == nil {
				return nil, badRequest(at, "%s: expected a 32-bit integer, got null", at)
			}
			if *id < 0 || int(*id) >= s.m.Config.Vocab {
				return nil, badRequest(at, "%s: token id %d is outside this model's vocabulary (0 to %d)", at, *id, s.m.Config.Vocab-1)
			}
			allowed = append(allowed, *id)
		}
	}
	var bad *badWordIndex
	if len(f.BadWords) > 0 {
		ids, err := s.badWordIDs(f.BadWords)
		if err != nil {
			return nil, err
		}
		bad = indexBadWords(ids)
	}
	filtered := func(i int) engine.Constraint {
		tf := &tokenFilter{allowed: allowed, bad: bad}
		if cons != nil {
			tf.inner = cons(i)
		}
		return tf
	}
	// An echo-only completion (max_tokens 0) samples no token: it is
	// answered with its prompt whatever its filters leave, as vLLM does.
	if p.MaxTokens > 0 {
		if err := s.firstTokenLeft(f, p, filtered(0), cons != nil); err != nil {
			return nil, err
		}
	}
	return filtered, nil
}

// firstTokenLeft refuses with a 400 naming allowed_token_ids (or bad_words)
// and what they clash with a request whose first token would have no
// candidate whatever the model says: c's mask (constrained: an output
// constraint is in it) over a row of finite logits, after min_tokens has
// held back the end-of-sequence and stop_token_ids as the engine does.
// Such a request could only fail, as the 500 constraint_no_token, a server
// fault, after costing a queue place and a prefill; what it asked for is
// knowable from its fields. Later tokens are not looked ahead to: whether
// a constraint can go on depends on the tokens drawn.
func (s *Server) firstTokenLeft(f *samplingFields, p *engine.Params, c engine.Constraint, constrained bool) error {
	row := make([]float32, s.m.Config.Vocab)
	ninf := float32(math.Inf(-1))
	if p.MinTokens > 0 {
		for _, id := range p.StopIDs {
			row[id] = ninf
		}
		for _, id := range s.eos {
			if int(id) < len(row) {
				row[id] = ninf
			}
		}
	}
	c.Mask(row)
	if slices.ContainsFunc(row, func(v float32) bool { return v > ninf }) {
		return nil
	}
	param := "allowed_token_ids"
	if f.AllowedTokenIDs == nil {
		param = "bad_words"
	}
	var with []string
	if f.AllowedTokenIDs != nil && len(f.BadWords) > 0 {
		with = append(with, "bad_words")
	}
	if p.MinTokens > 0 {
		with = append(with, "min_tokens (which holds back the end-of-sequence and stop_token_ids)")
	}
	if constrained {
		with = append(with, "response_format or tool_choice (whose output must begin otherwise)")
	}
	if len(with) == 0 {
		return badRequest(param, "%s leaves no token that can be chosen first", param)
	}
	return badRequest(param, "%s, with %s, leaves no token that can be chosen first", param, strings.Join(with, " and "))
}

// badWordIDs are the token sequences bad_words bans, as vLLM tokenizes
// them: each word without its leading spaces, and again after one space
// when that spells it with another first token in as many tokens (the
// word in the middle of a text, for tokenizers that fold the space into
// the word's first token).
func (s *Server) badWordIDs(words []string) ([][]int32, error) {
	var out [][]int32
	for i, w := range words {
		w = strings.TrimLeftFunc(w, isPySpace)
		ids := toInt32(s.tok.Encode(w, false))
		if len(ids) == 0 {
			at := fmt.Sprintf("bad_words[%d]", i)
			return nil, badRequest(at, "%s: a word must have a token (%q has none after its leading spaces)", at, words[i])
		}
		out = append(out, ids)
		if sp := toInt32(s.tok.Encode(" "+w, false)); len(sp) == len(ids) && sp[0] != ids[0] {
			out = append(out, sp)
		}
	}
	for _, ids := range out {
		for _, id := range ids {
			if int(id) >= s.m.Config.Vocab {
				return nil, badRequest("bad_words", "bad_words: token id %d of a word is outside this model's vocabulary (0 to %d)", id, s.m.Config.Vocab-1)
			}
		}
	}
	return out, nil
}

// badWordIndex is bad_words' token sequences as a radix tree of their
// prefixes read backwards, so that a step walks back from the output's
// last token only as far as some prefix goes on matching: what a step
// costs is the prefixes the output ends with and the tokens they ban, not
// the number of words. Comparing every word with the output on every
// step, as before, held the engine goroutine, which steps every request,
// some 12 ms a token with an 8 MiB body of two-letter words. Runs without
// a branch are one edge, so that the tree holds at most two nodes a word
// besides the words' tokens: a tree of a node a token took some 60 bytes
// a token, half a gigabyte for an 8 MiB word.
type badWordIndex struct {
	// child maps a node and the first token of a child's label
	// (node<<32 | token) to the child; node 0 is the empty prefix.
	child map[uint64]int32
	nodes []badWordNode
}

type badWordNode struct {
	label []int32 // the tokens from the parent's prefix to this one, read backwards
	bans  []int32 // the last tokens of the words whose prefix this is, each once
}

func badWordKey(node int32, id int32) uint64 { return uint64(node)<<32 | uint64(uint32(id)) }

// indexBadWords builds the index of words' token sequences, each at least
// one token long.
func indexBadWords(words [][]int32) *badWordIndex {
	x := &badWordIndex{child: map[uint64]int32{}, nodes: make([]badWordNode, 1)}
	seen := map[uint64]bool{}
	for _, w := range words {
		r := slices.Clone(w[:len(w)-1])
		slices.Reverse(r)
		node := x.insert(r)
		if k := badWordKey(node, w[len(w)-1]); !seen[k] {
			seen[k] = true
			x.nodes[node].bans = append(x.nodes[node].bans, w[len(w)-1])
		}
	}
	return x
}

// insert returns the node of the backwards prefix r, adding it (and
// splitting an edge that r leaves midway) when it is new.
func (x *badWordIndex) insert(r []int32) int32 {
	node := int32(0)
	for len(r) > 0 {
		k := badWordKey(node, r[0])
		c, ok := x.child[k]
		if !ok {
			x.nodes = append(x.nodes, badWordNode{label: r})
			x.child[k] = int32(len(x.nodes) - 1)
			return int32(len(x.nodes) - 1)
		}
		lab := x.nodes[c].label
		j := 0
		for j < len(lab) && j < len(r) && lab[j] == r[j] {
			j++
		}
		if j < len(lab) {
			mid := int32(len(x.nodes))
			x.nodes = append(x.nodes, badWordNode{label: lab[:j]})
			x.nodes[c].label = lab[j:]
			x.child[k] = mid
			x.child[badWordKey(mid, lab[j])] = c
			c = mid
		}
		node, r = c, r[j:]
	}
	return node
}

// mask applies vLLM's rule to row after the output out: a word's last
// token is banned where out ends with the tokens before it (a one-token
// word everywhere).
func (x *badWordIndex) mask(row []float32, out []int32) {
	ninf := float32(math.Inf(-1))
	node, pos := int32(0), len(out)
	for {
		for _, id := range x.nodes[node].bans {
			row[id] = ninf
		}
		if pos == 0 {
			return
		}
		c, ok := x.child[badWordKey(node, out[pos-1])]
		if !ok {
			return
		}
		lab := x.nodes[c].label
		if len(lab) > pos {
			return
		}
		for i, id := range lab {
			if out[pos-1-i] != id {
				return
			}
		}
		node, pos = c, pos-len(lab)
	}
}

// isPySpace is Python's str.isspace for one character, which vLLM's
// lstrip uses: Unicode's white space plus the ASCII separators 0x1c–0x1f.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}
