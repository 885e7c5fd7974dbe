package chattemplate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// Python's str.join, splitlines, removeprefix, removesuffix, zfill,
// ljust, rjust and center, and its isdigit, isalpha, isspace, isalnum,
// isupper and islower, which templates join and cut messages with
// ('\n\n'.join(parts)) and the engine had none of: each call failed with
// "not callable". The character classes are Go's unicode tables, which
// follow Unicode as Python's do; isdigit counts the decimal digits and the
// superscript and subscript ones, not the rarer digits Python counts too
// (circled ①).

// strExtra is the str method name of s (strMethod), or false when name is
// none of this file's.
func strExtra(s string, args []jinja.Value, kwargs map[string]jinja.Value, name string) (jinja.Value, bool, error) {
	switch name {
	case "join":
		v, err := pyJoin(s, args, kwargs)
		return v, true, err
	case "splitlines":
		keep, _ := param(args, kwargs, 0, "keepends")
		return jinja.NewList(stringValues(splitLines(s, keep.IsTruthy()))), true, nil
	case "removeprefix", "removesuffix":
		affix, ok := param(args, kwargs, 0, "prefix")
		if !ok || !affix.IsString() {
			return jinja.Undefined(), true, fmt.Errorf("TypeError: %s() argument must be str, not %s", name, pyTypeName(affix))
		}
		if name == "removeprefix" {
			return jinja.NewString(strings.TrimPrefix(s, affix.AsString())), true, nil
		}
		return jinja.NewString(strings.TrimSuffix(s, affix.AsString())), true, nil
	case "zfill", "ljust", "rjust", "center":
		v, err := pyPad(s, args, kwargs, name)
		return v, true, err
	}
	if is := charClass(name); is != nil {
		// Python's str.isX: true when s is not empty and each
		// character is of the class.
		all := s != ""
		for _, r := range s {
			all = all && is(r)
		}
		return jinja.NewBool(all), true, nil
	}
	if name == "isupper" || name == "islower" {
		return jinja.NewBool(pyCaseTest(s, name == "isupper")), true, nil
	}
	return jinja.Undefined(), false, nil
}

// strExtraNames are the str methods of this file.
func strExtraNames() []string {
	return []string{"join", "splitlines", "removeprefix", "removesuffix", "zfill", "ljust", "rjust", "center",
		"isdigit", "isalpha", "isspace", "isalnum", "isupper", "islower"}
}

// pyJoin is str.join(iterable): the strings of a list, the characters of
// a string or the keys of a dict, s between them; anything else is
// Python's TypeError. The result is refused past the value bytes limit
// before it is built: s repeated once per item could pass it.
func pyJoin(s string, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	it, ok := param(args, kwargs, 0, "iterable")
	var items []string
	switch {
	case ok && it.IsString():
		for _, r := range it.AsString() {
			items = append(items, string(r))
		}
	case ok && it.IsDict():
		items = it.AsDict().OrderedKeys()
	case ok && it.IsList():
		for i, v := range it.AsList().Items {
			if !v.IsString() {
				return jinja.Undefined(), fmt.Errorf("TypeError: sequence item %d: expected str instance, %s found", i, pyTypeName(v))
			}
			items = append(items, v.AsString())
		}
	default:
		return jinja.Undefined(), fmt.Errorf("TypeError: can only join an iterable")
	}
	size := int64(len(s)) * int64(max(len(items)-1, 0))
	for _, x := range items {
		size += int64(len(x))
	}
	if size > DefaultValueBytes {
		return jinja.Undefined(), fmt.Errorf("join: %d bytes is past the value bytes limit", size)
	}
	return jinja.NewString(strings.Join(items, s)), nil
}

// splitLines is str.splitlines: lines end at \n, \r, \r\n, \v, \f, \x1c,
// \x1d, \x1e, \x85, U+2028 and U+2029, kept with keepends; there is no
// empty line after the last break.
func splitLines(s string, keepEnds bool) []string {
	var lines []string
	for s != "" {
		end := strings.IndexFunc(s, func(r rune) bool {
			return strings.ContainsRune("\n\r\v\f\x1c\x1d\x1e\u0085\u2028\u2029", r)
		})
		if end < 0 {
			lines = append(lines, s)
			break
		}
		_, size := utf8.DecodeRuneInString(s[end:])
		if strings.HasPrefix(s[end:], "\r\n") {
			size = 2
		}
		if keepEnds {
			lines = append(lines, s[:end+size])
		} else {
			lines = append(lines, s[:end])
		}
		s = s[end+size:]
	}
	return lines
}

