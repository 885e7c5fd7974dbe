package tokenizer

import "unicode/utf8"

// Decode returns the text of ids. Consecutive vocabulary tokens are joined as
// bytes and read as UTF-8 (each maximal invalid subpart becomes U+FFFD);
// added tokens contribute their content. With skipSpecial, special added
// tokens are dropped (bytes on both sides of one are joined). Ids outside the
// vocabulary are ignored. No clean-up of spaces is applied. A piece
// tokenizer's tokens (added ones too) are read as its decoder reads them:
// "▁" is a space and "<0xAB>" the byte AB, joined with the bytes around it;
// a decoder's Strip then takes its leading spaces off the whole text (Llama
// 2's: "▁Hello" alone decodes to "Hello").
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	var out, pending []byte
	for _, id := range ids {
		if id < 0 || id >= t.size {
			continue
		}
		if t.isAdded[id] {
			if skipSpecial && t.special[id] {
				continue
			}
			if t.pieces != nil {
				// Its decoded text is in tokBytes, and joins the bytes
				// around it as the reference's ByteFallback joins them.
				pending = append(pending, t.tokBytes[id]...)
				continue
			}
			out, _ = appendLossy(out, pending, true)
			pending = pending[:0]
			out = append(out, t.added[t.addedByID[id]].Content...)
			continue
		}
		pending = append(pending, t.tokBytes[id]...)
	}
	out, _ = appendLossy(out, pending, true)
	n := 0
	for n < t.strip && n < len(out) && out[n] == ' ' {
		n++
	}
	return string(out[n:])
}

// StreamDecoder decodes a token stream piece by piece, emitting only whole
// UTF-8 characters: bytes of a character split across tokens are held back
// until the character is complete. The concatenation of every Add and the
// final Flush equals Decode of the whole stream, but for a decoder's Strip:
// a stream is decoded as the continuation of the text before it (a
// completion of its prompt), so it keeps its leading spaces, as vLLM's
// detokenizer does ("▁Paris" after "The capital of France is" is " Paris").
// It is not safe for concurrent use; make one per stream.
type StreamDecoder struct {
	t           *Tokenizer
	skipSpecial bool
	pending     []byte
}

// NewStreamDecoder returns a decoder for one stream of ids.
func (t *Tokenizer) NewStreamDecoder(skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{t: t, skipSpecial: skipSpecial}
}

// Add consumes one id and returns the text that is now complete (often "").
func (d *StreamDecoder) Add(id int) string {
	t := d.t
	if id < 0 || id >= t.size {
		return ""
	}
	if t.isAdded[id] && t.pieces == nil {
		if d.skipSpecial && t.special[id] {
			return ""
		}
		out, _ := appendLossy(nil, d.pending, true)
		d.pending = d.pending[:0]
		return string(append(out, t.added[t.addedByID[id]].Content...))
	}
	if t.isAdded[id] && d.skipSpecial && t.special[id] {
		return ""
	}
	d.pending = append(d.pending, t.tokBytes[id]...)
	out, n := appendLossy(nil, d.pending, false)
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return string(out)
}

// Pending reports how many bytes of an incomplete character are held back.
func (d *StreamDecoder) Pending() int { return len(d.pending) }

// Flush returns what is held back (as U+FFFD: the character never completed)
// and resets the decoder.
func (d *StreamDecoder) Flush() string {
	out, _ := appendLossy(nil, d.pending, true)
	d.pending = d.pending[:0]
	return string(out)
}

// appendLossy appends src read as UTF-8 to dst, writing one U+FFFD for each
// maximal subpart of an ill-formed sequence (the WHATWG TextDecoder rule,
// also Rust's from_utf8_lossy). Unless final, an incomplete but so far valid
// sequence at the end of src is left unread; n is the number of bytes read.
func appendLossy(dst, src []byte, final bool) (out []byte, n int) {
	if final && utf8.Valid(src) {
		return append(dst, src...), len(src)
	}
	i := 0
	for i < len(src) {
		b := src[i]
		if b < utf8.RuneSelf {
			dst = append(dst, b)
			i++
			continue
		}
		need, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case b >= 0xC2 && b <= 0xDF:
			need = 1
		case b == 0xE0:
			need, lo = 2, 0xA0
		case b == 0xED:
			need, hi = 2, 0x9F
		case b >= 0xE1 && b <= 0xEF:
			need = 2
		case b == 0xF0:
			need, lo = 3, 0x90
		case b == 0xF4:
			need, hi = 3, 0x8F
		case b >= 0xF1 && b <= 0xF3:
			need = 3
		default:
			dst = utf8.AppendRune(dst, utf8.RuneError)
			i++
			continue
		}
		j := i + 1
		ok := true
		for k := 0; k < need; k++ {
			if j >= len(src) {
				if !final {
					return dst, i // hold the incomplete character back
				}
				ok = false
				break
			}
			c := src[j]
			if c < lo || c > hi {
				ok = false
				break
			}
			lo, hi = 0x80, 0xBF
			j++
		}
		if !ok {
			dst = utf8.AppendRune(dst, utf8.RuneError)
			i = j // the offending byte, if any, is read again
			continue
		}
		dst = append(dst, src[i:j]...)
		i = j
	}
	return dst, i
}
