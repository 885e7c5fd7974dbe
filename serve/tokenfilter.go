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
	allowed []int32   // nil: every token
	keep    []float32 // allowed's logits while the row is cleared
	bad     [][]int32 // each banned word's tokens (bad_words)
	out     []int32   // the tokens chosen so far, for bad's prefixes
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
	// vLLM's rule: a word's last token is banned where the output ends
	// with the tokens before it (a one-token word everywhere).
	for _, w := range f.bad {
		pre := len(w) - 1
		if pre <= len(f.out) && slices.Equal(f.out[len(f.out)-pre:], w[:pre]) {
			row[w[pre]] = ninf
		}
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
	bad, err := s.badWordIDs(f.BadWords)
	if err != nil {
		return nil, err
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

// isPySpace is Python's str.isspace for one character, which vLLM's
// lstrip uses: Unicode's white space plus the ASCII separators 0x1c–0x1f.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}
