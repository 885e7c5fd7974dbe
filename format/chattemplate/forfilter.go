package chattemplate

import (
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// pairLoopFilter rewrites the filter of a loop that unpacks two names,
// `for k, v in items if cond`, so that cond sees them. The engine tests
// each item against the filter with only the second name bound, to the
// whole item, so `key` in Mistral's `for key, val in tool.items() if key
// != "return"` was undefined, the filter kept every key, and the tool's
// "return" schema was printed into the prompt that jinja2 leaves it out
// of. In the filter, the first name becomes (v[0]) and the second (v[1]),
// the values the engine gives the body; code is the tag's content after
// renameFilters, returned unchanged when it is no such loop.
func pairLoopFilter(code string) string {
	targets, at, ok := forTag(code)
	if !ok {
		return code
	}
	vars := strings.Split(targets, ",")
	if len(vars) != 2 {
		return code
	}
	key, val := strings.TrimSpace(vars[0]), strings.TrimSpace(vars[1])
	if !isIdent(key) || !isIdent(val) || key == val {
		return code
	}
	iter := code[at:]
	if topKeyword(iter, "recursive") >= 0 {
		return code
	}
	cond := topKeyword(iter, "if")
	if cond < 0 {
		return code
	}
	start := at + cond + len("if")
	names := map[string]string{key: "(" + val + "[0])", val: "(" + val + "[1])"}
	return code[:start] + replaceNames(code[start:], names)
}

// forTag splits a for tag's content (code, after renameFilters) at its
// top-level in: the loop's targets (the text between for and in) and the
// offset in code where its iterable begins; ok is false for any other tag.
func forTag(code string) (targets string, iterAt int, ok bool) {
	lead := len(code) - len(strings.TrimLeft(code, " \t\n\r"))
	rest := code[lead:]
	if !strings.HasPrefix(rest, "for") {
		return "", 0, false
	}
	body := rest[len("for"):]
	in := topKeyword(body, "in")
	if in < 0 {
		return "", 0, false
	}
	return body[:in], lead + len("for") + in + len("in"), true
}

// topKeyword finds kw as a word outside strings and brackets, as the
// engine's parser splits a for tag (findKeyword in its parse.go).
func topKeyword(s, kw string) int {
	return scanCode(s, func(i, depth int) bool {
		return depth == 0 && strings.HasPrefix(s[i:], kw) &&
			(i == 0 || !isIdentByte(s[i-1])) && (i+len(kw) >= len(s) || !isIdentByte(s[i+len(kw)]))
	})
}

// replaceNames replaces the variables of expression code named in names:
// identifiers outside strings that are not an attribute (after "."), a
// filter or test name (after "|", "is" or "is not") or a keyword
// argument's name (before a single "=").
func replaceNames(code string, names map[string]string) string {
	var b strings.Builder
	prev := "" // the last identifier or punctuation seen, spaces skipped
	for i := 0; i < len(code); {
		c := code[i]
		switch {
		case c == '\'' || c == '"':
			i, prev = copyString(&b, code, i), "'"
			continue
		case isIdentByte(c) && (c < '0' || c > '9'):
			j := i
			for j < len(code) && isIdentByte(code[j]) {
				j++
			}
			word := code[i:j]
			after := strings.TrimLeft(code[j:], " \t\n\r")
			kwarg := strings.HasPrefix(after, "=") && !strings.HasPrefix(after, "==")
			if to, ok := names[word]; ok && prev != "." && prev != "|" && prev != "is" && prev != "is not" && !kwarg {
				word = to
			}
			b.WriteString(word)
			switch {
			case code[i:j] == "not" && prev == "is":
				prev = "is not"
			default:
				prev = code[i:j]
			}
			i = j
			continue
		case c >= '0' && c <= '9':
			j := i
			for j < len(code) && (isIdentByte(code[j]) || code[j] == '.') {
				j++
			}
			b.WriteString(code[i:j])
			i, prev = j, "0"
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			prev = string(c)
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// iterableName is the variable pyIterable is passed as: checkIterable
// rewrites `for x in ITER` to `for x in __hone_iterable(ITER)`.
const iterableName = "__hone_iterable"

// checkIterable wraps the iterable of a for tag (code, its content after
// renameFilters) in pyIterable, up to the loop's filter (if) or
// recursive; code comes back unchanged when it is no such loop or its
// iterable is a bare tuple (for x in a, b), which a call would change.
func checkIterable(code string) string {
	_, start, ok := forTag(code)
	if !ok {
		return code
	}
	iter := code[start:]
	end := len(iter)
	for _, kw := range []string{"if", "recursive"} {
		if k := topKeyword(iter, kw); k >= 0 && k < end {
			end = k
		}
	}
	expr := iter[:end]
	if strings.TrimSpace(expr) == "" || len(splitTopLevel(expr)) != 1 {
		return code
	}
	return code[:start] + " " + iterableName + "(" + expr + ") " + iter[end:]
}

// pyIterable gives its argument back, or jinja2's TypeError where Python
// cannot iterate it (None, a bool or a number): the engine ran a loop over
// one zero times, so a template that loops over tools without a guard
// rendered where transformers raises.
func pyIterable(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("for loop's iterable check: takes one value, got %d arguments", len(args))
	}
	v := args[0]
	typ := ""
	switch {
	case v.IsNone():
		typ = "NoneType"
	case v.IsBool():
		typ = "bool"
	case v.IsInt():
		typ = "int"
	case v.IsFloat():
		typ = "float"
	default:
		return v, nil
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: '%s' object is not iterable", typ)
}
