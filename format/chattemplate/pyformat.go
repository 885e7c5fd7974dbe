package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// formatName is the variable our format filter is passed as; the engine
// has none ('%s-%d'|format('a', 3) failed with "unknown filter").
const formatName = "__hone_format"

// formatFilter is jinja2's format: value % args, or value % kwargs (a
// mapping for %(name)s); both at once is an error, as in jinja2.
func formatFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("format: no value")
	}
	if len(args) > 1 && len(kwargs) > 0 {
		return jinja.Undefined(), errors.New("format: can't handle positional and keyword arguments at the same time")
	}
	var mapping func(string) (jinja.Value, bool)
	if len(kwargs) > 0 {
		mapping = func(k string) (jinja.Value, bool) { v, ok := kwargs[k]; return v, ok }
	}
	s, err := pyFormat(pythonStr(args[0]), args[1:], mapping)
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(s), nil
}

// pyFormat is Python's printf-style formatting, format % args: flags
// "-+ #0", a width and precision (or *), the conversions d i u o x X e E
// f F g G c r s and %%, and %(key) from mapping (nil: there is none).
// Arguments left over are an error, unless there is a mapping.
func pyFormat(format string, args []jinja.Value, mapping func(string) (jinja.Value, bool)) (string, error) {
	var b strings.Builder
	// Widths and precisions allocate what they say before any limit
	// sees the result: '%999999s' a thousand times in one literal would
	// be a gigabyte. Together they may ask for what a repeated string
	// literal may (maxRepeatLiteral).
	next, padding := 0, 0
	arg := func() (jinja.Value, error) {
		if next >= len(args) {
			return jinja.Undefined(), errors.New("format: not enough arguments for format string")
		}
		next++
		return args[next-1], nil
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		spec, end, err := readSpec(format, i+1, arg, mapping)
		if err != nil {
			return "", err
		}
		i = end
		if padding += spec.width + max(spec.prec, 0); padding > maxRepeatLiteral {
			return "", fmt.Errorf("format: widths and precisions above %d in all", maxRepeatLiteral)
		}
		if spec.conv == '%' {
			b.WriteByte('%')
			continue
		}
		v := spec.value
		if !spec.keyed {
			if v, err = arg(); err != nil {
				return "", err
			}
		}
		text, err := spec.format(v)
		if err != nil {
			return "", err
		}
		b.WriteString(text)
	}
	if next < len(args) && mapping == nil {
		return "", errors.New("format: not all arguments converted during string formatting")
	}
	return b.String(), nil
}

// fmtSpec is one conversion of a printf-style format.
type fmtSpec struct {
	flags     string
	width     int
	prec      int // -1: none
	conv      byte
	keyed     bool // %(key): value is the mapping's
	value     jinja.Value
	leftAlign bool
}

// readSpec reads the conversion after the % at format[i-1]; end is the
// index of its conversion character.
func readSpec(format string, i int, arg func() (jinja.Value, error), mapping func(string) (jinja.Value, bool)) (fmtSpec, int, error) {
	s := fmtSpec{prec: -1}
	if i < len(format) && format[i] == '(' {
		j := strings.IndexByte(format[i:], ')')
		if j < 0 {
			return s, 0, errors.New("format: incomplete format key")
		}
		if mapping == nil {
			return s, 0, errors.New("format: format requires a mapping")
		}
		key := format[i+1 : i+j]
		v, ok := mapping(key)
		if !ok {
			return s, 0, fmt.Errorf("format: no key %q", key)
		}
		s.keyed, s.value = true, v
		i += j + 1
	}
	for i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0 {
		s.flags += format[i : i+1]
		i++
	}
	num := func() (int, error) {
		if i < len(format) && format[i] == '*' {
			i++
			v, err := arg()
			if err != nil {
				return 0, err
			}
			if !v.IsInt() {
				return 0, errors.New("format: * wants int")
			}
			return int(v.AsInt()), nil
		}
		n := 0
		for i < len(format) && format[i] >= '0' && format[i] <= '9' {
			if n = n*10 + int(format[i]-'0'); n > maxRepeatLiteral {
				return 0, errors.New("format: width or precision too big")
			}
			i++
		}
		return n, nil
	}
	var err error
	if s.width, err = num(); err != nil {
		return s, 0, err
	}
	if i < len(format) && format[i] == '.' {
		i++
		if s.prec, err = num(); err != nil {
			return s, 0, err
		}
	}
	for i < len(format) && strings.IndexByte("hlL", format[i]) >= 0 {
		i++
	}
	if i >= len(format) {
		return s, 0, errors.New("format: incomplete format")
	}
	s.conv = format[i]
	if s.width < 0 {
		s.width, s.flags = -s.width, s.flags+"-"
	}
	s.leftAlign = strings.Contains(s.flags, "-")
	if strings.IndexByte("diuoxXeEfFgGcrs%", s.conv) < 0 {
		return s, 0, fmt.Errorf("format: unsupported format character %q", s.conv)
	}
	return s, i, nil
}

