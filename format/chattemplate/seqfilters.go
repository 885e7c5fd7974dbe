package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// firstName and lastName are the variables our first and last filters
// are passed as: the engine's give Undefined for anything but a list.
const (
	firstName = "__hone_first"
	lastName  = "__hone_last"
)

// edgeFilter is jinja2's first (last where last): the value's first (or
// last) item, what list gives of it (a string's character, a dict's key),
// and Undefined where there is none; a value Python cannot iterate fails.
func edgeFilter(last bool) func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	name := "first"
	if last {
		name = "last"
	}
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), fmt.Errorf("TypeError: %s: takes 1 positional argument but %d were given", name, len(args))
		}
		items, err := listFilter(args, nil)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("TypeError: %s: %w", name, err)
		}
		list := items.AsList().Items
		switch {
		case len(list) == 0:
			return jinja.Undefined(), nil
		case last:
			return list[len(list)-1], nil
		}
		return list[0], nil
	}
}

// uniqueName is the variable our unique filter is passed as: the engine's
// compares the printed text with case (['a', 'A'] stayed two) and ignores
// attribute=.
const uniqueName = "__hone_unique"

// uniqueFilter is jinja2's unique(value, case_sensitive=False,
// attribute=None): the value's items (what list gives of it) whose key,
// the item or what attribute's dotted path finds in it, lower-cased where
// it is a string unless case_sensitive, no item before had; keys are
// equal as Python's set sees them (1, 1.0 and True are one).
func uniqueFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 || len(args) > 3 {
		return jinja.Undefined(), fmt.Errorf("TypeError: unique: takes from 1 to 3 positional arguments but %d were given", len(args))
	}
	cs, _ := param(args, kwargs, 1, "case_sensitive")
	var path []string
	if attr, ok := param(args, kwargs, 2, "attribute"); ok {
		path = strings.Split(engineKey(attr), ".")
	}
	items, err := listFilter(args[:1], nil)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("TypeError: unique: %w", err)
	}
	seen := map[string]bool{}
	var out []jinja.Value
	for i, item := range items.AsList().Items {
		key := item
		if path != nil {
			if key, err = attrGetter(item, path); err != nil {
				return jinja.Undefined(), fmt.Errorf("unique(attribute=%q): item %d: %w", strings.Join(path, "."), i, err)
			}
		}
		h, err := hashKey(foldCase(key, cs.IsTruthy()))
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("unique: item %d: %w", i, err)
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, item)
		}
	}
	return jinja.NewList(out), nil
}

// hashKey is a text equal for two values exactly where Python's set
// holds them as one: numbers by value (True is 1, 2.0 is 2), strings by
// their text, None and Undefined each one value; a list or dict is
// unhashable, Python's TypeError.
func hashKey(v jinja.Value) (string, error) {
	switch {
	case v.IsString():
		return "s" + v.AsString(), nil
	case v.IsBool():
		if v.IsTruthy() {
			return "n1", nil
		}
		return "n0", nil
	case v.IsInt():
		return "n" + strconv.FormatInt(v.AsInt(), 10), nil
	case v.IsFloat():
		f := v.AsFloat()
		if f == math.Trunc(f) && !math.IsInf(f, 0) {
			return "n" + strconv.FormatFloat(f, 'f', 0, 64), nil
		}
		return "f" + strconv.FormatFloat(f, 'g', -1, 64), nil
	case v.IsNone():
		return "N", nil
	case v.IsUndefined():
		return "U", nil
	case v.IsList(), v.IsDict():
		return "", fmt.Errorf("TypeError: unhashable type: '%s'", pyTypeName(v))
	}
	return "o" + v.String(), nil
}

// minName and maxName are the variables our min and max filters are
// passed as: the engine's ignore attribute= and case_sensitive, give
// Undefined for a string or dict and order what Python cannot.
const (
	minName = "__hone_min"
	maxName = "__hone_max"
)

