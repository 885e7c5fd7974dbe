package chattemplate

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// jinja2's center filter and its escaped, filter and test tests, which
// the engine has not: the load check (names.go) accepts them as jinja2's,
// and the rendering failed with "unknown filter" or "unknown test". Its
// sequence, iterable, number and sameas tests, which the engine has but
// answers otherwise (isSequence, isIterable, isNumber, isSameas), are ours
// too. pyops.go
// rewrites the tests to calls of ours, renameFilters the filter.

const (
	centerName   = "__hone_center"
	escapedName  = "__hone_is_escaped"
	isFilterName = "__hone_is_filter"
	isTestName   = "__hone_is_test"
	sequenceName = "__hone_is_sequence"
	isIterName   = "__hone_is_iterable"
	isNumberName = "__hone_is_number"
	sameasName   = "__hone_is_sameas"
)

// rareNameCallables are the callables of this file as template variables;
// its tests are bound by ownTestCallable.
func rareNameCallables() map[string]jinja.Value {
	return map[string]jinja.Value{
		centerName: jinja.NewCallable("center", centerFilter),
		sliceName:  jinja.NewCallable("slice", sliceFilter),
		attrName:   jinja.NewCallable("attr", attrFilter),
	}
}

// ownTestCallable is ownTest's variable for the test name and our test
// bound to it, or "" and Undefined. pyCallables takes its tests from here,
// and testItems takes the one a select names, which building pyCallables
// for would construct every filter at each call.
func ownTestCallable(name string) (string, jinja.Value) {
	switch name {
	case "odd":
		return oddName, jinja.NewCallable("odd", pyParity("odd", 1))
	case "even":
		return evenName, jinja.NewCallable("even", pyParity("even", 0))
	case "divisibleby":
		return divisiblebyName, jinja.NewCallable("divisibleby", pyDivisibleby)
	case "escaped":
		// Nothing is markup here (no autoescape, no Markup values), so no
		// value has __html__.
		return escapedName, jinja.NewCallable("escaped", func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
			return jinja.NewBool(false), nil
		})
	case "filter":
		return isFilterName, jinja.NewCallable("filter", nameIn(jinja2Filters))
	case "test":
		return isTestName, jinja.NewCallable("test", nameIn(jinja2Tests))
	case "sequence":
		return sequenceName, jinja.NewCallable("sequence", isSequence)
	case "iterable":
		return isIterName, jinja.NewCallable("iterable", isIterable)
	case "number":
		return isNumberName, jinja.NewCallable("number", isNumber)
	case "sameas":
		return sameasName, jinja.NewCallable("sameas", isSameas)
	}
	return "", jinja.Undefined()
}

// isSequence is jinja2's sequence test, whether Python's len() and []
// work on the value: a string, a dict, a list, and jinja2's Undefined
// (empty, and its [] is a method), where the engine's test took lists
// alone. The engine's loop object is a dict to it, but jinja2's
// LoopContext has no [].
func isSequence(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("sequence test: takes one value, got %d", len(args))
	}
	v := args[0]
	ok := v.IsString() || v.IsList() || v.IsUndefined() || (v.IsDict() && !isEngineLoop(v.AsDict()))
	return jinja.NewBool(ok), nil
}

// isNumber is jinja2's number test, isinstance(value, Number): true of
// ints, floats and bools (Python's bool is an int), where the engine's
// test left bools out.
func isNumber(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("number test: takes one value, got %d", len(args))
	}
	v := args[0]
	return jinja.NewBool(v.IsInt() || v.IsFloat() || v.IsBool()), nil
}

// isSameas is jinja2's sameas test, Python's value is other: a list or
// a dict is the same only as itself (the engine's object, which a read
// gives back as it is), an undefined value is a new one at each read and
// so never the same, and any other value the same as an equal one of its
// own Python type (1 is not True). The engine's test compared by
// equality, so [1] is sameas [1] and 1 is sameas true held. Python caches
// only small ints and one-letter strings, so two equal literals of a
// larger int or longer string may not be the same there; a value read
// twice, what a template tests, is.
func isSameas(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	switch {
	case len(args) == 1:
		return jinja.Undefined(), errors.New("TypeError: test_sameas() missing 1 required positional argument: 'other'")
	case len(args) != 2:
		return jinja.Undefined(), fmt.Errorf("TypeError: test_sameas() takes 2 positional arguments but %d were given", len(args))
	}
	a, b := args[0], args[1]
	switch {
	case a.IsUndefined() || b.IsUndefined():
		return jinja.NewBool(false), nil
	case a.IsList() || b.IsList():
		return jinja.NewBool(a.IsList() && b.IsList() && a.AsList() == b.AsList()), nil
	case a.IsDict() || b.IsDict():
		return jinja.NewBool(a.IsDict() && b.IsDict() && a.AsDict() == b.AsDict()), nil
	}
	return jinja.NewBool(pyTypeName(a) == pyTypeName(b) && a.Equals(b)), nil
}

// isIterable is jinja2's iterable test: the engine's, and true of
// jinja2's Undefined too, which iterates as empty.
func isIterable(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("iterable test: takes one value, got %d", len(args))
	}
	v := args[0]
	return jinja.NewBool(v.IsString() || v.IsList() || v.IsDict() || v.IsUndefined()), nil
}

// nameIn is the filter or test test: whether the value names one of
// names (jinja2's `value in env.filters`).
func nameIn(names map[string]bool) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return jinja.NewBool(len(args) > 0 && args[0].IsString() && names[args[0].AsString()]), nil
	}
}

// centerFilter is jinja2's center(width=80): Python's str.center of the
// value as str() prints it, padded with spaces, the odd space on the left
// when width is odd (CPython's rule). It takes no fill character and no
// other argument, and width must be an int (a bool is one): jinja2 raises
// a TypeError for the rest, where a template that passed one rendered as
// if it had not.
func centerFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), fmt.Errorf("center: no value")
	}
	if len(args) > 2 {
		return jinja.Undefined(), fmt.Errorf("TypeError: center: takes from 1 to 2 positional arguments but %d were given", len(args))
	}
	for k := range kwargs {
		if k != "width" {
			return jinja.Undefined(), fmt.Errorf("TypeError: center: got an unexpected keyword argument '%s'", k)
		}
	}
	width := int64(80)
	w, given := kwargs["width"]
	if len(args) == 2 {
		if given {
			return jinja.Undefined(), errors.New("TypeError: center: got multiple values for argument 'width'")
		}
		w, given = args[1], true
	}
	if given {
		if !w.IsInt() && !w.IsBool() {
			return jinja.Undefined(), fmt.Errorf("TypeError: center: width must be an integer, not %s", pyTypeName(w))
		}
		width = intOf(w)
	}
	s := pythonStr(args[0])
	n := int64(utf8.RuneCountInString(s))
	if width <= n {
		return jinja.NewString(s), nil
	}
	if width > DefaultValueBytes {
		return jinja.Undefined(), fmt.Errorf("center: width %d is past the value bytes limit", width)
	}
	marg := width - n
	left := marg/2 + (marg & width & 1)
	return jinja.NewString(strings.Repeat(" ", int(left)) + s + strings.Repeat(" ", int(marg-left))), nil
}
