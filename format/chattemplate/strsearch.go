package chattemplate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// Python's str.find, rfind, index, rindex and count, title and
// capitalize, and jinja2's title filter, which templates cut and label
// messages with. The engine's find and count counted bytes, not
// characters (so s[:s.find(x)] cut elsewhere in non-ASCII text) and
// ignored start and end; it had no rfind, index or rindex (a call in a
// slice, s[:s.index(x)], rendered as "" without an error); its title
// method was jinja2's title filter and its filter Python's title method;
// its capitalize method lowercased nothing.

// pySearch is str.find, rfind, index, rindex or count (name) of s.
func pySearch(s string, args []jinja.Value, kwargs map[string]jinja.Value, name string) (jinja.Value, error) {
	sub, ok := param(args, kwargs, 0, "sub")
	if !ok || !sub.IsString() {
		return jinja.Undefined(), fmt.Errorf("TypeError: %s() argument must be a string", name)
	}
	hay, needle := []rune(s), []rune(sub.AsString())
	start, end, err := sliceBounds(args, len(hay), name)
	if err != nil {
		return jinja.Undefined(), err
	}
	if name == "count" {
		if end-start < len(needle) {
			return jinja.NewInt(0), nil
		}
		if len(needle) == 0 {
			return jinja.NewInt(int64(end - start + 1)), nil
		}
		return jinja.NewInt(int64(strings.Count(string(hay[start:end]), string(needle)))), nil
	}
	found := -1
	if end-start >= len(needle) {
		window := hay[start:end]
		for i := 0; i+len(needle) <= len(window); i++ {
			if string(window[i:i+len(needle)]) == string(needle) {
				found = start + i
				if name == "find" || name == "index" {
					break
				}
			}
		}
	}
	if found < 0 && (name == "index" || name == "rindex") {
		return jinja.Undefined(), fmt.Errorf("ValueError: substring not found")
	}
	return jinja.NewInt(int64(found)), nil
}

// sliceBounds are the optional start and end arguments (after the first)
// of a str search, integers, booleans (Python's are ints) or None,
// adjusted as Python adjusts a slice's: negative ones count from the end,
// and they are clamped to [0, n] (start may pass n, which finds nothing).
func sliceBounds(args []jinja.Value, n int, name string) (start, end int, err error) {
	start, end = 0, n
	for i := 1; i <= 2 && i < len(args); i++ {
		v := args[i]
		if v.IsNone() {
			continue
		}
		var idx int
		switch {
		case v.IsInt():
			idx = int(v.AsInt())
		case v.IsBool(): // Python's bool is an int: True is 1
			if v.AsBool() {
				idx = 1
			}
		default:
			return 0, 0, fmt.Errorf("TypeError: slice indices of %s() must be integers or None", name)
		}
		if idx < 0 {
			idx = max(idx+n, 0)
		}
		if i == 1 {
			start = idx
		} else {
			end = min(idx, n)
		}
	}
	return start, end, nil
}

// listSearch is Python's list.index(x) and list.count(x).
func listSearch(l *jinja.List, args []jinja.Value, name string) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("TypeError: list.%s() takes exactly one argument (%d given)", name, len(args))
	}
	count := 0
	for i, v := range l.Items {
		if v.Equals(args[0]) {
			if name == "index" {
				return jinja.NewInt(int64(i)), nil
			}
			count++
		}
	}
	if name == "index" {
		return jinja.Undefined(), fmt.Errorf("ValueError: %s is not in list", reprOf(args[0]))
	}
	return jinja.NewInt(int64(count)), nil
}

// isCased is Python's notion of a cased character (Unicode's Cased
// property): one with an upper, lower or title case form of its own, or
// one of Other_Lowercase or Other_Uppercase (ª, ⅰ).
func isCased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// Python's case mappings are Unicode's full ones (ß is Ss in title case
// and SS in upper case, İ is i and a combining dot in lower case, a final
// Σ is ς), which Go's unicode package has not; x/text/cases has them.
// A Caser keeps state, so each call makes its own.

func fullLower(s string) string { return cases.Lower(language.Und).String(s) }
func fullUpper(s string) string { return cases.Upper(language.Und).String(s) }
func fullTitle(r rune) string {
	return cases.Title(language.Und, cases.NoLower).String(string(r))
}

// pyTitle is Python's str.title: a cased character after an uncased one
// (or at the start) in title case, every other one in lower case
// ("what's 2nd" is What'S 2Nd). Each character is lowered on its own, so
// a final Σ is σ where Python, which looks at its neighbours, writes ς.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		if prevCased {
			b.WriteString(fullLower(string(r)))
		} else {
			b.WriteString(fullTitle(r))
		}
		prevCased = isCased(r)
	}
	return b.String()
}

// pyCapitalize is Python's str.capitalize: the first character in title
// case, the rest in lower case as lowered in place (a final Σ after the
// first letter is ς), hence the whole string lowered without the first
// character's lower case form.
func pyCapitalize(s string) string {
	for _, r := range s {
		return fullTitle(r) + fullLower(s)[len(fullLower(string(r))):]
	}
	return s
}

// titleFilter is jinja2's title filter: each word, after a run of white
// space (Python's, \x1c to \x1f included) or of -, (, {, [ and <, with its
// first character in upper case and the rest, as a string, in lower case
// ("what's" stays What's, "tool_call" is Tool_call).
func titleFilter(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), fmt.Errorf("title: no value")
	}
	s := pythonStr(args[0])
	isSep := func(r rune) bool {
		return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) || strings.ContainsRune("-({[<", r)
	}
	var b strings.Builder
	for s != "" {
		word := strings.IndexFunc(s, func(r rune) bool { return !isSep(r) })
		if word < 0 {
			word = len(s)
		}
		b.WriteString(s[:word])
		s = s[word:]
		end := strings.IndexFunc(s, isSep)
		if end < 0 {
			end = len(s)
		}
		if end > 0 {
			r, size := utf8.DecodeRuneInString(s)
			b.WriteString(fullUpper(string(r)) + fullLower(s[size:end]))
		}
		s = s[end:]
	}
	return jinja.NewString(b.String()), nil
}

// reprOf is Python's repr() of v, as an item of a printed list shows it.
func reprOf(v jinja.Value) string {
	return strings.TrimSuffix(strings.TrimPrefix(pythonStr(jinja.NewList([]jinja.Value{v})), "["), "]")
}
