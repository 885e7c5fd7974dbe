package tokenizer

import "strings"

// The ByteLevel table (GPT-2's bytes_to_unicode): printable bytes stand for
// themselves, the other 68 bytes are moved to U+0100 onwards in byte order, so
// every byte has a visible, non-space character. runeToByte inverts it, -1
// for the characters outside it (an array: reading a vocabulary looks up
// every character of 151k tokens).
var byteToRune, runeToByte = func() (b2r [256]rune, r2b [256 + 68]int16) {
	for r := range r2b {
		r2b[r] = -1
	}
	printable := func(b int) bool {
		return b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF
	}
	n := 0
	for b := 0; b < 256; b++ {
		if printable(b) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = int16(b)
	}
	return b2r, r2b
}()

// ByteLevelAlphabet returns the ByteLevel table: the character that stands
// for each byte in a byte-level BPE vocabulary. Tools that write tiny
// tokenizers use it to spell their vocabulary as this package reads it.
func ByteLevelAlphabet() [256]rune { return byteToRune }

// mapByteLevel spells raw bytes in the ByteLevel alphabet.
func mapByteLevel(raw []byte) string {
	var sb strings.Builder
	sb.Grow(2 * len(raw))
	for _, b := range raw {
		sb.WriteRune(byteToRune[b])
	}
	return sb.String()
}

// appendUnmapped appends the raw bytes behind the ByteLevel spelling s to
// out; ok is false when s holds a character outside the table.
func appendUnmapped(out []byte, s string) (_ []byte, ok bool) {
	for _, r := range s {
		if r < 0 || int(r) >= len(runeToByte) || runeToByte[r] < 0 {
			return nil, false
		}
		out = append(out, byte(runeToByte[r]))
	}
	return out, true
}
