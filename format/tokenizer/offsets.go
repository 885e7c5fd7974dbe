package tokenizer

import (
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Span is a byte range [Start, End) of the text given to EncodeWithOffsets.
type Span struct{ Start, End int }

// EncodeWithOffsets is Encode that also reports, for each id, the bytes of
// text it stands for. A token that covers part of a character, or part of
// characters the normalizer merged, gets the whole character (so neighbouring
// spans may overlap), and the tokens of a Replace of several characters get
// the whole match; the post-processor's tokens get empty spans at the
// start and end. For invalid UTF-8 the offsets refer to the text after
// U+FFFD replacement. Use it to find which tokens a part of a rendered chat
// came from; it is slower than Encode.
func (t *Tokenizer) EncodeWithOffsets(text string, addSpecial bool) ([]int, []Span) {
	text = validUTF8(text)
	var ids []int
	var spans []Span
	if addSpecial {
		for _, id := range t.prefix {
			ids, spans = append(ids, id), append(spans, Span{0, 0})
		}
	}
	var secs []section
	if t.rawSplit.empty() {
		secs = []section{{text, -1, 0}}
	} else {
		secs = t.rawSplit.split(text, t.added, nil)
	}
	for _, sec := range secs {
		if sec.added >= 0 {
			ids = append(ids, t.added[sec.added].ID)
			spans = append(spans, Span{sec.start, sec.start + len(sec.text)})
			continue
		}
		ids, spans = t.encodeSectionOffsets(ids, spans, sec)
	}
	if addSpecial {
		for _, id := range t.suffix {
			ids, spans = append(ids, id), append(spans, Span{len(text), len(text)})
		}
	}
	return ids, spans
}

// alignment maps byte i of a normalized string to the original bytes of the
// normalization segment it came from: [from[i], to[i]).
type alignment struct{ from, to []int }

// normalizeAligned normalizes s segment by segment (segments between NFC
// boundaries normalize independently; with only Replace steps of one
// character each, so do single characters) and records where each output byte
// came from, offsets shifted by base.
//
// A Replace of several characters ("ab" by "xyz") may match across those
// boundaries, and normalizing the segments one by one would then give
// another text than normalizing s, and other ids than Encode. So the result
// is checked against the normalization of the whole: on a difference the
// segments are cut only outside the Replace patterns' matches in s, and if
// the text still differs, s is one segment (every token gets all of it).
//
// Text a Prepend step puts first is aligned with the first character, as
// the reference aligns it.
func (t *Tokenizer) normalizeAligned(s string, base int) (string, alignment) {
	var a alignment
	if t.norm == nil || s == "" {
		a.addChars(s, base)
		return s, a
	}
	lead, rest := t.norm.lead()
	out := make([]byte, 0, len(lead)+len(s))
	if lead != "" {
		_, w := utf8.DecodeRuneInString(s)
		out = append(out, lead...)
		for range len(lead) {
			a.from, a.to = append(a.from, base), append(a.to, base+w)
		}
	}
	n, m := len(out), len(a.from)
	charwise := rest.charwise()
	out = alignSegments(out, &a, s, base, rest, charwise, nil)
	if !charwise {
		whole := rest.apply(s)
		if string(out[n:]) != whole {
			truncate(&a, m)
			out = alignSegments(out[:n], &a, s, base, rest, false, rest.matchedInside(s))
		}
		if string(out[n:]) != whole {
			truncate(&a, m)
			out = append(out[:n], whole...)
			for range len(whole) {
				a.from, a.to = append(a.from, base), append(a.to, base+len(s))
			}
		}
	}
	return string(out), a
}

// truncate cuts a back to its first m bytes.
func truncate(a *alignment, m int) {
	a.from, a.to = a.from[:m], a.to[:m]
}

// alignSegments appends rest's normalization of s to out, segment by
// segment, and each output byte's origin to a. Segments are characters when
// charwise, else NFC segments, joined where inside[i] says byte i of s lies
// inside a match that must not be cut.
func alignSegments(out []byte, a *alignment, s string, base int, rest normalizer, charwise bool, inside []bool) []byte {
	for i := 0; i < len(s); {
		var k int
		if charwise {
			// Nothing is merged across characters: a space before a
			// combining mark is aligned to itself, not to both.
			_, k = utf8.DecodeRuneInString(s[i:])
		} else {
			k = norm.NFC.NextBoundaryInString(s[i:], true)
			for k > 0 && i+k < len(s) && inside != nil && inside[i+k] {
				next := norm.NFC.NextBoundaryInString(s[i+k:], true)
				if next <= 0 {
					k = len(s) - i
					break
				}
				k += next
			}
		}
		if k <= 0 {
			k = len(s) - i
		}
		orig := s[i : i+k]
		seg := rest.apply(orig)
		out = append(out, seg...)
		if seg == orig {
			a.addChars(orig, base+i)
		} else {
			for range len(seg) {
				a.from, a.to = append(a.from, base+i), append(a.to, base+i+k)
			}
		}
		i += k
	}
	return out
}

// addChars aligns s to itself at offset base, a byte to its whole character.
func (a *alignment) addChars(s string, base int) {
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j]&0xC0 == 0x80 {
			j++
		}
		for range j - i {
			a.from, a.to = append(a.from, base+i), append(a.to, base+j)
		}
		i = j
	}
}

func (t *Tokenizer) encodeSectionOffsets(ids []int, spans []Span, sec section) ([]int, []Span) {
	text, al := t.normalizeAligned(sec.text, sec.start)
	subs := []section{{text, -1, 0}}
	if !t.normSplit.empty() {
		subs = t.normSplit.split(text, t.added, nil)
	}
	span := func(i, j int) Span { // normalized [i, j) → original
		i = min(max(i, 0), len(al.from)-1)
		j = min(max(j, i+1), len(al.to))
		return Span{al.from[i], al.to[j-1]}
	}
	for _, sub := range subs {
		if sub.text == "" {
			continue
		}
		if sub.added >= 0 {
			ids = append(ids, t.added[sub.added].ID)
			spans = append(spans, span(sub.start, sub.start+len(sub.text)))
			continue
		}
		// Encode the subsection piece by piece, as encodePlain does, and give
		// each new token the bytes it covers; pos is where piece would start
		// in the normalized text (one byte early when ByteLevel's
		// add_prefix_space put a space before it that covers nothing).
		add := func(piece string, pos int) {
			n := len(ids)
			if t.pieces != nil {
				// A piece token's length in the normalized text is not
				// that of its bytes ("▁" is three bytes, decoded to one).
				var lens []int32
				ids = t.pieces.encodeWord(piece, ids, &lens)
				for _, l := range lens {
					spans = append(spans, span(pos, pos+int(l)))
					pos += int(l)
				}
				return
			}
			ids = t.bpe.encodeWord(piece, ids)
			for _, id := range ids[n:] {
				l := len(t.tokBytes[id])
				spans = append(spans, span(pos, pos+l))
				pos += l
			}
		}
		text, at := sub.text, sub.start
		if t.prefixSp && t.split != splitQwen2 && t.split != splitLlama3 && text[0] != ' ' {
			text, at = " "+text, at-1 // one prefix for the whole text
		}
		if t.split == splitNone {
			add(text, at)
			continue
		}
		for i := 0; i < len(text); {
			j := nextPiece(text, i, t.split)
			piece, pos := text[i:j], at+i
			if t.prefixSp && t.split != splitGPT2 && piece[0] != ' ' {
				piece, pos = " "+piece, pos-1 // a prefix for every piece
			}
			add(piece, pos)
			i = j
		}
	}
	return ids, spans
}