// pyPad is str.zfill(width), ljust(width, fillchar=' '), rjust and
// center: s padded to width characters (zfill with 0s after a leading
// sign; center with the odd one on the left when width is odd, CPython's
// rule). A width past the value bytes limit is refused, not allocated.
func pyPad(s string, args []jinja.Value, kwargs map[string]jinja.Value, name string) (jinja.Value, error) {
	w, ok := param(args, kwargs, 0, "width")
	if !ok || !(w.IsInt() || w.IsBool()) {
		return jinja.Undefined(), fmt.Errorf("TypeError: '%s' object cannot be interpreted as an integer", pyTypeName(w))
	}
	var width int64
	switch {
	case w.IsInt():
		width = w.AsInt()
	case w.AsBool(): // Python's bool is an int: True is 1
		width = 1
	}
	fill := " "
	if f, ok := param(args, kwargs, 1, "fillchar"); ok && name != "zfill" {
		if !f.IsString() || utf8.RuneCountInString(f.AsString()) != 1 {
			return jinja.Undefined(), fmt.Errorf("TypeError: The fill character must be exactly one character long")
		}
		fill = f.AsString()
	}
	n := int64(utf8.RuneCountInString(s))
	if width <= n {
		return jinja.NewString(s), nil
	}
	if width > DefaultValueBytes {
		return jinja.Undefined(), fmt.Errorf("%s: width %d is past the value bytes limit", name, width)
	}
	marg := width - n
	switch name {
	case "zfill":
		sign := ""
		if s != "" && (s[0] == '+' || s[0] == '-') {
			sign, s = s[:1], s[1:]
		}
		return jinja.NewString(sign + strings.Repeat("0", int(marg)) + s), nil
	case "ljust":
		return jinja.NewString(s + strings.Repeat(fill, int(marg))), nil
	case "rjust":
		return jinja.NewString(strings.Repeat(fill, int(marg)) + s), nil
	}
	left := marg/2 + (marg & width & 1)
	return jinja.NewString(strings.Repeat(fill, int(left)) + s + strings.Repeat(fill, int(marg-left))), nil
}

// charClass is the character test of Python's str.isdigit, isalpha,
// isspace or isalnum, or nil for another name.
func charClass(name string) func(rune) bool {
	switch name {
	case "isdigit":
		return pyDigit
	case "isalpha":
		return unicode.IsLetter
	case "isspace":
		// Python's white space: Unicode's, and \x1c to \x1f.
		return isPythonSpace
	case "isalnum":
		return func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }
	}
	return nil
}

// pyDigit is a decimal digit or a superscript or subscript one (², ₃).
func pyDigit(r rune) bool {
	return unicode.IsDigit(r) || r == 0xb2 || r == 0xb3 || r == 0xb9 || r == 0x2070 ||
		(r >= 0x2074 && r <= 0x2079) || (r >= 0x2080 && r <= 0x2089)
}

// pyCaseTest is str.isupper (upper) or islower: at least one cased
// character, and none in the other case or in title case.
func pyCaseTest(s string, upper bool) bool {
	cased := false
	for _, r := range s {
		isUp := unicode.IsUpper(r) || unicode.Is(unicode.Other_Uppercase, r)
		isLow := unicode.IsLower(r) || unicode.Is(unicode.Other_Lowercase, r)
		if unicode.IsTitle(r) || (upper && isLow) || (!upper && isUp) {
			return false
		}
		cased = cased || isUp || isLow
	}
	return cased
}

// stringValues are ss as template values.
func stringValues(ss []string) []jinja.Value {
	out := make([]jinja.Value, len(ss))
	for i, s := range ss {
		out[i] = jinja.NewString(s)
	}
	return out
}
