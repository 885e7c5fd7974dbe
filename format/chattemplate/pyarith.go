package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ardanlabs/jinja"
)

// The callables pyOps rewrites /, //, % and ** to.
const (
	divName      = "__hone_div"
	floorDivName = "__hone_floordiv"
	modName      = "__hone_mod"
	powName      = "__hone_pow"
	mulName      = "__hone_mul"
)

// numbers are the two operands of an arithmetic operator, as Python
// numbers (a bool is an int); ok is false when either is not a number,
// which jinja2 refuses (a TypeError, or an UndefinedError for Undefined).
func numbers(op string, args []jinja.Value) (a, b jinja.Value, err error) {
	if len(args) < 2 {
		return a, b, errors.New(op + ": two operands needed")
	}
	for _, v := range args[:2] {
		if !v.IsInt() && !v.IsFloat() && !v.IsBool() {
			return a, b, errors.New("unsupported operand for " + op + ": " + pyTypeName(v))
		}
	}
	return args[0], args[1], nil
}

// pyTypeName is the Python type name of v, for errors.
func pyTypeName(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return "an undefined value"
	case v.IsNone():
		return "NoneType"
	case v.IsString():
		return "str"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "dict"
	case v.IsBool():
		return "bool"
	case v.IsInt():
		return "int"
	case v.IsFloat():
		return "float"
	}
	return "callable"
}

// pyDiv is Python's a / b: always a float, and an error for a division
// by zero (the engine gave 0.0).
func pyDiv(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	a, b, err := numbers("/", args)
	if err != nil {
		return jinja.Undefined(), err
	}
	if floatOf(b) == 0 {
		return jinja.Undefined(), errors.New("division by zero")
	}
	return jinja.NewFloat(floatOf(a) / floatOf(b)), nil
}

// pyFloorDiv is Python's a // b: floored, an int for two ints, a float
// otherwise (the engine truncated toward zero and cut floats to ints).
func pyFloorDiv(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	a, b, err := numbers("//", args)
	if err != nil {
		return jinja.Undefined(), err
	}
	if !a.IsFloat() && !b.IsFloat() {
		x, y := intOf(a), intOf(b)
		if y == 0 {
			return jinja.Undefined(), errors.New("integer division or modulo by zero")
		}
		if y == -1 {
			return jinja.NewInt(-x), nil // MinInt64 / -1 overflows in Go
		}
		q := x / y
		if x%y != 0 && (x < 0) != (y < 0) {
			q--
		}
		return jinja.NewInt(q), nil
	}
	if floatOf(b) == 0 {
		return jinja.Undefined(), errors.New("float floor division by zero")
	}
	q, _ := floatDivmod(floatOf(a), floatOf(b))
	return jinja.NewFloat(q), nil
}

// pyMod is Python's a % b: the remainder has the divisor's sign (the
// engine's had the dividend's, and cut floats to ints). With a string on
// the left it is printf-style formatting (pyFormat); a third argument true
// says the right operand was written as a tuple, (x, y), whose items are
// the arguments.
func pyMod(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) >= 2 && args[0].IsString() {
		fargs := args[1:2]
		var mapping func(string) (jinja.Value, bool)
		switch {
		case len(args) > 2 && args[2].IsTruthy() && args[1].IsList():
			fargs = args[1].AsList().Items
		case args[1].IsDict():
			d := args[1].AsDict()
			mapping = func(k string) (jinja.Value, bool) { v, ok := d.Data[k]; return v, ok }
		}
		s, err := pyFormat(args[0].AsString(), fargs, mapping)
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewString(s), nil
	}
	a, b, err := numbers("%", args)
	if err != nil {
		return jinja.Undefined(), err
	}
	if !a.IsFloat() && !b.IsFloat() {
		x, y := intOf(a), intOf(b)
		if y == 0 {
			return jinja.Undefined(), errors.New("integer modulo by zero")
		}
		if y == -1 {
			return jinja.NewInt(0), nil
		}
		r := x % y
		if r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return jinja.NewInt(r), nil
	}
	if floatOf(b) == 0 {
		return jinja.Undefined(), errors.New("float modulo")
	}
	_, r := floatDivmod(floatOf(a), floatOf(b))
	return jinja.NewFloat(r), nil
}

