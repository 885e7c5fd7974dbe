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

// pyStrFormat is Python's str.format(*args, **kwargs) as jinja2's sandbox
// runs it: {} {0} {name}, .attr and [key] after the name (read as the
// sandbox reads them, a dict's key either way), !s and !r, {{ and }}, and
// a format spec after the colon (formatSpec), with fields inside it
// ({:>{width}}) filled in first. The engine's method knew positions
// alone: {name} and every spec were printed as written, None as "" and
// 1.0 as 1, and {{ stayed doubled.
func pyStrFormat(s string, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	f := strFormatter{args: args, kwargs: kwargs}
	out, err := f.vformat(s, 2)
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(out), nil
}

// strFormatter is one str.format call: its arguments, and the numbering
// of {} that the fields inside specs share with the fields around them,
// as in string.Formatter.
type strFormatter struct {
	args   []jinja.Value
	kwargs map[string]jinja.Value
	next   int  // the position the next {} takes
	manual bool // a field named a position: {} is refused
}

// vformat is string.Formatter's _vformat: s with its fields filled in,
// the specs' own fields at depth-1; below 0 Python stops.
func (f *strFormatter) vformat(s string, depth int) (string, error) {
	if depth < 0 {
		return "", errors.New("ValueError: Max string recursion exceeded")
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '}' && i+1 < len(s) && s[i+1] == '}', c == '{' && i+1 < len(s) && s[i+1] == '{':
			b.WriteByte(c)
			i += 2
			continue
		case c == '}':
			return "", errors.New("ValueError: Single '}' encountered in format string")
		case c != '{':
			b.WriteByte(c)
			i++
			continue
		}
		end, err := fieldEnd(s, i+1)
		if err != nil {
			return "", err
		}
		text, err := f.field(s[i+1:end], depth)
		if err != nil {
			return "", err
		}
		if b.Len()+len(text) > DefaultValueBytes {
			return "", errors.New("str.format: the result is past the value bytes limit")
		}
		b.WriteString(text)
		i = end + 1
	}
	return b.String(), nil
}

// field is one field's text: its value, converted, formatted by its
// spec once the spec's own fields are filled in.
func (f *strFormatter) field(field string, depth int) (string, error) {
	name, conv, spec := splitField(field)
	// string.Formatter, which the sandbox formats with, numbers only a
	// field with no name at all ({[k]} is the keyword ''), and turns
	// numbering manual only for a field that is all digits: {0[1]} and
	// {0.x} mix with {}. It says the same for either switch.
	switch {
	case name == "" && f.manual, allDigits(name) && f.next > 0:
		return "", errors.New("ValueError: cannot switch from manual field specification to automatic field numbering")
	case name == "":
		name, f.next = strconv.Itoa(f.next), f.next+1
	case allDigits(name):
		f.manual = true
	}
	v, err := formatField(name, f.args, f.kwargs)
	if err != nil {
		return "", err
	}
	// Python fills in every spec, an empty one too, so a field two
	// specs deep fails even with none of its own.
	if depth == 0 {
		return "", errors.New("ValueError: Max string recursion exceeded")
	}
	if strings.ContainsAny(spec, "{}") {
		if spec, err = f.vformat(spec, depth-1); err != nil {
			return "", err
		}
	}
	return convertAndFormat(v, conv, spec)
}

// fieldEnd is the index of the } that closes the field starting at i, as
// Python's parser finds it: the name runs to a :, ! or } outside [key]
// (which may hold any of them, or a brace), a ! takes one character, and
// the spec after it or the colon runs to the } that balances its braces.
func fieldEnd(s string, i int) (int, error) {
	for ; i < len(s); i++ {
		switch s[i] {
		case '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return 0, errors.New("ValueError: expected '}' before end of string")
			}
			i += j
		case '{':
			return 0, errors.New("ValueError: unexpected '{' in field name")
		case '}':
			return i, nil
		case '!':
			if i+1 >= len(s) {
				return 0, errors.New("ValueError: end of string while looking for conversion specifier")
			}
			if i += 2; i < len(s) && s[i] == '}' {
				return i, nil
			}
			if i < len(s) && s[i] != ':' {
				return 0, errors.New("ValueError: expected ':' after conversion specifier")
			}
			return specEnd(s, i+1)
		case ':':
			return specEnd(s, i+1)
		}
	}
	return 0, errors.New("ValueError: expected '}' before end of string")
}

