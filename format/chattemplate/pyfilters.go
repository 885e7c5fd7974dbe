package chattemplate

import (
	"errors"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// listName is the variable our list filter is passed as; like tojson, the
// template text is rewritten to call it (renameFilters).
const listName = "__hone_list"

// titleName is the variable our title filter is passed as (strsearch.go).
const titleName = "__hone_title"

// roundName is the variable our round filter is passed as.
const roundName = "__hone_round"

// intName is the variable our int filter is passed as.
const intName = "__hone_int"

// pyCallables are our filters (and operators) that do what jinja2's do,
// by the names the rewritten template calls them by; they need no budget.
func pyCallables() map[string]jinja.Value {
	calls := map[string]jinja.Value{
		listName:         jinja.NewCallable("list", listFilter),
		titleName:        jinja.NewCallable("title", titleFilter),
		roundName:        jinja.NewCallable("round", roundFilter),
		intName:          jinja.NewCallable("int", intFilter),
		formatName:       jinja.NewCallable("format", formatFilter),
		divName:          jinja.NewCallable("/", pyDiv),
		floorDivName:     jinja.NewCallable("//", pyFloorDiv),
		modName:          jinja.NewCallable("%", pyMod),
		powName:          jinja.NewCallable("**", pyPow),
		splatName:        jinja.NewCallable("*args", splatFilter),
		mapName:          jinja.NewCallable("map", mapFilter),
		mapAttrName:      jinja.NewCallable("map", mapAttrFilter),
		iterableName:     jinja.NewCallable("iterable", pyIterable),
		sortName:         jinja.NewCallable("sort", sortFilter),
		selectName:       jinja.NewCallable("select", selectFilter("select", false, false)),
		rejectName:       jinja.NewCallable("reject", selectFilter("reject", false, true)),
		selectattrName:   jinja.NewCallable("selectattr", selectFilter("selectattr", true, false)),
		rejectattrName:   jinja.NewCallable("rejectattr", selectFilter("rejectattr", true, true)),
		joinName:         jinja.NewCallable("join", joinFilter),
		firstName:        jinja.NewCallable("first", edgeFilter(false)),
		lastName:         jinja.NewCallable("last", edgeFilter(true)),
		uniqueName:       jinja.NewCallable("unique", uniqueFilter),
		minName:          jinja.NewCallable("min", extremeFilter(false)),
		maxName:          jinja.NewCallable("max", extremeFilter(true)),
		sumName:          jinja.NewCallable("sum", sumFilter),
		unpackName:       jinja.NewCallable("unpack", unpack),
		badCallName:      jinja.NewCallable("badcall", badCall),
		negName:          jinja.NewCallable("-", pyUnary("-")),
		posName:          jinja.NewCallable("+", pyUnary("+")),
		definedName:      jinja.NewCallable("defined", pyDefined),
		nameDefinedName:  jinja.NewCallable("defined", pyNameDefined),
		memberName:       jinja.NewCallable("member", pyMember),
		loopItemName:     jinja.NewCallable("loopitem", loopItem),
		checkedMacroName: jinja.NewCallable("checkedmacro", checkedMacro),
		starName:         jinja.NewCallable("star", pyStar),
		unsetName:        unsetValue(),
	}
	maps.Copy(calls, rareNameCallables())
	for name := range jinja2Tests {
		if call, test := ownTestCallable(name); call != "" {
			calls[call] = test
		}
	}
	return calls
}

// listFilter is jinja2's list filter, Python's list(value): a dict gives
// its keys in order (the engine gave a list holding the dict, so a loop
// over d|list ran once, over the dict itself, and d|list|length was 1), a
// string its characters, a list a copy of it, Undefined an empty list;
// anything else is not iterable, an error as in jinja2.
func listFilter(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewList(nil), nil
	}
	v := args[0]
	switch {
	case v.IsDict():
		keys := v.AsDict().Keys
		items := make([]jinja.Value, len(keys))
		for i, k := range keys {
			items[i] = jinja.NewString(k)
		}
		return jinja.NewList(items), nil
	case v.IsList():
		return jinja.NewList(append([]jinja.Value(nil), v.AsList().Items...)), nil
	case v.IsString():
		var items []jinja.Value
		for _, r := range v.AsString() {
			items = append(items, jinja.NewString(string(r)))
		}
		return jinja.NewList(items), nil
	case v.IsUndefined():
		return jinja.NewList(nil), nil
	}
	return jinja.Undefined(), errors.New("list: the value is not iterable (a list, dict or string)")
}