// floatDivmod is CPython's float divmod (float_divmod in floatobject.c),
// b != 0: the floored quotient and the remainder with b's sign.
func floatDivmod(a, b float64) (float64, float64) {
	mod := math.Mod(a, b)
	div := (a - mod) / b
	if mod != 0 {
		if (b < 0) != (mod < 0) {
			mod += b
			div -= 1
		}
	} else {
		mod = math.Copysign(0, b)
	}
	if div == 0 {
		return math.Copysign(0, a/b), mod
	}
	q := math.Floor(div)
	if div-q > 0.5 {
		q++
	}
	return q, mod
}

// pyPow is Python's a ** b: an int for two ints and a non-negative
// exponent (the engine made every power a float: 2 ** 3 printed 8.0), a
// float otherwise.
func pyPow(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	a, b, err := numbers("**", args)
	if err != nil {
		return jinja.Undefined(), err
	}
	if !a.IsFloat() && !b.IsFloat() && intOf(b) >= 0 {
		r, ok := intPow(intOf(a), intOf(b))
		if !ok {
			// Python's int has no bound; the engine's has.
			return jinja.Undefined(), errors.New("**: the result is too large for a 64-bit int")
		}
		return jinja.NewInt(r), nil
	}
	x, y := floatOf(a), floatOf(b)
	if x == 0 && y < 0 {
		return jinja.Undefined(), errors.New("0.0 cannot be raised to a negative power")
	}
	return jinja.NewFloat(math.Pow(x, y)), nil
}

// intPow is x**n for n >= 0, false on overflow.
func intPow(x, n int64) (int64, bool) {
	switch {
	case n == 0 || x == 1:
		return 1, true
	case x == 0:
		return 0, true
	case x == -1:
		return 1 - 2*(n%2), true
	case x == math.MinInt64:
		return x, n == 1
	}
	limit := int64(math.MaxInt64) / max(x, -x)
	r := int64(1)
	for ; n > 0; n-- { // |x| >= 2: at most 63 rounds before overflow
		if r > limit || r < -limit {
			return 0, false
		}
		r *= x
	}
	return r, true
}

// pyMul is Python's a * b: numbers multiply (an int for two ints, an error
// where Python's unbounded int would leave 64 bits), and a string or list
// on either side is repeated by an int (or bool) on the other, nothing for
// a count below 1. The engine cut everything but str * int to numbers
// (3 * 'ab' and [1] * 2 gave 0, 'x' * 2.0 gave 0.0) and panicked for a
// negative count. fits is asked whether count copies of the string or
// list seq may be made (repeatUnit measures one), before they are: the
// engine's repetition is one allocation, which no limit could measure
// afterwards.
func pyMul(args []jinja.Value, fits func(what string, seq jinja.Value, count int64) error) (jinja.Value, error) {
	if len(args) < 2 {
		return jinja.Undefined(), errors.New("*: two operands needed")
	}
	a, b := args[0], args[1]
	if a.IsUndefined() || b.IsUndefined() {
		return jinja.Undefined(), errors.New("unsupported operand for *: an undefined value")
	}
	seq, n := a, b
	if !a.IsString() && !a.IsList() {
		seq, n = b, a
	}
	if !seq.IsString() && !seq.IsList() {
		if x, y, err := numbers("*", args); err == nil {
			return mulNumbers(x, y)
		}
		return jinja.Undefined(), fmt.Errorf("unsupported operand type(s) for *: '%s' and '%s'", pyTypeName(a), pyTypeName(b))
	}
	if !n.IsInt() && !n.IsBool() {
		return jinja.Undefined(), fmt.Errorf("can't multiply sequence by non-int of type '%s'", pyTypeName(n))
	}
	count := max(intOf(n), 0)
	if seq.IsString() {
		s := seq.AsString()
		if err := fits("string", seq, count); err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewString(strings.Repeat(s, int(count))), nil
	}
	items := seq.AsList().Items
	if len(items) == 0 {
		// Nothing to repeat, whatever the count: fits lets a size of 0
		// through, and the loop below would run count times for nothing.
		return jinja.NewList(nil), nil
	}
	if err := fits("list", seq, count); err != nil {
		return jinja.Undefined(), err
	}
	out := make([]jinja.Value, 0, int64(len(items))*count)
	for range count {
		out = append(out, items...)
	}
	return jinja.NewList(out), nil
}

// repeatFits is pyMul's check of a repetition against max bytes: unit
// bytes count times, without overflowing.
func repeatFits(max, unit, count int64) bool {
	return unit == 0 || count <= max/unit
}

