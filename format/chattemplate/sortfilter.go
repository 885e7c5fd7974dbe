package chattemplate

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ardanlabs/jinja"
)

// sortName is the variable our sort filter is passed as (renamedFilter):
// the engine's ignores attribute= (a list of dicts came back unsorted)
// and compares strings with case, where jinja2's does not by default.
const sortName = "__hone_sort"

// sortKey is what jinja2's sort compares an item by: the values of its
// attributes (the item itself without attribute=), lower-cased where they
// are strings unless case_sensitive; missing, where an attribute's path
// finds nothing, is jinja2's UndefinedError for it, raised when the key
// is compared with one that is not missing too (two Undefineds are equal).
type sortKey struct {
	vals    []jinja.Value
	missing error
}

// sortFilter is jinja2's sort(value, reverse=False, case_sensitive=False,
// attribute=None): the value's items (what list gives of it) in Python's
// stable sorted order of their keys (make_multi_attrgetter: attribute is
// comma-separated paths, each dotted), and Python's TypeError where two
// keys do not compare.
func sortFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("sort: no value")
	}
	if len(args) > 4 {
		return jinja.Undefined(), fmt.Errorf("TypeError: sort: takes from 1 to 4 positional arguments but %d were given", len(args))
	}
	rv, _ := param(args, kwargs, 1, "reverse")
	cs, _ := param(args, kwargs, 2, "case_sensitive")
	reverse, caseSensitive := rv.IsTruthy(), cs.IsTruthy()
	var paths [][]string
	if attr, ok := param(args, kwargs, 3, "attribute"); ok {
		for _, p := range strings.Split(engineKey(attr), ",") {
			paths = append(paths, strings.Split(p, "."))
		}
	}
	items, err := listFilter(args[:1], nil)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("sort: %w", err)
	}
	list := append([]jinja.Value(nil), items.AsList().Items...)
	keys := make(map[int]sortKey, len(list))
	order := make([]int, len(list))
	for i, item := range list {
		order[i] = i
		keys[i] = makeSortKey(item, paths, caseSensitive)
	}
	var cmpErr error
	sort.SliceStable(order, func(i, j int) bool {
		a, b := keys[order[i]], keys[order[j]]
		if reverse {
			a, b = b, a
		}
		less, err := a.less(b)
		if err != nil && cmpErr == nil {
			cmpErr = err
		}
		return less
	})
	if cmpErr != nil {
		return jinja.Undefined(), fmt.Errorf("sort: %w", cmpErr)
	}
	out := make([]jinja.Value, len(order))
	for i, k := range order {
		out[i] = list[k]
	}
	return jinja.NewList(out), nil
}

// makeSortKey reads item's key along paths (the item itself when there
// are none).
func makeSortKey(item jinja.Value, paths [][]string, caseSensitive bool) sortKey {
	if len(paths) == 0 {
		return sortKey{vals: []jinja.Value{foldCase(item, caseSensitive)}}
	}
	var k sortKey
	for _, path := range paths {
		v, found := attrPath(item, path)
		if !found && k.missing == nil {
			k.missing = missingPathError(item, path)
		}
		k.vals = append(k.vals, foldCase(v, caseSensitive))
	}
	return k
}

// foldCase is jinja2's ignore_case: a string lower-cased, unless
// caseSensitive.
func foldCase(v jinja.Value, caseSensitive bool) jinja.Value {
	if !caseSensitive && v.IsString() {
		return jinja.NewString(strings.ToLower(v.AsString()))
	}
	return v
}

// missingPathError is jinja2's UndefinedError for the part of path that
// finds nothing in obj, as pyMember words it.
func missingPathError(obj jinja.Value, path []string) error {
	for _, part := range path {
		key := jinja.NewString(part)
		if n, ok := digitsIndex(part); ok && !obj.IsDict() {
			key = jinja.NewInt(n)
		}
		if _, err := pyMember([]jinja.Value{obj, key}, nil); err != nil {
			return err
		}
		next, found := attrPath(obj, []string{part})
		if !found {
			break
		}
		obj = next
	}
	return fmt.Errorf("UndefinedError: no attribute %q", strings.Join(path, "."))
}

// less is Python's a < b of two keys, which compares lists of the
// attributes' values item by item.
func (a sortKey) less(b sortKey) (bool, error) {
	switch {
	case a.missing != nil && b.missing != nil:
		return false, nil
	case a.missing != nil:
		return false, a.missing
	case b.missing != nil:
		return false, b.missing
	}
	lt, err := pyLess(jinja.NewList(a.vals), jinja.NewList(b.vals), true)
	if err != nil {
		return false, fmt.Errorf("TypeError: %w", err)
	}
	return lt, nil
}