// extremeFilter is jinja2's min (max where max), (value,
// case_sensitive=False, attribute=None): of the value's items (what list
// gives of it), the first whose key, the item or what attribute's dotted
// path finds in it, lower-cased where it is a string unless
// case_sensitive, no other key is below (above); Undefined where there are
// no items, Python's TypeError where two keys do not compare, and
// jinja2's UndefinedError where a key that is compared finds nothing.
func extremeFilter(isMax bool) func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	name := "min"
	if isMax {
		name = "max"
	}
	return func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		if len(args) == 0 || len(args) > 3 {
			return jinja.Undefined(), fmt.Errorf("TypeError: %s: takes from 1 to 3 positional arguments but %d were given", name, len(args))
		}
		cs, _ := param(args, kwargs, 1, "case_sensitive")
		var path []string
		if attr, ok := param(args, kwargs, 2, "attribute"); ok {
			path = strings.Split(engineKey(attr), ".")
		}
		items, err := listFilter(args[:1], nil)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("TypeError: %s: %w", name, err)
		}
		best := jinja.Undefined()
		var bestKey sortKey
		for i, item := range items.AsList().Items {
			key := sortKey{vals: []jinja.Value{foldCase(item, cs.IsTruthy())}}
			if path != nil {
				v, err := attrGetter(item, path)
				if err != nil {
					return jinja.Undefined(), fmt.Errorf("%s(attribute=%q): item %d: %w", name, strings.Join(path, "."), i, err)
				}
				key.vals[0] = foldCase(v, cs.IsTruthy())
				if v.IsUndefined() {
					key.missing = missingPathError(item, path)
				}
			}
			if i == 0 {
				best, bestKey = item, key
				continue
			}
			a, b := key, bestKey // min: item < best replaces it
			if isMax {
				a, b = b, a // max: item > best, that is best < item
			}
			less, err := a.less(b)
			if err != nil && isMax && key.missing == nil && bestKey.missing == nil && !key.vals[0].IsList() {
				// Python's max asks item > best, and says so (of two
				// lists, of the items that differ: pyLess's words)
				err = fmt.Errorf("TypeError: '>' not supported between instances of '%s' and '%s'", pyTypeName(key.vals[0]), pyTypeName(bestKey.vals[0]))
			}
			if err != nil {
				return jinja.Undefined(), fmt.Errorf("%s: item %d: %w", name, i, err)
			}
			if less {
				best, bestKey = item, key
			}
		}
		return best, nil // Undefined where there are no items
	}
}

// sumName is the variable our sum filter is passed as: the engine's
// ignores attribute= and start= and skips what is no number.
const sumName = "__hone_sum"

// sumFilter is jinja2's sum(value, attribute=None, start=0), Python's
// sum: start plus each of the value's items (what list gives of it), or
// what attribute's dotted path finds in each, added as Python's + adds
// them (pyAddSub, refusing a string and a dict, which only the template's
// own + joins); a string start is Python's TypeError, and an item where
// the path finds nothing jinja2's UndefinedError.
func sumFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 || len(args) > 3 {
		return jinja.Undefined(), fmt.Errorf("TypeError: sum: takes from 1 to 3 positional arguments but %d were given", len(args))
	}
	var path []string
	if attr, ok := param(args, kwargs, 1, "attribute"); ok {
		path = strings.Split(engineKey(attr), ".")
	}
	total := jinja.NewInt(0)
	if len(args) > 2 {
		total = args[2]
	} else if s, ok := kwargs["start"]; ok {
		total = s
	}
	if total.IsString() {
		return jinja.Undefined(), errors.New("TypeError: sum() can't sum strings [use ''.join(seq) instead]")
	}
	items, err := listFilter(args[:1], nil)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("TypeError: sum: %w", err)
	}
	add := pyAddSub(false, func(v jinja.Value) (string, error) {
		return "", fmt.Errorf("TypeError: unsupported operand type(s) for +: '%s' and 'str'", pyTypeName(v))
	})
	for i, item := range items.AsList().Items {
		if path != nil {
			v, err := attrGetter(item, path)
			if err == nil && v.IsUndefined() {
				err = missingPathError(item, path)
			}
			if err != nil {
				return jinja.Undefined(), fmt.Errorf("sum(attribute=%q): item %d: %w", strings.Join(path, "."), i, err)
			}
			item = v
		}
		if total, err = add([]jinja.Value{total, item}, nil); err != nil {
			return jinja.Undefined(), fmt.Errorf("sum: item %d: %w", i, err)
		}
	}
	return total, nil
}
