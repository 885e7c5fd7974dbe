package chattemplate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// The engine's str methods differ from Python's, which transformers'
// jinja2 calls: split ignores maxsplit (and splits between every character
// when sep is None), there is no rsplit, lstrip()/rstrip() strip only
// " \t\n\r" and strip() misses U+001C..U+001F, and startswith/endswith take
// neither a tuple of affixes nor start/end. Chat templates cut <think>
// blocks and tool calls out of messages with exactly these methods, so the
// template text is rewritten (renameFilters) to call ours instead:
// `x.split(a)` becomes `x|__hone_str_split(a)`. The engine parses a filter
// where it parses an attribute call, as a postfix of the same operand, so
// the rewrite changes nothing else about the expression.

// strMethodPrefix starts the variable names our str methods are passed as.
const strMethodPrefix = "__hone_str_"

// strBoundPrefix starts the names of the filters that give our str method
// bound to a string: a call with *args or **kwargs is rewritten to
// `x.format|__hone_splat(…)` (splatCalls), which calls whatever x.format
// is, so renameFilters makes it `x|__hone_str_bound_format|__hone_splat(…)`,
// where the engine's method would have been called ('{a}'.format(**d)
// rendered "{a}").
const strBoundPrefix = strMethodPrefix + "bound_"

// strMethodNames are the str methods replaced by ours.
func strMethodNames() []string {
	return append([]string{"split", "rsplit", "strip", "lstrip", "rstrip", "startswith", "endswith",
		"find", "rfind", "index", "rindex", "count", "title", "capitalize", "format"}, strExtraNames()...)
}

// isStrMethod reports whether name is one of strMethodNames.
func isStrMethod(name string) bool {
	return slices.Contains(strMethodNames(), name)
}

// strMethodCallables are our str methods as template variables.
func strMethodCallables() map[string]jinja.Value {
	out := map[string]jinja.Value{}
	for _, name := range strMethodNames() {
		out[strMethodPrefix+name] = jinja.NewCallable("str."+name, strMethod(name))
	}
	return out
}

// strBoundCallables are the filters strBoundPrefix names: each gives our
// str method bound to the value it filters.
func strBoundCallables() map[string]jinja.Value {
	out := map[string]jinja.Value{}
	for _, name := range strMethodNames() {
		method := strMethod(name)
		out[strBoundPrefix+name] = jinja.NewCallable("str."+name, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			self := jinja.Undefined()
			if len(args) > 0 {
				self = args[0]
			}
			return jinja.NewCallable("str."+name, func(call []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
				return method(append([]jinja.Value{self}, call...), kwargs)
			}), nil
		})
	}
	return out
}

// strMethod is the str method name as a filter: args[0] is the string the
// method was called on, the rest are the call's arguments.
func strMethod(name string) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		if len(args) > 0 && args[0].IsList() && (name == "index" || name == "count") {
			return listSearch(args[0].AsList(), args[1:], name)
		}
		if len(args) == 0 || !args[0].IsString() {
			what := "nothing"
			if len(args) > 0 {
				what = args[0].String()
				if args[0].IsUndefined() {
					what = "an undefined value"
				}
			}
			return jinja.Undefined(), fmt.Errorf("%s has no method %s", what, name)
		}
		s, rest := args[0].AsString(), args[1:]
		switch name {
		case "split", "rsplit":
			return pySplit(s, rest, kwargs, name == "rsplit")
		case "strip", "lstrip", "rstrip":
			return pyStrip(s, rest, kwargs, name)
		case "find", "rfind", "index", "rindex", "count":
			return pySearch(s, rest, kwargs, name)
		case "title":
			return jinja.NewString(pyTitle(s)), nil
		case "capitalize":
			return jinja.NewString(pyCapitalize(s)), nil
		case "format":
			return pyStrFormat(s, rest, kwargs)
		case "startswith", "endswith":
			return pyAffix(s, rest, kwargs, name)
		default:
			v, _, err := strExtra(s, rest, kwargs, name)
			return v, err
		}
	}
}

// param is the i-th positional argument or the keyword argument key, and
// whether either was given (None counts as not given).
func param(args []jinja.Value, kwargs map[string]jinja.Value, i int, key string) (jinja.Value, bool) {
	v, ok := jinja.Undefined(), false
	if i < len(args) {
		v, ok = args[i], true
	} else if kv, has := kwargs[key]; has {
		v, ok = kv, true
	}
	if v.IsNone() || v.IsUndefined() {
		return v, false
	}
	return v, ok
}

// pySplit is str.split(sep=None, maxsplit=-1) and str.rsplit.
func pySplit(s string, args []jinja.Value, kwargs map[string]jinja.Value, right bool) (jinja.Value, error) {
	maxsplit := -1
	if v, ok := param(args, kwargs, 1, "maxsplit"); ok {
		if !v.IsInt() {
			return jinja.Undefined(), errors.New("split: maxsplit must be an integer")
		}
		maxsplit = int(v.AsInt())
	}
	var parts []string
	if sep, ok := param(args, kwargs, 0, "sep"); ok {
		if !sep.IsString() {
			return jinja.Undefined(), errors.New("split: sep must be a string or None")
		}
		if sep.AsString() == "" {
			return jinja.Undefined(), errors.New("split: empty separator")
		}
		parts = splitSep(s, sep.AsString(), maxsplit, right)
	} else {
		parts = splitSpace(s, maxsplit, right)
	}
	items := make([]jinja.Value, len(parts))
	for i, p := range parts {
		items[i] = jinja.NewString(p)
	}
	return jinja.NewList(items), nil
}

