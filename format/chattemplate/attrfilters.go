package chattemplate

import (
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// selectattrName and rejectattrName are the variables our selectattr and
// rejectattr are passed as: the engine's look the attribute's whole text
// up as one key of each item, where jinja2 reads a dotted path
// (function.name) part by part.
const (
	selectattrName = "__hone_selectattr"
	rejectattrName = "__hone_rejectattr"
)

// attrSelectCall rewrites `|selectattr(` or `|rejectattr(` (the filter's
// name ends at k in code) to `|__hone_selectattr(__filter_selectattr, `,
// which gives our filter the engine's, whose tests (equalto, defined, in,
// ...) it keeps. It returns where the rewritten text ends in code and
// what replaces code up to there, or 0 and "" for another filter or a
// call without arguments.
func attrSelectCall(code, name string, k int) (int, string) {
	ours := selectattrName
	switch name {
	case "selectattr":
	case "rejectattr":
		ours = rejectattrName
	default:
		return 0, ""
	}
	j := skipSpace(code, k)
	if j >= len(code) || code[j] != '(' {
		return 0, ""
	}
	e := closeBracket(code, j)
	if e < 0 || strings.TrimSpace(code[j+1:e]) == "" {
		return 0, ""
	}
	return j + 1, "|" + ours + "(" + engineFilterPrefix + name + ", "
}

// attrSelectFilter is jinja2's selectattr(value, attribute, test, *args)
// (rejectattr where reject): args[1] is the engine's filter, args[2] the
// attribute. Each item of the value (what list gives of it) is read along
// the attribute's path, as jinja2's make_attrgetter reads it, and the
// engine's filter tests what it finds, handed as the one key of a
// stand-in item; a part before the last that finds nothing fails with
// jinja2's UndefinedError, the last one gives Undefined to the test.
func attrSelectFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 3 || !args[1].IsCallable() {
		return jinja.Undefined(), fmt.Errorf("selectattr: called with %d arguments, want the value, the engine's filter and the attribute", len(args))
	}
	if !args[0].IsTruthy() {
		return jinja.NewList(nil), nil // jinja2 iterates the value only if it is true: none gives []
	}
	items, err := listFilter(args[:1], nil)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("selectattr: %w", err)
	}
	path := strings.Split(engineKey(args[2]), ".")
	list := items.AsList().Items
	standIns := make([]jinja.Value, len(list))
	for i, item := range list {
		standIn := jinja.NewDict()
		standIn.AsDict().Set("i", jinja.NewInt(int64(i)))
		v, err := attrGetter(item, path)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("selectattr(%q): item %d: %w", strings.Join(path, "."), i, err)
		}
		if !v.IsUndefined() {
			standIn.AsDict().Set("v", v)
		}
		standIns[i] = standIn
	}
	testArgs := []jinja.Value{jinja.NewList(standIns), jinja.NewString("v")}
	if len(args) == 3 {
		testArgs = append(testArgs, jinja.NewString("truthy"))
	}
	kept, err := args[1].AsCallable().Fn(append(testArgs, args[3:]...), kwargs)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("selectattr(%q): %w", strings.Join(path, "."), err)
	}
	out := make([]jinja.Value, 0, kept.AsList().Len())
	for _, standIn := range kept.AsList().Items {
		i, _ := standIn.AsDict().Get("i")
		out = append(out, list[i.AsInt()])
	}
	return jinja.NewList(out), nil
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