// specEnd is the index of the } that closes a spec starting at i, past
// the fields inside it.
func specEnd(s string, i int) (int, error) {
	depth := 1
	for ; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return i, nil
			}
		}
	}
	return 0, errors.New("ValueError: unmatched '{' in format spec")
}

// splitField cuts a field into its name, conversion and spec; a colon or
// ! inside [key] is the key's.
func splitField(f string) (name, conv, spec string) {
	i := 0
	for ; i < len(f) && f[i] != '!' && f[i] != ':'; i++ {
		if f[i] == '[' {
			i += strings.IndexByte(f[i:], ']')
		}
	}
	name, f = f[:i], f[i:]
	if strings.HasPrefix(f, "!") {
		conv, f = f[1:], ""
		if j := strings.IndexByte(conv, ':'); j >= 0 {
			conv, f = conv[:j], conv[j:]
		}
		if conv == "" {
			conv = "!" // Python's "end of string while looking for conversion specifier"
		}
	}
	return name, conv, strings.TrimPrefix(f, ":")
}

// formatField looks the field's name up among the arguments and follows
// its .attr and [key] parts.
func formatField(name string, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	first := strings.IndexAny(name, ".[")
	if first < 0 {
		first = len(name)
	}
	arg, rest := name[:first], name[first:]
	var v jinja.Value
	missing := ""
	if allDigits(arg) {
		// Python reads a position from digits alone: {-1} and {+0} are
		// keywords
		n, err := strconv.Atoi(arg)
		if err != nil {
			return jinja.Undefined(), errors.New("ValueError: Too many decimal digits in format string")
		}
		if n >= len(args) {
			return jinja.Undefined(), errors.New("IndexError: tuple index out of range")
		}
		v = args[n]
	} else {
		kv, ok := kwargs[arg]
		if !ok {
			return jinja.Undefined(), fmt.Errorf("KeyError: '%s'", arg)
		}
		v = kv
	}
	for rest != "" {
		var key string
		dot := rest[0] == '.'
		if dot {
			j := strings.IndexAny(rest[1:], ".[") + 1
			if j == 0 {
				j = len(rest)
			}
			key, rest = rest[1:j], rest[j:]
			if key == "" {
				return jinja.Undefined(), errors.New("ValueError: Empty attribute in format string")
			}
		} else {
			j := strings.IndexByte(rest, ']')
			if j < 0 {
				return jinja.Undefined(), errors.New("ValueError: Missing ']' in format string")
			}
			key, rest = rest[1:j], rest[j+1:]
			if rest != "" && rest[0] != '.' && rest[0] != '[' {
				return jinja.Undefined(), errors.New("ValueError: Only '.' or '[' may follow ']' in format field specifier")
			}
		}
		if v.IsUndefined() {
			return jinja.Undefined(), errors.New(missing)
		}
		v, missing = formatMember(v, key, dot)
	}
	return v, nil
}

