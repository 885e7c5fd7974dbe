package tokenizer

import (
	"unicode/utf8"
)

// trie finds added tokens in text: at each position the longest token that
// starts there, scanning left to right (Hugging Face's DictionarySplitter).
type trie struct {
	first [256]bool // bytes that start some token
	nodes []trieNode
}

type trieNode struct {
	next  map[byte]int32
	token int32 // index into Tokenizer.added, or -1
}

func newTrie(words []string, index map[string]int) *trie {
	t := &trie{nodes: []trieNode{{token: -1}}}
	for _, w := range words {
		t.first[w[0]] = true
		n := int32(0)
		for i := 0; i < len(w); i++ {
			c, ok := t.nodes[n].next[w[i]]
			if !ok {
				if t.nodes[n].next == nil {
					t.nodes[n].next = map[byte]int32{}
				}
				c = int32(len(t.nodes))
				t.nodes[n].next[w[i]] = c
				t.nodes = append(t.nodes, trieNode{token: -1})
			}
			n = c
		}
		t.nodes[n].token = int32(index[w])
	}
	return t
}

func (t *trie) empty() bool { return len(t.nodes) == 1 }

// match returns the index of the longest token at s[i:] and its length, or -1.
func (t *trie) match(s string, i int) (int, int) {
	best, bestLen := -1, 0
	n := int32(0)
	for j := i; j < len(s); j++ {
		c, ok := t.nodes[n].next[s[j]]
		if !ok {
			break
		}
		n = c
		if tok := t.nodes[n].token; tok >= 0 {
			best, bestLen = int(tok), j+1-i
		}
	}
	return best, bestLen
}

// section is a piece of text between added tokens, or one added token.
type section struct {
	text  string
	added int // index into Tokenizer.added, or -1
	start int // byte offset of text in the string that was split
}

// split cuts s into sections at the added tokens of t, then applies their
// lstrip/rstrip flags to the neighbouring text.
func (tr *trie) split(s string, added []AddedToken, dst []section) []section {
	start := 0
	for i := 0; i < len(s); {
		if !tr.first[s[i]] {
			i++
			continue
		}
		tok, n := tr.match(s, i)
		if tok < 0 {
			i++
			continue
		}
		if i > start {
			dst = append(dst, section{s[start:i], -1, start})
		}
		dst = append(dst, section{s[i : i+n], tok, i})
		i += n
		start = i
	}
	if start < len(s) {
		dst = append(dst, section{s[start:], -1, start})
	}
	for k, sec := range dst {
		if sec.added < 0 {
			continue
		}
		a := added[sec.added]
		if a.LStrip && k > 0 && dst[k-1].added < 0 {
			dst[k-1].text = trimRightJS(dst[k-1].text)
		}
		if a.RStrip && k+1 < len(dst) && dst[k+1].added < 0 {
			old := dst[k+1].text
			dst[k+1].text = trimLeftJS(old)
			dst[k+1].start += len(old) - len(dst[k+1].text)
		}
	}
	return dst
}

// isJSSpace is JavaScript's String.prototype.trim white space, which the
// reference uses for lstrip/rstrip.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func trimRightJS(s string) string {
	for len(s) > 0 {
		r, w := utf8.DecodeLastRuneInString(s)
		if !isJSSpace(r) {
			break
		}
		s = s[:len(s)-w]
	}
	return s
}

func trimLeftJS(s string) string {
	for len(s) > 0 {
		r, w := utf8.DecodeRuneInString(s)
		if !isJSSpace(r) {
			break
		}
		s = s[w:]
	}
	return s
}

// Encode returns the token ids of text. Added and special tokens written in
// the text (such as "<|im_start|>") become their ids. With addSpecial the
// post-processor's tokens are added too (Llama 3's <|begin_of_text|>; none for
// Qwen). Invalid UTF-8 is first replaced by U+FFFD.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	return t.AppendEncode(make([]int, 0, len(text)/3+4), text, addSpecial)
}

// AppendEncode is Encode appending to dst.
func (t *Tokenizer) AppendEncode(dst []int, text string, addSpecial bool) []int {
	if addSpecial {
		dst = append(dst, t.prefix...)
	}
	dst = t.encodeText(dst, validUTF8(text), true, nil)
	if addSpecial {
		dst = append(dst, t.suffix...)
	}
	return dst
}

// EncodeOrdinary encodes text with no added-token matching: "<|im_start|>"
// inside text is spelled out with ordinary tokens. Use it for untrusted text
// that must not inject control tokens.
func (t *Tokenizer) EncodeOrdinary(text string) []int {
	return t.encodeText(make([]int, 0, len(text)/3+4), validUTF8(text), false, nil)
}

// encodeText encodes text; a non-nil lim stops it early (limit.go).
func (t *Tokenizer) encodeText(dst []int, text string, matchAdded bool, lim *tokenCap) []int {
	if !matchAdded || t.rawSplit.empty() {
		return t.encodeSection(dst, text, matchAdded, lim)
	}
	var buf [16]section
	for _, sec := range t.rawSplit.split(text, t.added, buf[:0]) {
		if lim.done(dst) {
			return dst
		}
		if sec.added >= 0 {
			dst = append(dst, t.added[sec.added].ID)
			continue
		}
		dst = t.encodeSection(dst, sec.text, true, lim)
	}
	return dst
}

// encodeSection normalizes text that holds no raw added token, cuts out the
// normalized added tokens and encodes the rest.
func (t *Tokenizer) encodeSection(dst []int, text string, matchAdded bool, lim *tokenCap) []int {
	if text == "" {
		return dst
	}
	if t.norm != nil {
		text = t.norm.apply(text)
	}
	if !matchAdded || t.normSplit.empty() {
		return t.encodePlain(dst, text, lim)
	}
	var buf [16]section
	for _, sec := range t.normSplit.split(text, t.added, buf[:0]) {
		if lim.done(dst) {
			return dst
		}
		if sec.added >= 0 {
			dst = append(dst, t.added[sec.added].ID)
			continue
		}
		dst = t.encodePlain(dst, sec.text, lim)
	}
	return dst
}

// encodePlain pre-tokenizes normalized text and runs BPE on each pre-token.
// ByteLevel's add_prefix_space, with no Split before it, puts a space
// before the text when it has none (a text that continues another does
// not get it: encodePieces).
func (t *Tokenizer) encodePlain(dst []int, text string, lim *tokenCap) []int {
	if text == "" {
		return dst
	}
	if t.prefixSp && (t.split == splitNone || t.split == splitGPT2) && text[0] != ' ' {
		text = " " + text
	}
	return t.encodePieces(dst, text, lim)
}

// encodePieces is encodePlain without the space put before the text.
func (t *Tokenizer) encodePieces(dst []int, text string, lim *tokenCap) []int {
	if text == "" {
		return dst
	}
	if t.split == splitNone {
		if lim.skip(dst, text) {
			return dst
		}
		if t.pieces != nil {
			return t.pieces.encodeWord(text, dst, nil)
		}
		return t.bpe.encodeWord(text, dst)
	}
	for i := 0; i < len(text); {
		j := nextPiece(text, i, t.split)
		piece := text[i:j]
		if lim.skip(dst, piece) {
			return dst
		}
		if t.prefixSp && t.split != splitGPT2 && piece[0] != ' ' {
			// ByteLevel after Split prefixes every piece, as the reference does.
			piece = " " + piece
		}
		dst = t.bpe.encodeWord(piece, dst)
		i = j
	}
	return dst
}

// validUTF8 returns s with each maximal invalid subpart replaced by U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out, _ := appendLossy(nil, []byte(s), true)
	return string(out)
}
