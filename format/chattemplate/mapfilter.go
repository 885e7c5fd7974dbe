package chattemplate

import (
	"errors"
	"fmt"
	"strconv"
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

// mapAttrName is the variable our map(attribute=...) is passed as: the
// engine's looks the attribute's whole text up as one key of each item,
// where jinja2 reads a dotted path (function.name) part by part.
const mapAttrName = "__hone_map_attr"

// mapByAttribute reports whether the filter call whose name (name) ends
// at k in code is map with an attribute= argument, which renameFilters
// points at mapAttrFilter.
func mapByAttribute(code, name string, k int) bool {
	if name != "map" {
		return false
	}
	j := skipSpace(code, k)
	if j >= len(code) || code[j] != '(' {
		return false
	}
	e := closeBracket(code, j)
	if e < 0 {
		return false
	}
	for _, arg := range splitTopLevel(code[j+1 : e]) {
		kw, rest, ok := strings.Cut(strings.TrimSpace(arg), "=")
		if ok && strings.TrimSpace(kw) == "attribute" && !strings.HasPrefix(rest, "=") {
			return true
		}
	}
	return false
}

// mapAttrFilter is jinja2's map(value, attribute=path, default=d): each
// item of the value (what list gives of it) read along the path, whose
// parts a dot separates and a part of digits is an index, as jinja2's
// make_attrgetter reads it; an item where the path finds nothing gives d
// unless d is None or left out, and Undefined then, or jinja2's
// UndefinedError where a part before the last found nothing. A part that
// names a Python method rather than a key (items of a dict without that
// key) finds nothing here, where jinja2 gives the bound method: no
// template prints one.
func mapAttrFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("map: with attribute=, takes only the value, got %d positional arguments", len(args))
	}
	attr, ok := kwargs["attribute"]
	if !ok {
		return jinja.Undefined(), errors.New("map: attribute= is missing")
	}
	parts := []string{engineKey(attr)}
	if attr.IsString() {
		parts = strings.Split(attr.AsString(), ".")
	}
	items, err := listFilter(args, nil)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("map(attribute=%s): %w", engineKey(attr), err)
	}
	def, hasDef := kwargs["default"]
	hasDef = hasDef && !def.IsNone()
	list := items.AsList().Items
	out := make([]jinja.Value, len(list))
	for i, item := range list {
		v, found := attrPath(item, parts)
		switch {
		case found:
		case hasDef:
			v = def
		default:
			// a part before the last finding nothing is jinja2's UndefinedError
			if _, err := attrGetter(item, parts); err != nil {
				return jinja.Undefined(), fmt.Errorf("map(attribute=%s): item %d: %w", engineKey(attr), i, err)
			}
		}
		out[i] = v
	}
	return jinja.NewList(out), nil
}

// attrPath reads obj along parts, an item per part (a part of digits
// indexes a list or string); it reports false, with Undefined, where a
// part finds nothing.
func attrPath(obj jinja.Value, parts []string) (jinja.Value, bool) {
	for _, part := range parts {
		n, index := digitsIndex(part)
		switch {
		case obj.IsDict():
			v, ok := obj.AsDict().Get(part)
			if !ok {
				return jinja.Undefined(), false
			}
			obj = v
		case index && obj.IsList() && n < int64(obj.AsList().Len()):
			obj = obj.AsList().Items[n]
		case index && obj.IsString() && n < int64(len([]rune(obj.AsString()))):
			obj = jinja.NewString(string([]rune(obj.AsString())[n]))
		default:
			return jinja.Undefined(), false
		}
	}
	return obj, true
}

// digitsIndex is a path part of digits as the index jinja2 reads it as.
func digitsIndex(part string) (int64, bool) {
	if part == "" || part[0] < '0' || part[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(part, 10, 64)
	return n, err == nil
}
