package chattemplate

import (
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// selectName, rejectName, selectattrName and rejectattrName are the
// variables our select, reject, selectattr and rejectattr are passed as:
// the engine's selectattr looks the attribute's whole text up as one key
// of each item, where jinja2 reads a dotted path (function.name) part by
// part, and all four of the engine's answer a test named as a string with
// its own tests, where `x is name` is rewritten to ours (pyOps).
const (
	selectName     = "__hone_select"
	rejectName     = "__hone_reject"
	selectattrName = "__hone_selectattr"
	rejectattrName = "__hone_rejectattr"
)

// selectCall rewrites `|select(`, `|reject(`, `|selectattr(` or
// `|rejectattr(` (the filter's name ends at k in code) to
// `|__hone_select(__filter_selectattr, ` (and so on), which gives our
// filter the engine's selectattr for the tests (equalto, defined, in,
// ...) that the engine answers as jinja2 does; a call without arguments,
// or without parentheses, passes that alone. It returns where the
// rewritten text ends in code and what replaces code up to there, or 0
// and "" for another filter.
func selectCall(code, name string, k int) (int, string) {
	var ours string
	switch name {
	case "select":
		ours = selectName
	case "reject":
		ours = rejectName
	case "selectattr":
		ours = selectattrName
	case "rejectattr":
		ours = rejectattrName
	default:
		return 0, ""
	}
	engine := engineFilterPrefix + "selectattr"
	j := skipSpace(code, k)
	if j >= len(code) || code[j] != '(' {
		return k, "|" + ours + "(" + engine + ")"
	}
	e := closeBracket(code, j)
	if e >= 0 && strings.TrimSpace(code[j+1:e]) == "" {
		return e + 1, "|" + ours + "(" + engine + ")"
	}
	return j + 1, "|" + ours + "(" + engine + ", "
}

// selectFilter is jinja2's select(value, test, *args, **kwargs), or
// selectattr(value, attribute, test, ...) where attr, reject or
// rejectattr where reject: args[1] is the engine's selectattr. Each item
// of the value (what list gives of it), read along the attribute's path
// as jinja2's make_attrgetter reads it, goes to the test (testItems); a
// part before the last that finds nothing fails with jinja2's
// UndefinedError, the last one gives Undefined to the test.
func selectFilter(name string, attr, reject bool) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		rest := 2
		if attr {
			rest = 3
		}
		if len(args) < rest || !args[1].IsCallable() {
			return jinja.Undefined(), fmt.Errorf("%s: called with %d arguments, want the value, the engine's filter and the attribute", name, len(args))
		}
		if !args[0].IsTruthy() {
			return jinja.NewList(nil), nil // jinja2 iterates the value only if it is true: none gives []
		}
		items, err := listFilter(args[:1], nil)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("%s: %w", name, err)
		}
		list := items.AsList().Items
		values, where := list, name
		if attr {
			path := strings.Split(engineKey(args[2]), ".")
			where = fmt.Sprintf("%s(%q)", name, strings.Join(path, "."))
			values = make([]jinja.Value, len(list))
			for i, item := range list {
				if values[i], err = attrGetter(item, path); err != nil {
					return jinja.Undefined(), fmt.Errorf("%s: item %d: %w", where, i, err)
				}
			}
		}
		keep, err := testItems(args[1], values, args[rest:], kwargs)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("%s: %w", where, err)
		}
		out := make([]jinja.Value, 0, len(list))
		for i, item := range list {
			if keep[i] != reject {
				out = append(out, item)
			}
		}
		return jinja.NewList(out), nil
	}
}

// testItems is whether each of values passes the test named by args[0]
// with the arguments after it, or is true where there is no test: a test
// `is` gives to ours (ownTest) is ours, any other the engine's, which
// engine (its selectattr filter) applies to stand-ins holding each value
// as their one key.
func testItems(engine jinja.Value, values, args []jinja.Value, kwargs map[string]jinja.Value) ([]bool, error) {
	keep := make([]bool, len(values))
	if len(args) == 0 {
		for i, v := range values {
			keep[i] = v.IsTruthy()
		}
		return keep, nil
	}
	if !args[0].IsString() || args[0].AsString() == "truthy" {
		// truthy is the engine's selectattr's word for no test.
		return nil, fmt.Errorf("TemplateRuntimeError: No test named %s.", reprOf(args[0]))
	}
	if call, own := ownTestCallable(args[0].AsString()); call != "" {
		test := own.AsCallable().Fn
		for i, v := range values {
			r, err := test(append([]jinja.Value{v}, args[1:]...), kwargs)
			if err != nil {
				return nil, err
			}
			keep[i] = r.IsTruthy()
		}
		return keep, nil
	}
	standIns := make([]jinja.Value, len(values))
	for i, v := range values {
		standIn := jinja.NewDict()
		standIn.AsDict().Set("i", jinja.NewInt(int64(i)))
		if !v.IsUndefined() {
			standIn.AsDict().Set("v", v)
		}
		standIns[i] = standIn
	}
	kept, err := engine.AsCallable().Fn(append([]jinja.Value{jinja.NewList(standIns), jinja.NewString("v")}, args...), kwargs)
	if err != nil {
		return nil, err
	}
	for _, standIn := range kept.AsList().Items {
		i, _ := standIn.AsDict().Get("i")
		keep[i.AsInt()] = true
	}
	return keep, nil
}

// attrGetter is jinja2's make_attrgetter: obj read along path, a part of
// digits indexing; the last part finding nothing gives Undefined, a part
// before it jinja2's UndefinedError (it reads on from an Undefined).
func attrGetter(obj jinja.Value, path []string) (jinja.Value, error) {
	v, found := attrPath(obj, path)
	if !found && len(path) > 1 {
		if _, ok := attrPath(obj, path[:len(path)-1]); !ok {
			return jinja.Undefined(), missingPathError(obj, path)
		}
	}
	return v, nil
}

// joinName is the variable our join filter is passed as: the engine's
// looks attribute= up as one key, prints None as "" and gives a string
// back whole rather than joining its characters.
const joinName = "__hone_join"

// joinFilter is jinja2's join(value, d=”, attribute=None): the value's
// items (what list gives of it), each read along attribute's dotted path
// where there is one, printed as Python's str() prints them and joined
// with d.
func joinFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 || len(args) > 3 {
		return jinja.Undefined(), fmt.Errorf("TypeError: join: takes from 1 to 3 positional arguments but %d were given", len(args))
	}
	items, err := listFilter(args[:1], nil)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("join: %w", err)
	}
	sep := ""
	if d, ok := param(args, kwargs, 1, "d"); ok {
		sep = pythonStr(d)
	}
	var path []string
	if attr, ok := param(args, kwargs, 2, "attribute"); ok && !attr.IsNone() {
		path = strings.Split(engineKey(attr), ".")
	}
	var b strings.Builder
	for i, item := range items.AsList().Items {
		if path != nil {
			if item, err = attrGetter(item, path); err != nil {
				return jinja.Undefined(), fmt.Errorf("join(attribute=%q): item %d: %w", strings.Join(path, "."), i, err)
			}
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(pythonStr(item))
	}
	return jinja.NewString(b.String()), nil
}
