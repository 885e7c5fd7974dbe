package chattemplate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// splatName is the filter a call with *args or **kwargs is rewritten to
// (splatCalls).
const splatName = "__hone_splat"

// kwargsName is the keyword argument a call's **kwargs is passed to
// __hone_splat as; splatFilter spreads it.
const kwargsName = "__hone_kwargs"

// splatCalls rewrites a call with a spread argument, f(a, *xs, k=v, **d),
// as f|__hone_splat(a, xs, k=v, __hone_kwargs=d), which calls f with xs's
// items after a and the keyword arguments with d's entries, as jinja2
// does: the engine has no *args or **kwargs and refused the template
// (AI21 Jamba's calls macros_to_call[i](*params_for_macros[i])). Without
// *xs the spread list is []. A filter applies to the postfix expression
// before it, so the callee needs no parsing. As in jinja2, blanks may
// stand between the callee and "(", and keyword arguments before or after
// *xs; calls that jinja2 refuses (a positional argument after *xs or a
// keyword one, anything after **d, two of either) are left as written,
// for the engine to refuse.
func splatCalls(code string) string {
	if !strings.Contains(code, "*") {
		return code
	}
	var b strings.Builder
	for i := 0; i < len(code); {
		c := code[i]
		if c == '\'' || c == '"' {
			i = copyString(&b, code, i)
			continue
		}
		if c == '(' && callOpen(code[:i]) {
			if end := closeParen(code, i); end > 0 {
				if args, ok := splatArgs(code[i+1 : end]); ok {
					b.WriteString("|" + splatName + "(" + args + ")")
					i = end + 1
					continue
				}
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// callOpen reports whether a "(" after before opens a call's arguments
// that splatCalls may rewrite: it follows a name that is no keyword, or
// a ")" or "]", and is not a filter's or a test's.
func callOpen(before string) bool {
	before = strings.TrimRight(before, " \t\r\n")
	if before == "" {
		return false
	}
	last := before[len(before)-1]
	if last == ')' || last == ']' {
		return true
	}
	i := len(before)
	for i > 0 && isIdentByte(before[i-1]) {
		i--
	}
	switch before[i:] {
	case "", "and", "or", "not", "in", "is", "if", "elif", "else":
		return false
	}
	return !filterOrTest(before)
}

// splatArgs gives the arguments of __hone_splat for a call's argument
// text: the positional ones, the spread one without its "*" ([] without
// one), the keyword ones, then the **kwargs one as __hone_kwargs=, each
// with its blanks and line breaks kept (error line numbers stay right);
// false for a call with neither * nor **, or with an argument order
// jinja2 refuses.
func splatArgs(inner string) (string, bool) {
	args := splitTopLevel(inner)
	tail := ""
	if n := len(args); n > 1 && strings.TrimSpace(args[n-1]) == "" {
		tail, args = args[n-1], args[:n-1] // a trailing comma
	}
	var pos, kw []string
	star, dstar := "", ""
	for _, a := range args {
		t := strings.TrimSpace(a)
		switch {
		case dstar != "":
			return "", false // jinja2 takes nothing after **kwargs
		case strings.HasPrefix(t, "**"):
			if strings.TrimSpace(t[2:]) == "" {
				return "", false
			}
			at := strings.Index(a, "**")
			dstar = splatCalls(a[:at] + kwargsName + "=" + a[at+2:])
		case strings.HasPrefix(t, "*"):
			if star != "" || strings.TrimSpace(t[1:]) == "" {
				return "", false
			}
			at := strings.IndexByte(a, '*')
			star = splatCalls(a[:at] + " " + a[at+1:])
		case keywordArg(t):
			kw = append(kw, splatCalls(a))
		default:
			if star != "" || len(kw) > 0 || !plainPositional(t) {
				return "", false
			}
			pos = append(pos, splatCalls(a))
		}
	}
	switch {
	case star == "" && dstar == "":
		return "", false
	case star == "":
		star = "[]"
	}
	if dstar != "" {
		kw = append(kw, dstar)
	}
	return strings.Join(append(append(pos, star), kw...), ",") + tail, true
}

// keywordArg reports whether a call's argument t is name=value.
func keywordArg(t string) bool {
	i := 0
	for i < len(t) && isIdentByte(t[i]) {
		i++
	}
	if i == 0 || !isIdent(t[:i]) {
		return false
	}
	rest := strings.TrimLeft(t[i:], " \t\r\n")
	return strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "==")
}

// filterOrTest reports whether the "(" after before opens the arguments
// of a filter (x|join(…)) or a test (x is divisibleby(…)): jinja2 passes
// the value first there, which f|__hone_splat would not (it would call
// the filter's result), so such a call is left for the engine to refuse.
func filterOrTest(before string) bool {
	i := len(before)
	for i > 0 && (isIdentByte(before[i-1]) || before[i-1] == '.') {
		i--
	}
	if i == len(before) {
		return false // the callee is (…) or […], not a name
	}
	rest := strings.TrimRight(before[:i], " \t\r\n")
	if strings.HasSuffix(rest, "|") {
		return true
	}
	word := func(s, w string) bool {
		return strings.HasSuffix(s, w) && (len(s) == len(w) || !isIdentByte(s[len(s)-len(w)-1]))
	}
	if word(rest, "not") {
		rest = strings.TrimRight(strings.TrimSuffix(rest, "not"), " \t\r\n")
	}
	return word(rest, "is")
}

// closeParen returns the index of the ")" that closes the "(" at open,
// skipping strings and nested brackets; -1 when there is none.
func closeParen(code string, open int) int {
	if end := closeBracket(code, open); end >= 0 && code[end] == ')' {
		return end
	}
	return -1
}

// plainPositional reports whether t is a positional argument the rewrite
// keeps: not empty, no * or ** and no keyword (a top-level "=" that is not
// part of ==, !=, <= or >=).
func plainPositional(t string) bool {
	if t == "" || strings.HasPrefix(t, "*") {
		return false
	}
	return scanCode(t, func(i, depth int) bool {
		if depth != 0 || t[i] != '=' {
			return false
		}
		prev, next := byte(0), byte(0)
		if i > 0 {
			prev = t[i-1]
		}
		if i+1 < len(t) {
			next = t[i+1]
		}
		return next != '=' && prev != '=' && prev != '!' && prev != '<' && prev != '>'
	}) < 0
}

// splatFilter calls args[0] with args[1:len-1] and then the items of the
// last argument, a list (or a string's characters, or a dict's keys, as
// Python spreads them), and with the keyword arguments, those of the dict
// passed as __hone_kwargs among them.
func splatFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 {
		return jinja.Undefined(), errors.New("*args: nothing to spread")
	}
	if !args[0].IsCallable() {
		return jinja.Undefined(), errors.New("*args: " + pyTypeName(args[0]) + " object is not callable")
	}
	spread, err := listFilter(args[len(args)-1:], nil)
	if err != nil {
		return jinja.Undefined(), errors.New("*args: the argument after * must be an iterable, not " + pyTypeName(args[len(args)-1]))
	}
	call := append(append([]jinja.Value(nil), args[1:len(args)-1]...), spread.AsList().Items...)
	named := map[string]jinja.Value{}
	for k, v := range kwargs {
		if k != kwargsName {
			named[k] = v
		}
	}
	if d, ok := kwargs[kwargsName]; ok {
		if !d.IsDict() {
			return jinja.Undefined(), errors.New("**kwargs: the argument after ** must be a mapping, not " + pyTypeName(d))
		}
		dict := d.AsDict()
		for _, k := range dict.Keys {
			if _, dup := named[k]; dup {
				return jinja.Undefined(), fmt.Errorf("**kwargs: got multiple values for keyword argument '%s'", k)
			}
			named[k] = dict.Data[k]
		}
	}
	return args[0].AsCallable().Fn(call, named)
}

// macroSplatParameter refuses a macro defined with an *args or **kwargs
// parameter, which jinja2 refuses as well: splatCalls would take the
// parameter list for a call's arguments and the engine would define the
// macro under another name, so the template loaded and every call of
// the macro failed with "not callable". The error quotes the tag as the
// template writes it, on one line.
func macroSplatParameter(content string) error {
	open := strings.IndexByte(content, '(')
	if open < 0 {
		return nil
	}
	end := closeParen(content, open)
	if end < 0 {
		return nil
	}
	for _, p := range splitTopLevel(content[open+1 : end]) {
		t := strings.TrimSpace(p)
		if !strings.HasPrefix(t, "*") {
			continue
		}
		star := "*"
		if strings.HasPrefix(t, "**") {
			star = "**"
		}
		return &staticError{fmt.Sprintf("{%% %s %%}: a macro's parameters are names with optional defaults, not %s%s (jinja2: expected token 'name', got '%s')",
			strings.Join(strings.Fields(content), " "), star, strings.TrimSpace(strings.TrimLeft(t, "*")), star)}
	}
	return nil
}
