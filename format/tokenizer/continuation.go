package tokenizer

// EncodeContinuation returns the ids of text as it tokenizes right after
// prev, where prev is tokenized on its own (Encode(prev, false)): the
// tokens of a model that was given prev's ids and wrote text. Added tokens
// are matched in text alone, and no post-processor token is added.
//
// It differs from Encode(text, false) where text continues prev's plain
// text (prev is not empty and does not end with an added token): text is
// then not the start of a text, and gets nothing a tokenizer puts before
// one. A Prepend normalizer's "▁" (Llama 2's kind) stands before the start
// of prev's stretch, not before text: after "[/INST]", "]] ok" is "]]"
// "▁ok", where Encode gives "▁]" "]" "▁ok", a space the text lacks. So
// does the space ByteLevel's add_prefix_space puts before a text without
// a Split before it. (With a Split, ByteLevel puts one before every piece,
// and Encode(prev+text) does there too.) Where prev+text tokenizes with a
// token across the boundary, Encode(prev+text) has other tokens there; from
// a token boundary both share on, its ids are these.
func (t *Tokenizer) EncodeContinuation(prev, text string) []int {
	text = validUTF8(text)
	dst := make([]int, 0, len(text)/3+4)
	raw, sub := t.continues(validUTF8(prev))
	if !raw {
		return t.encodeText(dst, text, true, nil)
	}
	if t.rawSplit.empty() {
		return t.encodeContinued(dst, text, sub)
	}
	var buf [16]section
	for i, sec := range t.rawSplit.split(text, t.added, buf[:0]) {
		switch {
		case sec.added >= 0:
			dst = append(dst, t.added[sec.added].ID)
		case i == 0:
			dst = t.encodeContinued(dst, sec.text, sub)
		default:
			dst = t.encodeSection(dst, sec.text, true, nil)
		}
	}
	return dst
}

// continues says how a text after prev starts. raw: prev ends in plain
// text, which the normalizer saw as one with what follows (Encode's
// sections run between raw added tokens), so no Prepend goes before the
// text. sub: that text, normalized, also ends in plain text rather than a
// normalized added token, so the pre-tokenizer sees it as one with what
// follows, and no add_prefix_space goes before the text either.
func (t *Tokenizer) continues(prev string) (raw, sub bool) {
	last := section{text: prev, added: -1}
	if !t.rawSplit.empty() && prev != "" {
		secs := t.rawSplit.split(prev, t.added, nil)
		last = secs[len(secs)-1]
	}
	// An empty last text is nothing to continue: prev is "", or ends in
	// white space an rstrip added token took.
	if last.added >= 0 || last.text == "" {
		return false, false
	}
	if t.normSplit.empty() {
		return true, true
	}
	n := last.text
	if t.norm != nil {
		n = t.norm.apply(n)
	}
	secs := t.normSplit.split(n, t.added, nil)
	return true, secs[len(secs)-1].added < 0
}

// encodeContinued encodes text that holds no raw added token and continues
// prev's plain text (continues' raw): normalized without the Prepend steps
// (parseNormalizer keeps them first, before steps that work character by
// character, so the rest normalize text as they would inside prev+text),
// the normalized added tokens cut out, and the first piece pre-tokenized
// without add_prefix_space's space where sub says prev's normalized text
// ends plain.
func (t *Tokenizer) encodeContinued(dst []int, text string, sub bool) []int {
	if text == "" {
		return dst
	}
	if t.norm != nil {
		_, rest := t.norm.lead()
		text = rest.apply(text)
	}
	first := t.encodePlain
	if sub {
		first = t.encodePieces
	}
	if t.normSplit.empty() {
		return first(dst, text, nil)
	}
	var buf [16]section
	for i, sec := range t.normSplit.split(text, t.added, buf[:0]) {
		switch {
		case sec.added >= 0:
			dst = append(dst, t.added[sec.added].ID)
		case i == 0:
			dst = first(dst, sec.text, nil)
		default:
			dst = t.encodePlain(dst, sec.text, nil)
		}
	}
	return dst
}
