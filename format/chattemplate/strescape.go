package chattemplate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/runenames"
)

// jinja2 decodes a string literal as Python's unicode-escape codec does:
// \r, \a, \b, \f, \v, octal \ooo, \xhh, \uhhhh, \Uhhhhhhhh, \N{name} and a
// backslash before a line break (which joins the lines), besides \n, \t,
// \\, \' and \" — the only ones the engine decodes; it keeps the rest as
// written, so '\r' was two characters and s.split('\r\n') split nothing.
// The tags are rewritten with each literal decoded here and written back
// with just the escapes the engine undoes (\\, the quote, and \n, so that
// the line numbers stay the template's); every other character, a
// control character included, stands for itself inside the engine's
// literal.

// pyStringLiterals rewrites the string literals of a tag's code as
// described above; a malformed escape is refused with jinja2's message.
func pyStringLiterals(code string) (string, error) {
	if !strings.Contains(code, `\`) {
		return code, nil
	}
	var b strings.Builder
	for i := 0; i < len(code); {
		c := code[i]
		if c != '\'' && c != '"' {
			b.WriteByte(c)
			i++
			continue
		}
		j := skipString(code, i)
		if j-i < 2 || code[j-1] != c || !strings.Contains(code[i+1:j-1], `\`) {
			b.WriteString(code[i:j]) // no escape, or unterminated: the engine's error
			i = j
			continue
		}
		text, err := decodePyEscapes(code[i+1 : j-1])
		if err != nil {
			return "", err
		}
		b.WriteByte(c)
		b.WriteString(strings.NewReplacer(`\`, `\\`, string(c), `\`+string(c), "\n", `\n`).Replace(text))
		b.WriteByte(c)
		i = j
	}
	return b.String(), nil
}

// simpleEscapes are the one-letter escapes of Python's unicode-escape
// (a backslash before a line break, which drops both, aside).
var simpleEscapes = map[byte]byte{'\\': '\\', '\'': '\'', '"': '"', 'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

// decodePyEscapes decodes the body of a string literal as Python's
// unicode-escape codec decodes it (jinja2's lexer).
func decodePyEscapes(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		c := s[i+1]
		i += 2
		if out, ok := simpleEscapes[c]; ok {
			b.WriteByte(out)
			continue
		}
		if c == '\n' {
			continue
		}
		switch {
		case c >= '0' && c <= '7':
			n, k := int(c-'0'), 0
			for ; k < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
				n = n*8 + int(s[i]-'0')
				i++
			}
			b.WriteRune(rune(n))
		case c == 'x' || c == 'u' || c == 'U':
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			n, err := strconv.ParseUint(s[i:min(i+width, len(s))], 16, 32)
			if err != nil || i+width > len(s) || strings.ContainsAny(s[i:i+width], "+-_") {
				return "", &staticError{fmt.Sprintf("truncated \\%c%s escape", c, strings.Repeat("X", width))}
			}
			if n > utf8.MaxRune {
				return "", &staticError{"illegal Unicode character"}
			}
			b.WriteRune(rune(n))
			i += width
		case c == 'N':
			r, end, err := unicodeByName(s, i)
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
			i = end
		case c >= utf8.RuneSelf:
			// jinja2 first writes a non-ASCII character as its
			// backslashreplace escape, which the backslash before it
			// then escapes: '\é' is \xe9 as text.
			r, size := utf8.DecodeRuneInString(s[i-1:])
			b.WriteString(`\` + backslashReplace(r))
			i += size - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// backslashReplace is Python's backslashreplace escape of r, without its
// backslash.
func backslashReplace(r rune) string {
	switch {
	case r < 0x100:
		return fmt.Sprintf("x%02x", r)
	case r < 0x10000:
		return fmt.Sprintf("u%04x", r)
	}
	return fmt.Sprintf("U%08x", r)
}

// unicodeByName reads the {name} of a \N escape starting at s[i] and
// returns its character and where the escape ends. Names match as in
// Python, ignoring case; aliases are not known here.
func unicodeByName(s string, i int) (rune, int, error) {
	end := strings.IndexByte(s[i:], '}')
	if i >= len(s) || s[i] != '{' || end < 2 {
		return 0, 0, &staticError{"malformed \\N character escape"}
	}
	name := strings.ToUpper(s[i+1 : i+end])
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if runenames.Name(r) == name {
			return r, i + end + 1, nil
		}
	}
	return 0, 0, &staticError{"unknown Unicode character name"}
}
