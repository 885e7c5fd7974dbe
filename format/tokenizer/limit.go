package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// Limited encodes text that may hold far more tokens than the caller will
// take (a server's prompt against the model's context): it says so at once
// when the text's length alone rules it out, and otherwise stops encoding as
// soon as the count passes the limit, so the work and memory are bounded by
// the limit, not by the text. Make it once per Tokenizer with Limited (that
// scans the vocabulary) and keep it; it is safe for concurrent use.
type Limited struct {
	t *Tokenizer
	// tokBytes is the most bytes of normalized text one token stands for:
	// the longest model token or added token.
	tokBytes int
	// strips is set when an added token has lstrip or rstrip: it swallows
	// the white space beside it, however long, so then the text's length
	// bounds nothing.
	strips bool
	// unbounded is set when a piece tokenizer may spell a run of
	// characters its vocabulary lacks, however long, with one unknown
	// token (fuse_unk) or none (no unk token): then no length bounds the
	// count, of a text or of one of its pre-tokens.
	unbounded bool
}

// normShrink bounds how many times shorter Unicode normalization makes a
// text: NFKC maps some 4-byte characters to one ASCII byte (U+107A5 → "q"),
// and composing a base with its marks never gains more.
const normShrink = 4

// Limited returns t's limited encoder.
func (t *Tokenizer) Limited() *Limited {
	l := &Limited{t: t, tokBytes: 1}
	for _, b := range t.tokBytes {
		l.tokBytes = max(l.tokBytes, len(b))
	}
	// A piece token covers its spelling in the normalized text ("▁"
	// three bytes where its text has one space).
	for _, s := range t.spell {
		l.tokBytes = max(l.tokBytes, len(s))
	}
	for _, a := range t.added {
		l.tokBytes = max(l.tokBytes, len(a.Content))
		if a.Normalized && t.norm != nil {
			l.tokBytes = max(l.tokBytes, len(t.norm.apply(a.Content)))
		}
		l.strips = l.strips || a.LStrip || a.RStrip
	}
	if p := t.pieces; p != nil && !(p.byteFallback && p.hasAllBytes()) {
		l.unbounded = p.unk < 0 || p.fuseUnk
	}
	return l
}

// leastTokens returns a lower bound on the tokens of text (without the
// post-processor's) from its length alone, or 0 when none holds.
func (l *Limited) leastTokens(text string) int {
	if l.strips || l.unbounded {
		return 0
	}
	perToken := l.tokBytes
	if l.t.norm != nil && !(utf8.ValidString(text) && l.t.norm.isIdentity(text)) {
		perToken *= normShrink
	}
	return ceilDiv(len(text), perToken)
}

// TooLongError says a text has more tokens than a limit allowed. AtLeast is
// a lower bound on its token count, above Limit: the count where encoding
// stopped, or what the text's length alone implies.
type TooLongError struct {
	AtLeast, Limit int
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("the text has at least %d tokens, more than the limit of %d", e.AtLeast, e.Limit)
}

// Encode returns t.Encode(text, addSpecial) when that has at most limit
// tokens, and a *TooLongError otherwise. A text too long for limit tokens
// as long as the longest one (allowing for normalization) is refused
// before any encoding; any other text is encoded pre-token by pre-token
// until the count passes the limit or the next pre-token cannot fit.
func (l *Limited) Encode(text string, addSpecial bool, limit int) ([]int, error) {
	prefix, suffix := 0, 0
	if addSpecial {
		prefix, suffix = len(l.t.prefix), len(l.t.suffix)
	}
	// Only a text longer than limit of the longest token can be refused
	// by its length; the test of that comes first, as leastTokens may scan
	// the text.
	if len(text) > (limit-prefix-suffix)*l.tokBytes {
		if least := prefix + l.leastTokens(text) + suffix; least > limit {
			return nil, &TooLongError{AtLeast: least, Limit: limit}
		}
	}
	// The ids hold the prefix while encoding; the suffix comes after.
	lim := &tokenCap{max: limit - suffix, tokBytes: l.tokBytes, unbounded: l.unbounded}
	ids := make([]int, 0, min(len(text)/3+4, limit+1))
	if addSpecial {
		ids = append(ids, l.t.prefix...)
	}
	ids = l.t.encodeText(ids, validUTF8(text), true, lim)
	if lim.done(ids) {
		return nil, &TooLongError{AtLeast: max(len(ids), lim.atLeast) + suffix, Limit: limit}
	}
	if addSpecial {
		ids = append(ids, l.t.suffix...)
	}
	return ids, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// tokenCap stops an encoding once its ids pass max, or once the next
// pre-token alone would take them past it (encode.go checks it between
// sections and pre-tokens). A nil *tokenCap never stops.
type tokenCap struct {
	max      int
	tokBytes int // most bytes of normalized text per token
	atLeast  int // set when a pre-token was refused: the count it implies
	// unbounded: a pre-token's length bounds nothing (Limited.unbounded).
	unbounded bool
}

// done reports whether the encoding has stopped: dst is over max, or a
// pre-token was refused.
func (c *tokenCap) done(dst []int) bool {
	return c != nil && (len(dst) > c.max || c.atLeast > 0)
}

// skip reports whether to stop before encoding piece: the encoding is done,
// or piece has more bytes than the tokens left could cover.
func (c *tokenCap) skip(dst []int, piece string) bool {
	if c == nil {
		return false
	}
	if c.done(dst) {
		return true
	}
	if c.unbounded {
		return false
	}
	if least := len(dst) + ceilDiv(len(piece), c.tokBytes); least > c.max {
		c.atLeast = least
		return true
	}
	return false
}
