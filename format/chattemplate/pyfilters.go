package chattemplate

import (
	"errors"

	"github.com/ardanlabs/jinja"
)

// listName is the variable our list filter is passed as; like tojson, the
// template text is rewritten to call it (renameFilters).
const listName = "__hone_list"

// pyCallables are our filters (and operators) that do what jinja2's do,
// by the names the rewritten template calls them by; they need no budget.
func pyCallables() map[string]jinja.Value {
	return map[string]jinja.Value{
		listName: jinja.NewCallable("list", listFilter),
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
