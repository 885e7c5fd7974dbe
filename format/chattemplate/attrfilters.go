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
		v, found := attrPath(item, path)
		if !found && len(path) > 1 {
			if _, ok := attrPath(item, path[:len(path)-1]); !ok {
				return jinja.Undefined(), fmt.Errorf("selectattr(%q): item %d: %w", strings.Join(path, "."), i, missingPathError(item, path))
			}
		}
		if found {
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
