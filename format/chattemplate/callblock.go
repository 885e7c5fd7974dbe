package chattemplate

import (
	"fmt"
	"strings"
)

// callerPrefix names the macros call blocks become.
const callerPrefix = "__hone_caller"

// callAsMacro rewrites the content of a {% call(params) f(args) %} or
// {% call f(args) %} tag into the {% macro %} tag its body becomes,
// named callerPrefix and id, and the call f(args, caller=name), name
// checked as jinja2 checks a caller's arguments (use: what its body
// reads), that the {% endcall %} prints (callCloser): jinja2's caller
// takes its parameters as a macro does, where the engine's bound only the
// positional arguments to the names as written, so a default was never
// set ({% call(x, y='d') %} left y undefined, as it did y=5 passed by
// keyword), a parameter not passed read the outer variable of its name,
// and a default with parentheses cut the tag short. The engine's macro
// binds them as jinja2 does, and a macro defined where the call block
// stands sees the same variables. ok is false for a tag whose call is
// no f(...) (left to the engine, which refuses what jinja2 refuses); the
// text returned is then unused.
func callAsMacro(content string, id int, use starUse) (macro, call string, ok bool) {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(content), "call"))
	params, expr := "", rest
	hasParams := strings.HasPrefix(rest, "(")
	if hasParams {
		end := closeBracket(rest, 0)
		if end < 0 || rest[end] != ')' {
			return "", "", false
		}
		params, expr = rest[1:end], strings.TrimSpace(rest[end+1:])
	}
	name := fmt.Sprintf("%s%d", callerPrefix, id)
	if !strings.HasSuffix(expr, ")") {
		return "", "", false
	}
	// The opening bracket of the call's argument list: the last one at
	// the top level, which the final ")" closes.
	open := -1
	scanCode(expr, func(i, depth int) bool {
		if depth == 0 && expr[i] == '(' {
			open = i
		}
		return false
	})
	if open <= 0 || closeBracket(expr, open) != len(expr)-1 {
		return "", "", false
	}
	args := strings.TrimSpace(expr[open+1 : len(expr)-1])
	names, plain := paramNames(params)
	if !plain {
		// A parameter the checked caller cannot name: the macro
		// binds it as the engine does, the caller unchecked.
		return " macro " + name + "(" + params + ") ", expr[:open] + "(" + withCaller(args, name) + ")", true
	}
	// The engine's own caller, of a call block without parameters,
	// dropped the arguments it was called with, and it lost the caller
	// passed through *args or **kwargs ("caller is not callable"): every
	// call block becomes a macro, passed as checked as jinja2's caller
	// is (pyStar: jinja2's TypeError for arguments it has no parameter
	// for, varargs and kwargs for a body that reads them).
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	caller := fmt.Sprintf("%s(%s, [%s], %t, %t, false, 'None')", starName, name, strings.Join(quoted, ", "), use.varargs, use.kwargs)
	return " macro " + withStarParams(name+"("+params+")") + " ", expr[:open] + "(" + withCaller(args, caller) + ")", true
}

// withCaller is the argument list args with the keyword argument
// caller=name (the caller's expression) added: before the first *args or **kwargs argument, which
// jinja2's grammar puts after the keywords (m(**d, caller=c) does not
// parse, and {% call(x) m(**d) %} was refused at load), else at the end.
func withCaller(args, name string) string {
	kw := "caller=" + name
	switch star := starArg(args); {
	case star >= 0:
		return args[:star] + kw + ", " + args[star:]
	case args == "":
		return kw
	case strings.HasSuffix(args, ","):
		return args + " " + kw
	}
	return args + ", " + kw
}

// starArg is where the first top-level argument of the argument list
// args that starts with * (*args, **kwargs) begins, -1 where none does.
func starArg(args string) int {
	star := -1
	argStart := true
	scanCode(args, func(i, depth int) bool {
		switch c := args[i]; {
		case depth == 0 && c == ',':
			argStart = true
		case argStart && c == '*' && depth == 0:
			star = i
			return true
		case c != ' ' && c != '\t' && c != '\n' && c != '\r':
			argStart = false
		}
		return false
	})
	return star
}

// emptyParameter refuses the parameter list params (of a macro or a call
// block, without its brackets) where it has an empty place, a trailing
// or doubled comma, as jinja2 refuses it; the engine took it. tag is the
// tag as the error quotes it. An empty list is no parameters.
func emptyParameter(tag, params string) error {
	if strings.TrimSpace(params) == "" {
		return nil
	}
	parts := splitTopLevel(params)
	for i, p := range parts {
		if strings.TrimSpace(p) != "" {
			continue
		}
		got := ","
		if i == len(parts)-1 {
			got = ")"
		}
		return &staticError{fmt.Sprintf("{%% %s %%}: an empty place in the parameter list (a trailing or doubled comma) (jinja2: expected token 'name', got '%s')",
			strings.Join(strings.Fields(tag), " "), got)}
	}
	return nil
}
