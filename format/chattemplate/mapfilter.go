package chattemplate

import (
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// mapName is the variable our map filter, for a filter named by a string
// literal, is passed as.
const mapName = "__hone_map"

// engineFilterPrefix is the prefix of the names the engine keeps its
// filters under in the scope every template reads its variables from
// (jinja v1.8.0's lookupFilter); a name with it reaches the engine's
// filter as a value, which is how our map applies one.
const engineFilterPrefix = "__filter_"

// mapByName rewrites `|map('name'` (the filter's name ends at k in code)
// to `|__hone_map('name', F` where F is the filter named: ours where
// renamedFilter has one, else the engine's. The engine's map ignores a
// filter's name and gives the items back as they are. It returns where
// the rewritten text ends in code and what replaces code up to there, or
// 0 and "" when the call is not map with a literal name first
// (map(attribute=...) is the engine's, which does what jinja2 does).
func mapByName(code, name string, k int) (int, string) {
	if name != "map" {
		return 0, ""
	}
	j := skipSpace(code, k)
	if j >= len(code) || code[j] != '(' {
		return 0, ""
	}
	q := skipSpace(code, j+1)
	if q >= len(code) || (code[q] != '\'' && code[q] != '"') {
		return 0, ""
	}
	end := skipString(code, q)
	filter := code[q+1 : end-1]
	if !isIdent(filter) {
		return 0, ""
	}
	fn := renamedFilter(filter)
	if fn == "" {
		fn = engineFilterPrefix + filter
	}
	after := skipSpace(code, end)
	if after < len(code) && code[after] != ',' && code[after] != ')' {
		return 0, "" // an expression that starts with a string: not a name
	}
	return end, "(" + code[q:end] + ", " + fn
}

func skipSpace(code string, i int) int {
	for i < len(code) && strings.IndexByte(" \t\n\r\f", code[i]) >= 0 {
		i++
	}
	return i
}

// mapFilter is jinja2's map(value, name, *args, **kwargs) once the name is
// resolved: args[0] is the value, args[1] the filter's name, args[2] the
// filter (Undefined when there is none by that name), and the rest its
// arguments. The value's items are what list gives of it (a dict's keys, a
// string's characters). jinja2 gives a generator, which only a loop or a
// filter such as list or join can read; a list reads the same there.
func mapFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 3 {
		return jinja.Undefined(), fmt.Errorf("map: called with %d arguments, want the value, the filter's name and the filter", len(args))
	}
	if !args[2].IsCallable() {
		return jinja.Undefined(), fmt.Errorf("map: No filter named '%s'", args[1].AsString())
	}
	items, err := listFilter(args[:1], nil)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("map: %w", err)
	}
	fn := args[2].AsCallable().Fn
	list := items.AsList().Items
	out := make([]jinja.Value, len(list))
	for i, item := range list {
		v, err := fn(append([]jinja.Value{item}, args[3:]...), kwargs)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("map(%q): item %d: %w", args[1].AsString(), i, err)
		}
		out[i] = v
	}
	return jinja.NewList(out), nil
}
