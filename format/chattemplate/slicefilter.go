package chattemplate

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ardanlabs/jinja"
)

// jinja2's slice and attr filters, which the engine has not: the load
// check (names.go) accepts them as jinja2's, and the rendering failed with
// "unknown filter". renameFilters points them at ours.

const (
	sliceName = "__hone_slice"
	attrName  = "__hone_attr"
)

// sliceFilter is jinja2's slice(value, slices, fill_with=None): the
// value's items (list(value)) cut into slices columns, the first
// len % slices of them one item longer, and the shorter ones padded with
// fill_with when it is given. jinja2 gives a generator; a list prints as
// the templates that loop over it or pass it to list see it. A rendering
// calls the budget's (budget.slice); this one, with no budget, is bounded
// by the default value bytes alone.
func sliceFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	return sliceColumns(args, kwargs, nil)
}

// slice is sliceFilter charged to the rendering: a list is built for
// each column, an empty one too, so each costs a step, as range's items
// do, and more columns than the steps left or than a list within
// ValueBytes holds stop the rendering before any is built ([1]|slice(n)
// in a loop allocated gigabytes over seconds at no limit).
func (b *budget) slice(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	return sliceColumns(args, kwargs, b)
}

func sliceColumns(args []jinja.Value, kwargs map[string]jinja.Value, b *budget) (jinja.Value, error) {
	params, err := bindFilterArgs("sync_do_slice", []string{"value", "slices", "fill_with"}, 2, args, kwargs)
	if err != nil {
		return jinja.Undefined(), err
	}
	n := params[1]
	if !n.IsInt() && !n.IsBool() {
		return jinja.Undefined(), fmt.Errorf("TypeError: '%s' object cannot be interpreted as an integer", pyTypeName(n))
	}
	cols := intOf(n)
	if params[0].IsNone() || params[0].IsBool() || params[0].IsNumber() {
		return jinja.Undefined(), fmt.Errorf("TypeError: '%s' object is not iterable", pyTypeName(params[0]))
	}
	seq, err := listFilter(params[:1], nil)
	if err != nil {
		return jinja.Undefined(), err
	}
	if cols == 0 {
		return jinja.Undefined(), errors.New("ZeroDivisionError: integer division or modulo by zero")
	}
	items := seq.AsList().Items
	if cols < 0 {
		return jinja.NewList(nil), nil
	}
	if b != nil {
		if left := b.lim.Steps - b.steps; cols > max(left, 0) {
			return jinja.Undefined(), b.fail("steps", b.lim.Steps, "slice(%d) builds %d lists, more than the %d steps left", cols, cols, max(left, 0))
		}
		if cols > b.lim.ValueBytes/perItem {
			return jinja.Undefined(), b.fail("value bytes", b.lim.ValueBytes, "slice(%d) builds a list of %d lists, larger than that", cols, cols)
		}
		b.steps += cols
	} else if cols > DefaultValueBytes/perItem {
		return jinja.Undefined(), fmt.Errorf("slice: %d slices is past the value bytes limit", cols)
	}
	fill, padded := params[2], !params[2].IsUndefined() && !params[2].IsNone()
	per, extra := int64(len(items))/cols, int64(len(items))%cols
	out := make([]jinja.Value, 0, cols)
	offset := int64(0)
	for i := range cols {
		start := offset + i*per
		if i < extra {
			offset++
		}
		end := offset + (i+1)*per
		col := append([]jinja.Value(nil), items[start:end]...)
		if padded && i >= extra {
			col = append(col, fill)
		}
		out = append(out, jinja.NewList(col))
	}
	return jinja.NewList(out), nil
}

// attrFilter is jinja2's attr(obj, name): Python's getattr, never the
// item. A template's values are dicts, lists, strings and numbers, whose
// Python attributes are methods, so no name reads a value: jinja2's
// answer for a dict's key is Undefined, which prints as "" (the engine
// failed the rendering with "unknown filter").
func attrFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	params, err := bindFilterArgs("do_attr", []string{"obj", "name"}, 2, args, kwargs)
	if err != nil {
		return jinja.Undefined(), err
	}
	if !params[1].IsString() {
		return jinja.Undefined(), fmt.Errorf("TypeError: attribute name must be string, not '%s'", pyTypeName(params[1]))
	}
	return jinja.Undefined(), nil
}

// bindFilterArgs binds a filter's positional and keyword arguments to its
// Python parameters, the first required of them required, with the
// TypeErrors Python raises for a call that does not fit (fn names the
// function, as in jinja2's message); a parameter left out is Undefined.
func bindFilterArgs(fn string, names []string, required int, args []jinja.Value, kwargs map[string]jinja.Value) ([]jinja.Value, error) {
	if len(args) > len(names) {
		return nil, fmt.Errorf("TypeError: %s() takes from %d to %d positional arguments but %d were given", fn, required, len(names), len(args))
	}
	params := make([]jinja.Value, len(names))
	given := make([]bool, len(names))
	for i, a := range args {
		params[i], given[i] = a, true
	}
	for k, v := range kwargs {
		i := slices.Index(names, k)
		switch {
		case i < 0:
			return nil, fmt.Errorf("TypeError: %s() got an unexpected keyword argument '%s'", fn, k)
		case given[i]:
			return nil, fmt.Errorf("TypeError: %s() got multiple values for argument '%s'", fn, k)
		}
		params[i], given[i] = v, true
	}
	for i := range required {
		if !given[i] {
			return nil, fmt.Errorf("TypeError: %s() missing 1 required positional argument: '%s'", fn, names[i])
		}
	}
	return params, nil
}
