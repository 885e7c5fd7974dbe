package chattemplate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// stringName is the variable our string filter is passed as (renameFilters).
const stringName = "__hone_string"

// pythonStr is Python's str(v), which jinja2 prints a {{ }} value with and
// its string filter returns: None as "None", a float as its repr (1.0, not
// the engine's 1), and a list or dict as Python's repr of it, with each
// string quoted as Python quotes it and each float as its repr. The engine
// printed [1.0] as [1], {'q': "it's"} as {'q': 'it's'} and None as "", so a
// template printing a tool's schema (Hammer 2.1's tools|string) or a float
// argument (Qwen3.5's and Qwen3-Coder's args_value|string, LFM2's and
// MiniCPM3's) wrote other text than the model was trained on. Undefined is
// "" and any other value prints as the engine prints it.
func pythonStr(v jinja.Value) string {
	switch {
	case v.IsString():
		return v.AsString()
	case v.IsUndefined():
		return ""
	}
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

// writeRepr writes Python's repr(v). Callers bound v's depth first
// (budget.measure): a list that contains itself would recurse forever.
func writeRepr(b *strings.Builder, v jinja.Value) {
	switch {
	case v.IsString():
		writeStrRepr(b, v.AsString())
	case v.IsNone():
		b.WriteString("None")
	case v.IsBool():
		if v.IsTruthy() {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pythonFloatStr(v.AsFloat()))
	case v.IsList():
		b.WriteByte('[')
		for i, it := range v.AsList().Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, it)
		}
		b.WriteByte(']')
	case v.IsDict() && isEngineLoop(v.AsDict()):
		fmt.Fprintf(b, "<LoopContext %s/%s>", v.AsDict().Data["index"].String(), v.AsDict().Data["length"].String())
	case v.IsDict():
		d := v.AsDict()
		b.WriteByte('{')
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeStrRepr(b, k)
			b.WriteString(": ")
			writeRepr(b, d.Data[k])
		}
		b.WriteByte('}')
	case v.IsUndefined():
		b.WriteString("Undefined")
	default:
		b.WriteString(v.String())
	}
}

// writeStrRepr writes Python's repr of a str: in single quotes, or double
// quotes when it holds a single quote and no double quote; backslash, the
// quote, \t, \n and \r escaped, and characters Python does not print
// (str.isprintable) as \xhh, \uhhhh or \Uhhhhhhhh.
func writeStrRepr(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			// Not UTF-8; Go strings may hold it, Python's str cannot.
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r == '\\' || r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == ' ' || unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		case r < 0x100:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
		i += n
	}
	b.WriteByte(q)
}

// isEngineLoop reports whether d is the engine's loop object, which
// jinja2's LoopContext prints as <LoopContext index/length> where the dict
// printed {'length': N}: the engine sets its per-iteration keys (index,
// index0, ...) in Data alone, which no dict of the template's does.
func isEngineLoop(d *jinja.Dict) bool {
	return d.Has("index") && d.Has("length") && !slices.Contains(d.Keys, "index")
}
