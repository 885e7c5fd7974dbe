package chattemplate

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// dictsortName is the variable our dictsort filter is passed as.
const dictsortName = "__hone_dictsort"

// intKeyPrefix is an entry of a dict literal that has an integer key
// ("512: 128"), which jinja2 keeps as an int and the engine turns into
// its text.
var intKeyPrefix = regexp.MustCompile(`^\s*(-?[0-9]+)\s*:`)

// addIntKeys adds to keys the integer keys that the dict literals in a
// tag's code write, in their canonical text (what the engine keeps). Only
// code is read, not string literals or the template's text, where "{…,
// 12:" is no dict.
func addIntKeys(code string, keys map[string]bool) {
	for i := 0; i < len(code); {
		switch code[i] {
		case '\'', '"':
			i = skipString(code, i)
			continue
		case '{':
			end := closeBracket(code, i)
			if end < 0 {
				return
			}
			for _, entry := range splitTopLevel(code[i+1 : end]) {
				if m := intKeyPrefix.FindStringSubmatch(entry); m != nil {
					if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
						keys[strconv.FormatInt(n, 10)] = true
					}
				}
			}
		}
		i++ // into the literal too: a nested one has keys of its own
	}
}

// dictsortFilter returns jinja2's dictsort(value, case_sensitive=False,
// by='key', reverse=False) for a template: the engine's sorted the keys
// as case-sensitive strings and ignored case_sensitive and by. The engine
// keeps every dict key as text, so an integer key of a dict literal
// (Seed-OSS's {0: 0, 512: 128, 1024: 256, …}|dictsort) sorted "1024"
// before "512"; a dict whose keys are all among the integer keys the
// template's dict literals write (intKeys, from addIntKeys) is taken to
// be such a literal and sorted, and given back, as ints. A dict from the
// conversation (JSON objects have only string keys) with other keys stays
// string-keyed, as in Python, even where its keys read as integers.
func dictsortFilter(intKeys map[string]bool) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		if len(args) == 0 || !args[0].IsDict() {
			return jinja.Undefined(), errors.New("dictsort: the value is not a dict")
		}
		caseSensitive, by, reverse := false, "key", false
		opt := func(i int, name string) (jinja.Value, bool) {
			if v, ok := kwargs[name]; ok {
				return v, true
			}
			if i < len(args) {
				return args[i], true
			}
			return jinja.Undefined(), false
		}
		if v, ok := opt(1, "case_sensitive"); ok {
			caseSensitive = v.IsTruthy()
		}
		if v, ok := opt(2, "by"); ok {
			if !v.IsString() || (v.AsString() != "key" && v.AsString() != "value") {
				return jinja.Undefined(), errors.New(`dictsort: You can only sort by either "key" or "value"`)
			}
			by = v.AsString()
		}
		if v, ok := opt(3, "reverse"); ok {
			reverse = v.IsTruthy()
		}
		d := args[0].AsDict()
		items := make([][2]jinja.Value, len(d.Keys))
		ints := len(d.Keys) > 0
		for _, k := range d.Keys {
			ints = ints && intKeys[k]
		}
		for i, k := range d.Keys {
			key := jinja.NewString(k)
			if ints {
				n, _ := strconv.ParseInt(k, 10, 64)
				key = jinja.NewInt(n)
			}
			items[i] = [2]jinja.Value{key, d.Data[k]}
		}
		pos := 0
		if by == "value" {
			pos = 1
		}
		var cmpErr error
		sort.SliceStable(items, func(i, j int) bool {
			a, b := items[i][pos], items[j][pos]
			if reverse {
				a, b = b, a
			}
			less, err := pyLess(a, b, caseSensitive)
			if err != nil && cmpErr == nil {
				cmpErr = err
			}
			return less
		})
		if cmpErr != nil {
			return jinja.Undefined(), fmt.Errorf("dictsort: %w", cmpErr)
		}
		out := make([]jinja.Value, len(items))
		for i, it := range items {
			out[i] = jinja.NewList([]jinja.Value{it[0], it[1]})
		}
		return jinja.NewList(out), nil
	}
}

// pyLess is Python's a < b for the values dictsort compares: numbers
// (bools among them) with numbers, strings with strings (lower-cased
// unless caseSensitive, as jinja2's ignore_case does), lists item by item;
// anything else is Python's TypeError.
func pyLess(a, b jinja.Value, caseSensitive bool) (bool, error) {
	switch {
	case isPyNumber(a) && isPyNumber(b):
		if a.IsInt() && b.IsInt() {
			return a.AsInt() < b.AsInt(), nil
		}
		return pyFloat(a) < pyFloat(b), nil
	case a.IsString() && b.IsString():
		x, y := a.AsString(), b.AsString()
		if !caseSensitive {
			x, y = strings.ToLower(x), strings.ToLower(y)
		}
		return x < y, nil
	case a.IsList() && b.IsList():
		xs, ys := a.AsList().Items, b.AsList().Items
		for i := 0; i < len(xs) && i < len(ys); i++ {
			// Python compares lists' items as they are, not lower-cased.
			if lt, err := pyLess(xs[i], ys[i], true); err != nil || lt {
				return lt, err
			}
			if gt, err := pyLess(ys[i], xs[i], true); err != nil || gt {
				return false, err
			}
		}
		return len(xs) < len(ys), nil
	}
	return false, fmt.Errorf("'<' not supported between instances of '%s' and '%s'", pyTypeName(a), pyTypeName(b))
}

func isPyNumber(v jinja.Value) bool { return v.IsInt() || v.IsFloat() || v.IsBool() }

// pyFloat is a number's value as a float (True is 1).
func pyFloat(v jinja.Value) float64 {
	switch {
	case v.IsInt():
		return float64(v.AsInt())
	case v.IsFloat():
		return v.AsFloat()
	case v.IsBool() && v.AsBool():
		return 1
	}
	return 0
}