// formatMember is the sandbox's getattr (dot) or getitem: a dict's key
// either way, a list's or a string's item only by [digits], and
// Undefined for what is missing, with the UndefinedError's message that
// reading a member of it raises.
func formatMember(v jinja.Value, key string, dot bool) (jinja.Value, string) {
	// [digits] is an int key, [-1] and [+1] strings, as Python reads them
	n, numErr := strconv.Atoi(key)
	isIndex := !dot && allDigits(key) && numErr == nil
	switch {
	case v.IsDict():
		if item, ok := v.AsDict().Get(key); ok && !isIndex {
			return item, ""
		}
	case v.IsList() && isIndex:
		if n >= 0 && n < len(v.AsList().Items) {
			return v.AsList().Items[n], ""
		}
	case v.IsString() && isIndex:
		if r := []rune(v.AsString()); n >= 0 && n < len(r) {
			return jinja.NewString(string(r[n])), ""
		}
	}
	if isIndex {
		return jinja.Undefined(), fmt.Sprintf("UndefinedError: %s object has no element %d", pyTypeName(v), n)
	}
	return jinja.Undefined(), fmt.Sprintf("UndefinedError: '%s object' has no attribute '%s'", pyTypeName(v), key)
}

// allDigits reports whether s is one or more ASCII digits, what Python's
// format field names read as a number.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// convertAndFormat applies a field's !s or !r, then its spec.
func convertAndFormat(v jinja.Value, conv, spec string) (string, error) {
	switch conv {
	case "":
	case "s":
		v = jinja.NewString(pythonStr(v))
	case "r":
		var b strings.Builder
		writeRepr(&b, v)
		v = jinja.NewString(b.String())
	case "!":
		return "", errors.New("ValueError: end of string while looking for conversion specifier")
	default:
		if len(conv) > 1 {
			return "", errors.New("ValueError: expected ':' after conversion specifier")
		}
		return "", fmt.Errorf("ValueError: Unknown conversion specifier %s", conv)
	}
	return formatSpec(v, spec)
}

// pySpec is a parsed format spec:
// [[fill]align][sign][#][0][width][grouping][.precision][type].
type pySpec struct {
	fill            rune
	align, sign     byte
	alt, zero       bool
	width, prec     int // prec -1: none given
	group, typ      byte
	alignGiven, any bool
	fillGiven       bool
}

// parsePySpec parses spec as Python's format mini-language does; what is
// left over is Python's "Invalid format specifier".
func parsePySpec(spec string, v jinja.Value) (pySpec, error) {
	p := pySpec{fill: ' ', prec: -1, any: spec != ""}
	bad := fmt.Errorf("ValueError: Invalid format specifier '%s' for object of type '%s'", spec, pyTypeName(v))
	if r, n := utf8.DecodeRuneInString(spec); n > 0 && n < len(spec) && strings.IndexByte("<>=^", spec[n]) >= 0 {
		p.fill, p.align, p.alignGiven, p.fillGiven, spec = r, spec[n], true, true, spec[n+1:]
	} else if spec != "" && strings.IndexByte("<>=^", spec[0]) >= 0 {
		p.align, p.alignGiven, spec = spec[0], true, spec[1:]
	}
	if spec != "" && strings.IndexByte("+- ", spec[0]) >= 0 {
		p.sign, spec = spec[0], spec[1:]
	}
	if strings.HasPrefix(spec, "#") {
		p.alt, spec = true, spec[1:]
	}
	if strings.HasPrefix(spec, "0") {
		p.zero, spec = true, spec[1:]
	}
	// digits reads a width or precision: ok false where there is none.
	// Each allocates what it says before any limit sees the result, so
	// either is bounded by what one value may hold.
	digits := func(what string) (n int, ok bool, err error) {
		j := 0
		for j < len(spec) && spec[j] >= '0' && spec[j] <= '9' {
			j++
		}
		if j == 0 {
			return 0, false, nil
		}
		n, err = strconv.Atoi(spec[:j])
		spec = spec[j:]
		switch {
		case err != nil:
			return 0, false, errors.New("ValueError: Too many decimal digits in format string")
		case n > DefaultValueBytes:
			return 0, false, fmt.Errorf("str.format: %s %d is past the value bytes limit", what, n)
		}
		return n, true, nil
	}
	n, ok, err := digits("width")
	if err != nil {
		return p, err
	}
	if ok {
		p.width = n
	}
	if spec != "" && (spec[0] == ',' || spec[0] == '_') {
		p.group, spec = spec[0], spec[1:]
	}
	if strings.HasPrefix(spec, ".") {
		spec = spec[1:]
		n, ok, err := digits("precision")
		if err != nil {
			return p, err
		}
		if !ok {
			return p, errors.New("ValueError: Format specifier missing precision")
		}
		p.prec = n
	}
	if len(spec) == 1 {
		p.typ, spec = spec[0], ""
	}
	if spec != "" {
		return p, bad
	}
	// Python's 0 before the width fills with zeros unless a fill is
	// given ('{:<05}' of 7 is 70000), and aligns a number by its sign
	// unless an align is (formatString leaves a string's to the left)
	if p.zero && !p.fillGiven {
		p.fill = '0'
	}
	if p.zero && !p.alignGiven {
		p.align = '='
	}
	return p, nil
}

