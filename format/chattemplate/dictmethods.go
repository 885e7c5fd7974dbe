package chattemplate

import (
	"fmt"
	"slices"

	"github.com/ardanlabs/jinja"
)

// jinja2 reads d.items with Python's getattr first, so d.items() is the
// dict's method whatever keys d holds. The engine looks among the keys
// first: a tool whose parameters include one named "items" (an
// add_to_cart(items) tool), "keys", "values" or "get" made a template's
// `properties.items()` call that parameter's schema and fail ("... is not
// callable"), a tool list transformers renders. Called methods of these
// names are rewritten (renameFilters) to reach ours: `x.items()` becomes
// `x|__hone_dict_items()`. Read without a call they are left to the
// engine (a namespace, a dict to the engine, holds its names as keys).

// dictMethodPrefix starts the variable names our dict methods are passed
// as.
const dictMethodPrefix = "__hone_dict_"

// dictMethodNames are the read-only dict methods called through ours.
func dictMethodNames() []string {
	return []string{"items", "keys", "values", "get"}
}

// isDictMethod reports whether name is one of dictMethodNames.
func isDictMethod(name string) bool {
	return slices.Contains(dictMethodNames(), name)
}

// dictMethodCallables are our dict methods as template variables.
func dictMethodCallables() map[string]jinja.Value {
	out := map[string]jinja.Value{}
	for _, name := range dictMethodNames() {
		out[dictMethodPrefix+name] = jinja.NewCallable("dict."+name, dictMethod(name))
	}
	return out
}

// dictMethod is the method name called on its first argument. A callable
// of that name the object holds (a macro a namespace was given) is called
// instead, as jinja2 does for a namespace's attributes; an object that
// is no dict has no such attribute.
func dictMethod(name string) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		if len(args) == 0 {
			return jinja.Undefined(), fmt.Errorf("%s: called on nothing", name)
		}
		obj, args := args[0], args[1:]
		if v, ok := ownKey(obj, name); ok && v.IsCallable() {
			return v.AsCallable().Fn(args, kwargs)
		}
		if !obj.IsDict() {
			return jinja.Undefined(), noAttribute(obj, name)
		}
		if len(kwargs) > 0 {
			return jinja.Undefined(), fmt.Errorf("TypeError: dict.%s() takes no keyword arguments", name)
		}
		d := obj.AsDict()
		if name == "get" {
			switch {
			case len(args) == 0:
				return jinja.Undefined(), fmt.Errorf("TypeError: get expected at least 1 argument, got 0")
			case len(args) > 2:
				return jinja.Undefined(), fmt.Errorf("TypeError: get expected at most 2 arguments, got %d", len(args))
			}
			if v, ok := d.Get(engineKey(args[0])); ok {
				return v, nil
			}
			if len(args) == 2 {
				return args[1], nil
			}
			return jinja.None(), nil
		}
		if len(args) > 0 {
			return jinja.Undefined(), fmt.Errorf("TypeError: dict.%s() takes no arguments (%d given)", name, len(args))
		}
		out := make([]jinja.Value, 0, d.Len())
		for _, k := range d.Keys {
			switch name {
			case "items":
				out = append(out, jinja.NewList([]jinja.Value{jinja.NewString(k), d.Data[k]}))
			case "keys":
				out = append(out, jinja.NewString(k))
			default:
				out = append(out, d.Data[k])
			}
		}
		return jinja.NewList(out), nil
	}
}