// repeatUnit is what one more copy of seq, a string or list that * repeats,
// adds to a value's size, as measure counts it, up to just past max: a
// string's bytes; a list's items with all they hold, and their separators.
// A list's copies share its items, so perItem for each item alone let
// [[0] * 3000] * 3000 through as 3000 items, and join then built the text
// of all nine million. nodes is the values walked, for the step count.
func repeatUnit(seq jinja.Value, max int64) (unit, nodes int64) {
	if seq.IsString() {
		return int64(len(seq.AsString())), 0
	}
	m := &meter{max: max}
	if !m.walk(seq, true, 0) {
		return max + 1, m.nodes // one copy is already too large, or too deep
	}
	// The list itself is one node, not one per copy; its brackets stand
	// for the ", " between copies.
	return m.printed + perItem*(m.nodes-1), m.nodes
}

// mulNumbers is a * b for two numbers (bools are ints).
func mulNumbers(a, b jinja.Value) (jinja.Value, error) {
	if a.IsFloat() || b.IsFloat() {
		return jinja.NewFloat(floatOf(a) * floatOf(b)), nil
	}
	x, y := intOf(a), intOf(b)
	r := x * y
	if x != 0 && (r/x != y || (x == -1 && y == math.MinInt64)) {
		// Python's int has no bound; the engine's has.
		return jinja.Undefined(), errors.New("*: the result is too large for a 64-bit int")
	}
	return jinja.NewInt(r), nil
}

// divisiblebyName is the variable jinja2's divisibleby test is passed as:
// the engine has no such test, so x is divisibleby n is rewritten to call
// it (pyOps).
const divisiblebyName = "__hone_divisibleby"

// pyDivisibleby is jinja2's divisibleby test, value % num == 0, with
// Python's % (and its errors: a zero num, a value that is not a number);
// num may be given by name (select('divisibleby', num=2)).
func pyDivisibleby(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	num, ok := kwargs["num"]
	if len(args) == 2 && !ok {
		num, ok = args[1], true
	} else if len(args) != 1 {
		ok = false
	}
	if !ok {
		return jinja.Undefined(), fmt.Errorf("divisibleby: takes a value and a number, got %d arguments", len(args)+len(kwargs))
	}
	r, err := pyMod([]jinja.Value{args[0], num}, nil)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("divisibleby: %w", err)
	}
	return jinja.NewBool((r.IsInt() && r.AsInt() == 0) || (r.IsFloat() && r.AsFloat() == 0)), nil
}

// oddName and evenName are the variables jinja2's odd and even tests are
// passed as: the engine's are false for every float (3.0 is odd) and for
// True, and for a value that is no number, where jinja2 raises; x is odd
// is rewritten to call ours (pyOps).
const (
	oddName  = "__hone_odd"
	evenName = "__hone_even"
)

// pyParity is jinja2's odd (value % 2 == 1) or even (value % 2 == 0)
// test, with Python's % and its errors.
func pyParity(name string, want int64) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), fmt.Errorf("%s: takes a value, got %d arguments", name, len(args))
		}
		r, err := pyMod([]jinja.Value{args[0], jinja.NewInt(2)}, kwargs)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("%s: %w", name, err)
		}
		return jinja.NewBool((r.IsInt() && r.AsInt() == want) || (r.IsFloat() && r.AsFloat() == float64(want))), nil
	}
}

// negName and posName are the variables Python's unary - and + are passed
// as (pyOps rewrites -x to call them).
const (
	negName = "__hone_neg"
	posName = "__hone_pos"
)

// definedName is the variable pyDefined is passed as: pyOps wraps the
// operands of the ordering comparisons in it.
const definedName = "__hone_defined"

// pyDefined gives its one argument back, or jinja2's UndefinedError when
// it is undefined, which jinja2 raises for an operand of <, >, <= and >=
// (the engine compared 0 or "").
func pyDefined(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("operand check: takes one operand, got %d", len(args))
	}
	if args[0].IsUndefined() {
		return jinja.Undefined(), errors.New("UndefinedError: an operand of an arithmetic operator or comparison is undefined")
	}
	return args[0], nil
}

// nameDefinedName is the variable pyNameDefined is passed as: pyOps
// wraps a name whose attribute or item is read (x.y, x['y']) in it.
const nameDefinedName = "__hone_name_defined"

// pyNameDefined gives its first argument back, or jinja2's UndefinedError
// "'x' is undefined" when it is undefined (x its second, the name): jinja2
// raises on an attribute or item of an undefined name, where the engine
// gave "" and a misspelt variable became silently wrong text.
func pyNameDefined(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), fmt.Errorf("name check: takes a value and its name, got %d arguments", len(args))
	}
	if args[0].IsUndefined() {
		return jinja.Undefined(), fmt.Errorf("UndefinedError: '%s' is undefined", args[1].AsString())
	}
	return args[0], nil
}

