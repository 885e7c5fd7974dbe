package chattemplate

import (
	"strings"
	"unicode"

	"github.com/ardanlabs/jinja"
)

// trimName is the variable our trim filter is passed as; like tojson, the
// template text is rewritten to call it (renameFilters).
const trimName = "__hone_trim"

// trimFilter is jinja2's trim: value.strip(chars). Without chars it strips
// what Python's str.strip() strips, which is unicode.IsSpace and U+001C..
// U+001F (the engine's trim strips only the former). Values other than
// strings print as the engine prints them.
func trimFilter(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewString(""), nil
	}
	s := engineText(args[0])
	if len(args) > 1 {
		return jinja.NewString(strings.Trim(s, engineText(args[1]))), nil
	}
	return jinja.NewString(strings.TrimFunc(s, isPythonSpace)), nil
}

// isPythonSpace is Python's str.isspace for one character.
func isPythonSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// engineText is a value as the engine's filters take it as text.
func engineText(v jinja.Value) string {
	switch {
	case v.IsString():
		return v.AsString()
	case v.IsUndefined(), v.IsNone(), v.IsCallable():
		return ""
	}
	return v.String()
}