// formatSpec is Python's format(v, spec) for the values a template holds:
// strings, ints and bools, floats, and str() of anything else when the
// spec is empty.
func formatSpec(v jinja.Value, spec string) (string, error) {
	if spec == "" {
		return pythonStr(v), nil
	}
	p, err := parsePySpec(spec, v)
	if err != nil {
		return "", err
	}
	unknown := fmt.Errorf("ValueError: Unknown format code '%c' for object of type '%s'", p.typ, pyTypeName(v))
	// Python refuses a grouping its type has not while it parses the
	// spec, before any other error of the type's
	typ := p.typ
	switch {
	case typ != 0:
	case v.IsString():
		typ = 's'
	case v.IsInt() || v.IsBool():
		typ = 'd'
	}
	if err := p.groupAllowed(typ); err != nil && (v.IsString() || v.IsNumber() || v.IsBool()) {
		return "", err
	}
	switch {
	case v.IsString():
		return p.formatString(v.AsString(), unknown)
	case v.IsInt() || v.IsBool():
		if p.typ != 0 && strings.IndexByte("eEfFgG%", p.typ) >= 0 {
			return p.formatFloat(floatOf(v), unknown)
		}
		return p.formatInt(intOf(v), unknown)
	case v.IsFloat():
		return p.formatFloat(v.AsFloat(), unknown)
	}
	name := pyTypeName(v)
	if v.IsUndefined() {
		name = "Undefined"
	}
	return "", fmt.Errorf("TypeError: unsupported format string passed to %s.__format__", name)
}

func (p pySpec) formatString(s string, unknown error) (string, error) {
	if p.zero && !p.alignGiven {
		p.align = '<' // Python pads a string with 0s on its right ('a0000')
	}
	switch {
	case p.typ != 0 && p.typ != 's':
		return "", unknown
	case p.sign == ' ':
		return "", errors.New("ValueError: Space not allowed in string format specifier")
	case p.sign != 0:
		return "", errors.New("ValueError: Sign not allowed in string format specifier")
	case p.alt:
		return "", errors.New("ValueError: Alternate form (#) not allowed in string format specifier")
	case p.align == '=':
		return "", errors.New("ValueError: '=' alignment not allowed in string format specifier")
	case p.group != 0:
		return "", fmt.Errorf("ValueError: Cannot specify '%c' with 's'.", p.group)
	}
	if p.prec >= 0 && utf8.RuneCountInString(s) > p.prec {
		s = string([]rune(s)[:p.prec])
	}
	return p.pad("", s, '<'), nil
}

