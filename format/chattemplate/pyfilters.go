package chattemplate

import (
	"errors"
	"math"
	"strconv"

	"github.com/ardanlabs/jinja"
)

// listName is the variable our list filter is passed as; like tojson, the
// template text is rewritten to call it (renameFilters).
const listName = "__hone_list"

// roundName is the variable our round filter is passed as.
const roundName = "__hone_round"

// pyCallables are our filters (and operators) that do what jinja2's do,
// by the names the rewritten template calls them by; they need no budget.
func pyCallables() map[string]jinja.Value {
	return map[string]jinja.Value{
		listName:     jinja.NewCallable("list", listFilter),
		roundName:    jinja.NewCallable("round", roundFilter),
		formatName:   jinja.NewCallable("format", formatFilter),
		divName:      jinja.NewCallable("/", pyDiv),
		floorDivName: jinja.NewCallable("//", pyFloorDiv),
		modName:      jinja.NewCallable("%", pyMod),
		powName:      jinja.NewCallable("**", pyPow),
	}
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
