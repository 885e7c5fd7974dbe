package chattemplate

import (
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// guardMacroDefaults rewrites the default values of a {% macro %} tag's
// content so that evaluating one counts as a level of macro nesting: the
// engine evaluates a default when the macro is called, before its body
// (and so before the body's hookEnter), and a default that calls the macro
// again, directly, through another macro's default or through a value
// holding it (namespace(f=m)), recursed until Go's stack overflowed.
// jinja2 stops the same templates with a RecursionError. Each default E
// becomes `__hone_enter() or __hone_leave_with(E)`: the enter, evaluated
// first, counts the level and gives "" (false), so `or` evaluates and
// returns E's value as it is, and the leave ends the level.
//
// The parameters are cut as the engine cuts them (parseMacro: after the
// first "(", without the last ")", at every comma, a name before the
// first "="), so the defaults wrapped are the ones it evaluates. A default
// whose brackets close before its end is refused: the engine refuses it
// too, but wrapped it would parse, with the rest after the leave.
func guardMacroDefaults(content string) (string, error) {
	head, params, ok := strings.Cut(strings.TrimSpace(content), "(")
	if !ok {
		return content, nil // the engine's error: no parameter list
	}
	params = strings.TrimSuffix(params, ")")
	if strings.TrimSpace(params) == "" {
		return content, nil
	}
	parts := strings.Split(params, ",")
	for i, part := range parts {
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		if !balancedBrackets(value) {
			return "", &staticError{fmt.Sprintf("unbalanced brackets in the default value of %s", strings.TrimSpace(name))}
		}
		parts[i] = name + "=" + hookEnter + "() or " + hookLeaveWith + "(" + value + ")"
	}
	return " " + head + "(" + strings.Join(parts, ",") + ") ", nil
}

// balancedBrackets reports whether code's (, [ and { close in order and
// none closes what it did not open, string literals skipped.
func balancedBrackets(code string) bool {
	var open []byte
	for i := 0; ; {
		start, end := tagToken(code, i)
		if start == len(code) {
			return len(open) == 0
		}
		switch c := code[start]; c {
		case '(', '[', '{':
			open = append(open, c)
		case ')', ']', '}':
			if len(open) == 0 || open[len(open)-1] != map[byte]byte{')': '(', ']': '[', '}': '{'}[c] {
				return false
			}
			open = open[:len(open)-1]
		}
		i = end
	}
}

// unsetName is both the value a macro parameter whose default pyOps
// rewrites is given as its default and the test for it: __hone_unset(a)
// is true when a holds that value (deferDefaults).
const unsetName = "__hone_unset"

// unsetValue is the value unsetName names: a callable that tests whether
// its argument is itself.
func unsetValue() jinja.Value {
	return jinja.NewCallable(unsetName, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), fmt.Errorf("%s: takes one value, got %d", unsetName, len(args))
		}
		return jinja.NewBool(args[0].IsCallable() && args[0].AsCallable().Name == unsetName), nil
	})
}

// deferredDefault is a parameter whose default value the body sets.
type deferredDefault struct {
	name, value string
}

// deferDefaults takes out of a {% macro %} tag's content the default
// values that hold a comma, in a string or between brackets (sep=", ",
// a=[1, 2]), and those that pyOps rewrites (2 ** 3, x.y, 1 + 'x'): the
// engine cuts the parameter list at every comma (parseMacro), so a
// default with one lost its rest (Hone refused the template), and the
// calls pyOps writes have commas, so it evaluated those as written
// (2 ** 3 gave 8.0, x.y with x undefined ""). Each such parameter gets unsetName as its default, and its body
// starts with a set of its default where it holds that value (deferred):
// evaluated only for a parameter left out, after the parameters before
// it, as jinja2 evaluates it; the defaults after the first such one are
// deferred too, as they may read it. The other defaults stay as written.
func deferDefaults(content string) (string, []deferredDefault) {
	head, params, ok := strings.Cut(content, "(")
	end := strings.LastIndexByte(params, ')')
	if !ok || end < 0 {
		return content, nil
	}
	parts := splitTopLevel(params[:end])
	var deferred []deferredDefault
	for i, part := range parts {
		name, value, ok := strings.Cut(part, "=")
		value = strings.TrimSpace(value)
		// once one default is deferred, so is every later one: the engine
		// evaluates those left as written before the body, where a
		// parameter deferred still holds unsetName (b=a read it, not a's
		// default)
		if !ok || (deferred == nil && pyOps(value) == value && !strings.Contains(value, ",")) || !isIdent(strings.TrimSpace(name)) {
			continue
		}
		deferred = append(deferred, deferredDefault{strings.TrimSpace(name), value})
		parts[i] = name + "=" + unsetName
	}
	if deferred == nil {
		return content, nil
	}
	return head + "(" + strings.Join(parts, ",") + params[end:], deferred
}

// setContent is the {% set %} tag's content that gives d's parameter its
// default where it was left out.
func (d deferredDefault) setContent() string {
	return fmt.Sprintf(" set %s = (%s) if %s(%s) else %s ", d.name, d.value, unsetName, d.name, d.name)
}