func (p pySpec) formatInt(n int64, unknown error) (string, error) {
	if p.typ != 0 && strings.IndexByte("bcdoxXn", p.typ) < 0 {
		return "", unknown // Python's int refuses the type before it reads the rest
	}
	if p.prec >= 0 {
		return "", errors.New("ValueError: Precision not allowed in integer format specifier")
	}
	base, prefix := 10, ""
	switch p.typ {
	case 0, 'd', 'n':
	case 'b', 'o', 'x', 'X':
		base = map[byte]int{'b': 2, 'o': 8, 'x': 16, 'X': 16}[p.typ]
		if p.alt {
			prefix = "0" + string(p.typ)
		}
	case 'c':
		switch {
		case p.sign != 0:
			return "", errors.New("ValueError: Sign not allowed with integer format specifier 'c'")
		case p.alt:
			return "", errors.New("ValueError: Alternate form (#) not allowed with integer format specifier 'c'")
		}
		if n < 0 || n > utf8.MaxRune {
			return "", errors.New("OverflowError: %c arg not in range(0x110000)")
		}
		return p.pad("", string(rune(n)), '>'), nil
	default:
		return "", unknown
	}
	digits := strconv.FormatUint(uint64(max(n, -n)), base)
	if n == math.MinInt64 {
		digits = strings.TrimPrefix(strconv.FormatInt(n, base), "-")
	}
	if p.typ == 'X' {
		digits = strings.ToUpper(digits)
	}
	if p.group != 0 {
		every := 3
		if base != 10 {
			every = 4
		}
		digits = p.groupPadded(digits, every, utf8.RuneCountInString(p.signOf(n < 0)+prefix))
	}
	return p.pad(p.signOf(n < 0)+prefix, digits, '>'), nil
}

func (p pySpec) formatFloat(f float64, unknown error) (string, error) {
	if p.typ != 0 && strings.IndexByte("eEfFgGn%", p.typ) < 0 {
		return "", unknown
	}
	neg := math.Signbit(f) && !math.IsNaN(f)
	f = math.Abs(f)
	prec := p.prec
	var body string
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		body = map[bool]string{true: "inf", false: "nan"}[math.IsInf(f, 0)]
		if p.typ == '%' {
			body += "%"
		}
	case p.typ == 0 && prec < 0:
		body = pythonFloat(f)
	case p.typ == 0, p.typ == 'g', p.typ == 'G', p.typ == 'n':
		if prec < 0 {
			prec = 6
		}
		body = strconv.FormatFloat(f, 'g', max(prec, 1), 64)
		if p.typ == 0 {
			body = noTypeFloat(f, max(prec, 1))
		}
		if p.alt {
			body = keepZeros(body, max(prec, 1))
		}
		if p.typ == 0 && !strings.ContainsAny(body, ".e") {
			body += ".0" // Python's none-type keeps a digit past the point
		}
	case p.typ == '%':
		body = strconv.FormatFloat(f*100, 'f', precOr6(prec), 64) + "%"
	default:
		body = strconv.FormatFloat(f, map[byte]byte{'e': 'e', 'E': 'e', 'f': 'f', 'F': 'f'}[p.typ], precOr6(prec), 64)
	}
	if p.alt && !strings.Contains(body, ".") && !math.IsInf(f, 0) && !math.IsNaN(f) {
		if j := strings.IndexAny(body, "e%"); j >= 0 {
			body = body[:j] + "." + body[j:]
		} else {
			body += "."
		}
	}
	if p.group != 0 && !math.IsInf(f, 0) && !math.IsNaN(f) {
		intPart, frac := body, ""
		if j := strings.IndexAny(body, ".e%"); j >= 0 {
			intPart, frac = body[:j], body[j:]
		}
		body = p.groupPadded(intPart, 3, utf8.RuneCountInString(p.signOf(neg)+frac)) + frac
	}
	if p.typ == 'E' || p.typ == 'F' || p.typ == 'G' {
		body = strings.ToUpper(body)
	}
	return p.pad(p.signOf(neg), body, '>'), nil
}