// addName and subName are the variables pyAddSub's + and - are passed as:
// pyOps rewrites a + b and a - b to calls of them.
const (
	addName = "__hone_add"
	subName = "__hone_sub"
)

// pyAddSub is Python's a + b, or a - b (sub): numbers (a bool is an int)
// add as Python's do, and + joins two strings or two lists; any other
// pair is jinja2's TypeError, and an undefined operand its
// UndefinedError. The engine took what was no number for 0 or "" (x + 1
// printed 1 for x undefined, 'ab' - 1 printed -1, [1] + 1 printed 1) and
// joined a number and a string (1 + 'a' printed 1a). One pair jinja2
// refuses is joined still: a string and a dict, with the dict as repr
// gives it (a tool call's arguments written into the prompt with +, which
// Render renders again with the arguments as text: renderInput).
func pyAddSub(sub bool, repr func(jinja.Value) (string, error)) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	op := "+"
	if sub {
		op = "-"
	}
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 2 {
			return jinja.Undefined(), fmt.Errorf("%s: takes two operands, got %d", op, len(args))
		}
		a, b := args[0], args[1]
		switch {
		case a.IsUndefined() || b.IsUndefined():
			return jinja.Undefined(), fmt.Errorf("UndefinedError: an operand of %s is undefined", op)
		case (a.IsInt() || a.IsFloat() || a.IsBool()) && (b.IsInt() || b.IsFloat() || b.IsBool()):
			return addNumbers(a, b, sub)
		case sub:
		case a.IsString() && b.IsString():
			return jinja.NewString(a.AsString() + b.AsString()), nil
		case a.IsList() && b.IsList():
			x, y := a.AsList().Items, b.AsList().Items
			return jinja.NewList(append(append(make([]jinja.Value, 0, len(x)+len(y)), x...), y...)), nil
		case (a.IsString() && b.IsDict()) || (a.IsDict() && b.IsString()):
			x, err := repr(a)
			if err != nil {
				return jinja.Undefined(), err
			}
			y, err := repr(b)
			if err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewString(x + y), nil
		case a.IsString() || a.IsList():
			return jinja.Undefined(), fmt.Errorf("TypeError: can only concatenate %s (not \"%s\") to %s", pyTypeName(a), pyTypeName(b), pyTypeName(a))
		}
		return jinja.Undefined(), fmt.Errorf("TypeError: unsupported operand type(s) for %s: '%s' and '%s'", op, pyTypeName(a), pyTypeName(b))
	}
}

// addNumbers is a + b or a - b (sub) for two numbers: a float if either
// is one, else an int, an error where it leaves 64 bits (Python's int
// grows; the engine's wrapped around).
func addNumbers(a, b jinja.Value, sub bool) (jinja.Value, error) {
	if a.IsFloat() || b.IsFloat() {
		if sub {
			return jinja.NewFloat(floatOf(a) - floatOf(b)), nil
		}
		return jinja.NewFloat(floatOf(a) + floatOf(b)), nil
	}
	x, y := intOf(a), intOf(b)
	if sub {
		if (y < 0 && x > math.MaxInt64+y) || (y > 0 && x < math.MinInt64+y) {
			return jinja.Undefined(), errors.New("-: the result is too large for a 64-bit int")
		}
		return jinja.NewInt(x - y), nil
	}
	if (y > 0 && x > math.MaxInt64-y) || (y < 0 && x < math.MinInt64-y) {
		return jinja.Undefined(), errors.New("+: the result is too large for a 64-bit int")
	}
	return jinja.NewInt(x + y), nil
}

// pyUnary is Python's unary - (neg) or + on a number: a bool is an int
// (-True is -1), and anything else is an error, as in jinja2 (the engine
// gave 0 for a string, None, a list or an undefined name).
func pyUnary(op string) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), fmt.Errorf("unary %s: takes one operand, got %d", op, len(args))
		}
		v := args[0]
		switch {
		case v.IsFloat() && op == "-":
			return jinja.NewFloat(-v.AsFloat()), nil
		case v.IsFloat():
			return v, nil
		case v.IsInt() || v.IsBool():
			x := intOf(v)
			if op == "+" {
				return jinja.NewInt(x), nil
			}
			if x == math.MinInt64 {
				return jinja.Undefined(), errors.New("unary -: the result is too large for a 64-bit int")
			}
			return jinja.NewInt(-x), nil
		}
		return jinja.Undefined(), fmt.Errorf("bad operand type for unary %s: '%s'", op, pyTypeName(v))
	}
}