// roundFilter is jinja2's round(value, precision=0, method='common'):
// 'common' is Python's round(), which rounds the float's exact value to
// the nearest, halves to even (2.5 gives 2.0, 2.675 to two places 2.67),
// and gives an int back for an int; 'floor' and 'ceil' scale by
// 10**precision and give a float. The engine rounded halves away from
// zero after scaling, made every result a float and took no method.
func roundFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("round: no value")
	}
	v, precision, method := args[0], int64(0), "common"
	if len(args) > 1 {
		precision = intOf(args[1])
	}
	if p, ok := kwargs["precision"]; ok {
		precision = intOf(p)
	}
	if len(args) > 2 && args[2].IsString() {
		method = args[2].AsString()
	}
	if m, ok := kwargs["method"]; ok && m.IsString() {
		method = m.AsString()
	}
	if method != "common" && method != "floor" && method != "ceil" {
		return jinja.Undefined(), errors.New("round: method must be common, ceil or floor")
	}
	if !v.IsInt() && !v.IsFloat() && !v.IsBool() {
		return jinja.Undefined(), errors.New("round: the value is not a number")
	}
	if method == "common" && !v.IsFloat() {
		return jinja.NewInt(intOf(v)), nil // Python's round of an int is the int
	}
	f := floatOf(v)
	switch {
	case method == "floor":
		scale := math.Pow(10, float64(precision))
		return jinja.NewFloat(math.Floor(f*scale) / scale), nil
	case method == "ceil":
		scale := math.Pow(10, float64(precision))
		return jinja.NewFloat(math.Ceil(f*scale) / scale), nil
	case precision < 0:
		scale := math.Pow(10, float64(-precision))
		return jinja.NewFloat(math.RoundToEven(f/scale) * scale), nil
	case math.IsInf(f, 0) || math.IsNaN(f) || precision > 330:
		return jinja.NewFloat(f), nil
	}
	// strconv rounds the exact binary value, halves to even, as CPython's
	// round does through its correctly rounded dtoa.
	r, err := strconv.ParseFloat(strconv.FormatFloat(f, 'f', int(precision), 64), 64)
	if err != nil {
		return jinja.Undefined(), errors.New("round: " + err.Error())
	}
	return jinja.NewFloat(r), nil
}

// intOf and floatOf are a number (or bool) as Python's int and float.
func intOf(v jinja.Value) int64 {
	switch {
	case v.IsInt():
		return v.AsInt()
	case v.IsFloat():
		return int64(v.AsFloat())
	case v.IsBool() && v.AsBool():
		return 1
	}
	return 0
}

func floatOf(v jinja.Value) float64 {
	if v.IsFloat() {
		return v.AsFloat()
	}
	return float64(intOf(v))
}

// intFilter is jinja2's int(value, default=0, base=10): a string is read
// as Python's int(s, base) reads it (spaces around it, a sign,
// underscores between digits, a 0x, 0o or 0b prefix of its base, or any
// of them with base 0), failing that as int(float(s)) ("42.7" is 42), and
// failing both it is default; a float is cut toward zero, a bool is 0 or
// 1, and a value that is no number is default. The engine took no base
// ('1A'|int(base=16) was 1, '0x1A'|int(0, 16) was 0) and read a number
// off the front of any string ('12abc'|int was 12, not 0).
func intFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("int: no value")
	}
	v, def, base := args[0], jinja.NewInt(0), int64(10)
	if len(args) > 1 {
		def = args[1]
	}
	if d, ok := kwargs["default"]; ok {
		def = d
	}
	if len(args) > 2 {
		base = intOf(args[2])
	}
	if b, ok := kwargs["base"]; ok {
		base = intOf(b)
	}
	switch {
	case v.IsUndefined():
		return jinja.Undefined(), errors.New("int: the value is undefined")
	case v.IsInt(), v.IsBool():
		return jinja.NewInt(intOf(v)), nil
	case v.IsFloat():
		f := v.AsFloat()
		if math.IsNaN(f) {
			return def, nil
		}
		if math.Abs(f) >= 1<<63 {
			return jinja.Undefined(), errors.New("int: the float is too large for a 64-bit int")
		}
		return jinja.NewInt(int64(f)), nil
	case !v.IsString():
		return def, nil
	}
	s := strings.TrimFunc(v.AsString(), isPythonSpace)
	if n, ok := pyParseInt(s, base); ok {
		return jinja.NewInt(n), nil
	}
	if strings.ContainsAny(s, "xXpP") || !underscoresBetweenDigits(s) {
		return def, nil // no float() of Python's reads these
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= 1<<63 {
		return def, nil
	}
	return jinja.NewInt(int64(f)), nil
}

// pyParseInt is Python's int(s, base) for a stripped s, false where
// Python raises (or the value needs more than 64 bits).
func pyParseInt(s string, base int64) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if len(s) >= 2 && s[0] == '0' {
		if pb := map[byte]int64{'x': 16, 'o': 8, 'b': 2}[s[1]|0x20]; pb != 0 && (base == 0 || base == pb) {
			base, s = pb, strings.TrimPrefix(s[2:], "_")
		}
	}
	if base == 0 {
		base = 10
		if len(s) > 1 && s[0] == '0' && strings.Trim(s, "0_") != "" {
			return 0, false // base 0 reads no leading zero (Python 3)
		}
	}
	if base < 2 || base > 36 || s == "" || !underscoresBetweenDigits(s) {
		return 0, false
	}
	u, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), int(base), 64)
	switch {
	case err != nil, !neg && u > math.MaxInt64, neg && u > 1<<63:
		return 0, false
	case neg:
		return int64(-u), true
	}
	return int64(u), true
}

// underscoresBetweenDigits reports whether each underscore of s stands
// alone between two other characters, as Python's number syntax asks.
func underscoresBetweenDigits(s string) bool {
	return !strings.HasPrefix(s, "_") && !strings.HasSuffix(s, "_") && !strings.Contains(s, "__")
}
