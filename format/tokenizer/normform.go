package tokenizer

import (
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// cgj is U+034F COMBINING GRAPHEME JOINER, which x/text's norm inserts.
const cgj = "\u034f"

// normForm returns s in Unicode normalization form f as Unicode defines it,
// which is what the references compute (Rust's unicode-normalization,
// JavaScript's String.prototype.normalize). x/text's norm follows the
// Stream-Safe Text Format instead (UAX #15): after 30 non-starters in a row
// it inserts U+034F and orders the marks only within each 30, so Zalgo text
// ("e" and 40 combining marks) got a character the text did not have and
// marks in another order: other tokens than the model was served. Such text
// is rare; it is found by the U+034F the output gains and normalized again
// here without the limit.
func normForm(f norm.Form, s string) string {
	out := f.String(s)
	if !strings.Contains(out, cgj) || strings.Count(out, cgj) == strings.Count(s, cgj) {
		return out
	}
	var b strings.Builder
	b.Grow(len(out))
	// A text normalizes piece by piece between ASCII characters: they
	// decompose to themselves, never compose with the character before
	// them, and marks after one are not moved before it.
	for start := 0; start < len(s); {
		end := start + 1
		for end < len(s) && s[end] >= utf8.RuneSelf {
			end++
		}
		piece := s[start:end]
		if p := f.String(piece); strings.Count(p, cgj) == strings.Count(piece, cgj) {
			b.WriteString(p)
		} else {
			b.WriteString(normUnlimited(f, piece))
		}
		start = end
	}
	return b.String()
}

// normUnlimited is the normalization of UAX #15 spelled out: full
// decomposition, canonical ordering of every run of non-starters (a stable
// sort by combining class), then for NFC and NFKC canonical composition.
// It is slow (a norm call per character) and used only where norm's
// stream-safe limit changed the text.
func normUnlimited(f norm.Form, s string) string {
	decompose := norm.NFD
	if f == norm.NFKC || f == norm.NFKD {
		decompose = norm.NFKD
	}
	var cs []classed
	for _, r := range s {
		// One character's decomposition is short and already in order.
		for _, d := range decompose.String(string(r)) {
			cs = append(cs, classed{d, norm.NFD.PropertiesString(string(d)).CCC()})
		}
	}
	for i := 0; i < len(cs); {
		if cs[i].ccc == 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(cs) && cs[j].ccc != 0 {
			j++
		}
		slices.SortStableFunc(cs[i:j], func(a, b classed) int { return int(a.ccc) - int(b.ccc) })
		i = j
	}
	if f == norm.NFC || f == norm.NFKC {
		cs = composeCanonical(cs)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range cs {
		b.WriteRune(c.r)
	}
	return b.String()
}

// classed is a character and its canonical combining class.
type classed struct {
	r   rune
	ccc uint8
}

// composeCanonical is UAX #15's canonical composition of a decomposed,
// canonically ordered text: each character joins the last starter when
// nothing between them blocks it (a starter, or a mark of its class or
// higher) and the two have a primary composite, which norm.NFC finds.
func composeCanonical(cs []classed) []classed {
	out := cs[:0]
	starter := -1
	last := 0 // class of the last character kept after the starter; 0: none
	for _, x := range cs {
		c := int(x.ccc)
		if starter >= 0 && (last == 0 && len(out) == starter+1 || last < c) {
			if p := []rune(norm.NFC.String(string(out[starter].r) + string(x.r))); len(p) == 1 {
				out[starter].r = p[0]
				continue
			}
		}
		if c == 0 {
			starter, last = len(out), 0
		} else {
			last = c
		}
		out = append(out, x)
	}
	return out
}