// noTypeFloat is Python's float format with a precision and no type:
// g, but with a digit past the point where it writes no exponent, and an
// exponent from one digit sooner (where that digit would pass prec:
// '{:.3}' of 100.0 is 1e+02).
func noTypeFloat(f float64, prec int) string {
	e := strconv.FormatFloat(f, 'e', prec-1, 64)
	j := strings.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[j+1:])
	if exp < -4 || exp >= prec-1 {
		mant := e[:j]
		if strings.Contains(mant, ".") {
			mant = strings.TrimSuffix(strings.TrimRight(mant, "0"), ".")
		}
		return mant + e[j:]
	}
	return strconv.FormatFloat(f, 'g', prec, 64)
}

// keepZeros is Python's # with g: the trailing zeros that g strips (and
// strconv's 'g' with them) written back, to prec significant digits.
// fmt's %#g would keep them but refuses a precision above a million.
func keepZeros(body string, prec int) string {
	mant, exp := body, ""
	if j := strings.IndexByte(body, 'e'); j >= 0 {
		mant, exp = body[:j], body[j:]
	}
	sig := max(len(strings.TrimLeft(strings.ReplaceAll(mant, ".", ""), "0")), 1)
	if !strings.Contains(mant, ".") {
		mant += "."
	}
	return mant + strings.Repeat("0", max(prec-sig, 0)) + exp
}

func precOr6(prec int) int {
	if prec < 0 {
		return 6
	}
	return prec
}

// signOf is the sign the spec writes before a number.
func (p pySpec) signOf(neg bool) string {
	switch {
	case neg:
		return "-"
	case p.sign == '+':
		return "+"
	case p.sign == ' ':
		return " "
	}
	return ""
}

// groupAllowed is Python's refusal of a grouping that typ (the spec's
// type, or its value's default one) has not: either is d, e, f, g, E, F,
// G, % and none's, _ b, o, x and X's too.
func (p pySpec) groupAllowed(typ byte) error {
	if p.group == 0 || typ == 0 || strings.IndexByte("defgEFG%", typ) >= 0 || (p.group == '_' && strings.IndexByte("boxX", typ) >= 0) {
		return nil
	}
	return fmt.Errorf("ValueError: Cannot specify '%c' with '%c'.", p.group, typ)
}

// groupPadded groups digits by every with the spec's separator; where
// the spec pads with zeros (0 before the width, or fill 0 with =) the
// zeros are digits too, grouped, as many as fill the width beside the
// others runes of sign, prefix and fraction ('{:010,}' is 00,001,234).
func (p pySpec) groupPadded(digits string, every, others int) string {
	minLen := p.width - others
	grouped := func(d int) int { return d + (d-1)/every }
	if p.fill != '0' || p.align != '=' || grouped(len(digits)) >= minLen {
		return groupDigits(digits, p.group, every)
	}
	d := max(len(digits), minLen-minLen/(every+1)-1)
	for d > len(digits) && grouped(d-1) >= minLen {
		d--
	}
	for grouped(d) < minLen {
		d++
	}
	return groupDigits(strings.Repeat("0", d-len(digits))+digits, p.group, every)
}

// groupDigits puts sep between every group of digits, from the right.
func groupDigits(digits string, sep byte, every int) string {
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%every == 0 {
			b.WriteByte(sep)
		}
		b.WriteRune(c)
	}
	return b.String()
}

// pad fills prefix+body out to the spec's width: align's side (def when
// none is given), both sides for ^ (the odd fill on the right), or
// between prefix and body for =.
func (p pySpec) pad(prefix, body string, def byte) string {
	n := p.width - utf8.RuneCountInString(prefix) - utf8.RuneCountInString(body)
	if n <= 0 {
		return prefix + body
	}
	fill := func(k int) string { return strings.Repeat(string(p.fill), k) }
	align := p.align
	if align == 0 {
		align = def
	}
	switch align {
	case '<':
		return prefix + body + fill(n)
	case '^':
		return fill(n/2) + prefix + body + fill(n-n/2)
	case '=':
		return prefix + fill(n) + body
	}
	return fill(n) + prefix + body
}