// splitSep splits at sep, at most maxsplit times (all when negative),
// from the left or from the right.
func splitSep(s, sep string, maxsplit int, right bool) []string {
	if maxsplit < 0 {
		return strings.Split(s, sep)
	}
	if !right {
		return strings.SplitN(s, sep, maxsplit+1)
	}
	var rev []string
	for len(rev) < maxsplit {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		rev = append(rev, s[i+len(sep):])
		s = s[:i]
	}
	out := []string{s}
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}

// splitSpace splits at runs of Python whitespace, dropping empty words;
// after maxsplit splits the rest is one word that keeps its whitespace on
// the far side.
func splitSpace(s string, maxsplit int, right bool) []string {
	var words []string
	if !right {
		for {
			s = strings.TrimLeftFunc(s, isPythonSpace)
			if s == "" {
				return words
			}
			if maxsplit >= 0 && len(words) == maxsplit {
				return append(words, s)
			}
			end := strings.IndexFunc(s, isPythonSpace)
			if end < 0 {
				return append(words, s)
			}
			words, s = append(words, s[:end]), s[end:]
		}
	}
	for {
		s = strings.TrimRightFunc(s, isPythonSpace)
		if s == "" || (maxsplit >= 0 && len(words) == maxsplit) || strings.LastIndexFunc(s, isPythonSpace) < 0 {
			if s != "" {
				words = append(words, s)
			}
			break
		}
		i := strings.LastIndexFunc(s, isPythonSpace)
		_, size := utf8.DecodeRuneInString(s[i:])
		words, s = append(words, s[i+size:]), s[:i]
	}
	for i, j := 0, len(words)-1; i < j; i, j = i+1, j-1 {
		words[i], words[j] = words[j], words[i]
	}
	return words
}

// pyStrip is str.strip(chars=None), lstrip and rstrip.
func pyStrip(s string, args []jinja.Value, kwargs map[string]jinja.Value, name string) (jinja.Value, error) {
	trim := func(s string) string { return strings.TrimFunc(s, isPythonSpace) }
	left := func(s string) string { return strings.TrimLeftFunc(s, isPythonSpace) }
	right := func(s string) string { return strings.TrimRightFunc(s, isPythonSpace) }
	if v, ok := param(args, kwargs, 0, "chars"); ok {
		if !v.IsString() {
			return jinja.Undefined(), fmt.Errorf("%s: chars must be a string or None", name)
		}
		cut := v.AsString()
		trim = func(s string) string { return strings.Trim(s, cut) }
		left = func(s string) string { return strings.TrimLeft(s, cut) }
		right = func(s string) string { return strings.TrimRight(s, cut) }
	}
	switch name {
	case "lstrip":
		return jinja.NewString(left(s)), nil
	case "rstrip":
		return jinja.NewString(right(s)), nil
	}
	return jinja.NewString(trim(s)), nil
}

// pyAffix is str.startswith(prefix, start=None, end=None) and endswith,
// the affix a string or a tuple (which reaches us as a list) of strings.
func pyAffix(s string, args []jinja.Value, kwargs map[string]jinja.Value, name string) (jinja.Value, error) {
	affix, ok := param(args, kwargs, 0, "prefix")
	if !ok && name == "endswith" {
		affix, ok = param(args, kwargs, 0, "suffix")
	}
	if !ok {
		return jinja.Undefined(), fmt.Errorf("%s: missing the affix", name)
	}
	var affixes []string
	switch {
	case affix.IsString():
		affixes = []string{affix.AsString()}
	case affix.IsList():
		for _, v := range affix.AsList().Items {
			if !v.IsString() {
				return jinja.Undefined(), fmt.Errorf("%s: a tuple of strings only", name)
			}
			affixes = append(affixes, v.AsString())
		}
	default:
		return jinja.Undefined(), fmt.Errorf("%s: first argument must be a string or a tuple of strings", name)
	}
	runes := []rune(s)
	n := len(runes)
	start, end := 0, n
	for i, key := range []string{"start", "end"} {
		v, ok := param(args, kwargs, i+1, key)
		if !ok {
			continue
		}
		if !v.IsInt() {
			return jinja.Undefined(), fmt.Errorf("%s: %s must be an integer or None", name, key)
		}
		idx := int(v.AsInt())
		if idx < 0 {
			idx = max(idx+n, 0)
		}
		if i == 0 {
			start = idx
		} else {
			end = min(idx, n)
		}
	}
	if start > n || start > end {
		return jinja.NewBool(false), nil
	}
	sub := ""
	if start < end {
		sub = string(runes[start:end])
	}
	for _, a := range affixes {
		if (name == "startswith" && strings.HasPrefix(sub, a)) || (name == "endswith" && strings.HasSuffix(sub, a)) {
			return jinja.NewBool(true), nil
		}
	}
	return jinja.NewBool(false), nil
}