// format converts v as the spec says.
func (s fmtSpec) format(v jinja.Value) (string, error) {
	switch s.conv {
	case 's', 'r':
		text := pythonStr(v)
		if s.conv == 'r' {
			var b strings.Builder
			writeRepr(&b, v)
			text = b.String()
		}
		if s.prec >= 0 && utf8.RuneCountInString(text) > s.prec {
			text = string([]rune(text)[:s.prec])
		}
		return s.pad(text), nil
	case 'c':
		switch {
		case v.IsInt() && v.AsInt() >= 0 && v.AsInt() <= utf8.MaxRune:
			return s.pad(string(rune(v.AsInt()))), nil
		case v.IsString() && utf8.RuneCountInString(v.AsString()) == 1:
			return s.pad(v.AsString()), nil
		}
		return "", errors.New("format: %c requires an int or a single character")
	}
	if !v.IsInt() && !v.IsFloat() && !v.IsBool() {
		return "", fmt.Errorf("format: %%%c format: a real number is required, not %s", s.conv, pyTypeName(v))
	}
	goFlags := strings.ReplaceAll(s.flags, "-", "")
	if s.leftAlign {
		goFlags = strings.ReplaceAll(goFlags, "0", "") + "-"
	}
	width := ""
	if s.width > 0 {
		width = strconv.Itoa(s.width)
	}
	switch s.conv {
	case 'd', 'i', 'u', 'o', 'x', 'X':
		if v.IsFloat() && (math.IsInf(v.AsFloat(), 0) || math.IsNaN(v.AsFloat())) {
			return "", errors.New("format: cannot convert float infinity or NaN to integer")
		}
		verb := map[byte]string{'d': "d", 'i': "d", 'u': "d", 'o': "o", 'x': "x", 'X': "X"}[s.conv]
		if s.conv == 'o' && strings.Contains(goFlags, "#") {
			verb, goFlags = "O", strings.ReplaceAll(goFlags, "#", "") // Python writes 0o10
		}
		return fmt.Sprintf("%"+goFlags+width+verb, intOf(v)), nil
	}
	f := floatOf(v)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		text := strconv.FormatFloat(f, 'f', -1, 64) // +Inf, -Inf, NaN
		text = map[string]string{"+Inf": "inf", "-Inf": "-inf", "NaN": "nan"}[text]
		if strings.Contains(s.flags, "+") && text[0] != '-' {
			text = "+" + text
		}
		if s.conv == 'E' || s.conv == 'F' || s.conv == 'G' {
			text = strings.ToUpper(text)
		}
		return s.pad(text), nil
	}
	prec := s.prec
	if prec < 0 {
		prec = 6
	}
	return fmt.Sprintf("%"+goFlags+width+"."+strconv.Itoa(prec)+string(s.conv), f), nil
}

// pad pads text to the spec's width with spaces.
func (s fmtSpec) pad(text string) string {
	n := utf8.RuneCountInString(text)
	if n >= s.width {
		return text
	}
	if s.leftAlign {
		return text + strings.Repeat(" ", s.width-n)
	}
	return strings.Repeat(" ", s.width-n) + text
}
