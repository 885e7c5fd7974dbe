package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// DecodeJSON parses one JSON value into a template value, keeping object
// keys in the order they appear (as Python's json.loads does). Numbers
// without a fraction or exponent become integers, the rest floats, so that
// tojson writes them back the way Python would.
func DecodeJSON(data []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), errors.New("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				key, ok := kt.(string)
				if !ok {
					return jinja.Undefined(), fmt.Errorf("object key is %T, not a string", kt)
				}
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), fmt.Errorf("key %q: %w", key, err)
				}
				d.AsDict().Set(key, v)
			}
			if _, err := dec.Token(); err != nil { // '}'
				return jinja.Undefined(), err
			}
			return d, nil
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), fmt.Errorf("item %d: %w", len(items), err)
				}
				items = append(items, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return jinja.Undefined(), err
			}
			if items == nil {
				items = []jinja.Value{}
			}
			return jinja.NewList(items), nil
		}
		return jinja.Undefined(), fmt.Errorf("unexpected delimiter %q", t)
	case json.Number:
		return numberValue(t)
	case string:
		return jinja.NewString(t), nil
	case bool:
		return jinja.NewBool(t), nil
	case nil:
		return jinja.None(), nil
	}
	return jinja.Undefined(), fmt.Errorf("unexpected JSON token %v", tok)
}

func numberValue(n json.Number) (jinja.Value, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return jinja.NewInt(i), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("number %s: %w", s, err)
	}
	return jinja.NewFloat(f), nil
}

// jsonOptions are the arguments of Python's json.dumps that chat templates
// pass through tojson.
type jsonOptions struct {
	indent      int  // spaces per level
	hasIndent   bool // indent given (0 still breaks lines, as in Python)
	ensureASCII bool
	sortKeys    bool
	itemSep     string
	keySep      string
	maxBytes    int64 // stop with errJSONTooBig past this many bytes; 0: no limit
}

// Errors of tojson under a rendering's limits.
var (
	errJSONTooBig  = errors.New("tojson: output too large")
	errJSONTooDeep = errors.New("tojson: value nested too deeply")
)

// ToJSON writes v as Python's json.dumps(v, ensure_ascii=False) does, which
// is what transformers' tojson filter calls: ", " and ": " separators, keys
// in insertion order, non-ASCII text unescaped, floats in Python's repr.
func ToJSON(v jinja.Value) (string, error) {
	var sb strings.Builder
	err := encodeJSON(&sb, v, jsonOptions{itemSep: ", ", keySep: ": "}, 0)
	return sb.String(), err
}

// tojsonFilter is the tojson filter: json.dumps(x, ensure_ascii=False,
// indent=indent, separators=separators, sort_keys=sort_keys), the signature
// transformers registers. With an indent, Python's item separator drops its
// trailing space.
func tojsonFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	return tojsonLimited(args, kwargs, 0)
}

// tojsonLimited is tojsonFilter writing at most maxBytes (0: no limit).
func tojsonLimited(args []jinja.Value, kwargs map[string]jinja.Value, maxBytes int64) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: no value")
	}
	o := jsonOptions{itemSep: ", ", keySep: ": ", maxBytes: maxBytes}
	if v, ok := kwargs["indent"]; ok && !v.IsNone() && !v.IsUndefined() {
		switch {
		case v.IsInt():
			o.indent, o.hasIndent = int(v.AsInt()), true
		case v.IsString(): // Python allows a string used as the indent unit
			return jinja.Undefined(), errors.New("tojson: string indent is not supported")
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an integer, not %s", v.String())
		}
		o.itemSep = ","
	}
	if len(args) > 1 && o.hasIndent == false && args[1].IsInt() { // tojson(4) positional
		o.indent, o.hasIndent, o.itemSep = int(args[1].AsInt()), true, ","
	}
	if v, ok := kwargs["ensure_ascii"]; ok {
		o.ensureASCII = v.IsTruthy()
	}
	if v, ok := kwargs["sort_keys"]; ok {
		o.sortKeys = v.IsTruthy()
	}
	if v, ok := kwargs["separators"]; ok && !v.IsNone() && !v.IsUndefined() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
			return jinja.Undefined(), errors.New("tojson: separators must be two strings")
		}
		o.itemSep, o.keySep = v.AsList().Get(0).AsString(), v.AsList().Get(1).AsString()
	}
	var sb strings.Builder
	if err := encodeJSON(&sb, args[0], o, 0); err != nil {
		return jinja.Undefined(), fmt.Errorf("tojson: %w", err)
	}
	return jinja.NewString(sb.String()), nil
}

func encodeJSON(sb *strings.Builder, v jinja.Value, o jsonOptions, depth int) error {
	// A list that contains itself would recurse without end.
	if depth > maxValueDepth {
		return errJSONTooDeep
	}
	if o.maxBytes > 0 && int64(sb.Len()) > o.maxBytes {
		return errJSONTooBig
	}
	switch {
	case v.IsUndefined(), v.IsNone():
		// Python cannot serialize jinja2's Undefined; @huggingface/jinja
		// writes null, and so do we rather than fail a whole render.
		sb.WriteString("null")
	case v.IsBool():
		if v.AsBool() {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case v.IsInt():
		sb.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		sb.WriteString(pythonFloat(v.AsFloat()))
	case v.IsString():
		writeJSONString(sb, v.AsString(), o.ensureASCII)
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			sb.WriteString("[]")
			return nil
		}
		sb.WriteByte('[')
		for i, item := range items {
			if i > 0 {
				sb.WriteString(o.itemSep)
			}
			newline(sb, o, depth+1)
			if err := encodeJSON(sb, item, o, depth+1); err != nil {
				return err
			}
		}
		newline(sb, o, depth)
		sb.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.OrderedKeys()
		if len(keys) == 0 {
			sb.WriteString("{}")
			return nil
		}
		if o.sortKeys {
			sortStrings(keys)
		}
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteString(o.itemSep)
			}
			newline(sb, o, depth+1)
			writeJSONString(sb, k, o.ensureASCII)
			sb.WriteString(o.keySep)
			val, _ := d.Get(k)
			if err := encodeJSON(sb, val, o, depth+1); err != nil {
				return err
			}
		}
		newline(sb, o, depth)
		sb.WriteByte('}')
	default:
		return fmt.Errorf("cannot encode %s as JSON", v.String())
	}
	return nil
}

func newline(sb *strings.Builder, o jsonOptions, depth int) {
	if !o.hasIndent {
		return
	}
	sb.WriteByte('\n')
	// Python's ' ' * n is empty for a negative n; strings.Repeat panics.
	n := max(o.indent, 0) * depth
	if o.maxBytes > 0 && int64(sb.Len())+int64(n) > o.maxBytes {
		n = int(o.maxBytes) + 1 - sb.Len() // just past the limit: the caller reports it
	}
	sb.WriteString(strings.Repeat(" ", max(n, 0)))
}

// sortStrings orders keys by code point, as Python's sorted() does on str
// (byte order of UTF-8 is code point order).
func sortStrings(s []string) { slices.Sort(s) }

// writeJSONString quotes s as Python's json module does: only '"', '\\' and
// control characters below U+0020 are escaped (with ensure_ascii, also every
// non-ASCII code point, as \uXXXX or a surrogate pair). Invalid UTF-8 bytes
// become U+FFFD, which is what Python sees after decoding with
// errors="replace".
func writeJSONString(sb *strings.Builder, s string, ensureASCII bool) {
	const hex = "0123456789abcdef"
	sb.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			sb.WriteString(`\"`)
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == '\b':
			sb.WriteString(`\b`)
		case r == '\f':
			sb.WriteString(`\f`)
		case r < 0x20:
			sb.WriteString(`\u00`)
			sb.WriteByte(hex[r>>4])
			sb.WriteByte(hex[r&0xf])
		case ensureASCII && r > 0x7e:
			writeUnicodeEscape(sb, r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
}

func writeUnicodeEscape(sb *strings.Builder, r rune) {
	if r > 0xffff {
		r -= 0x10000
		fmt.Fprintf(sb, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		return
	}
	fmt.Fprintf(sb, `\u%04x`, r)
}

// pythonFloatStr is Python's str(f): its repr, with inf, -inf and nan.
func pythonFloatStr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return pythonFloat(f)
}

// pythonFloat formats f like Python's float repr (which json.dumps uses):
// the shortest digits that round-trip, positional notation for decimal
// exponents in [-4, 16), scientific otherwise, and always a ".0" or an
// exponent so the value reads back as a float. NaN and infinities follow
// json.dumps' allow_nan=True spelling.
func pythonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	// Shortest round-trip digits in scientific form: d.ddde±XX.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	if exp >= -4 && exp < 16 {
		if exp >= 0 {
			if len(digits) <= exp+1 {
				out = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
			} else {
				out = digits[:exp+1] + "." + digits[exp+1:]
			}
		} else {
			out = "0." + strings.Repeat("0", -exp-1) + digits
		}
	} else {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		out = fmt.Sprintf("%se%s%02d", m, sign, exp)
	}
	if neg {
		out = "-" + out
	}
	return out
}
