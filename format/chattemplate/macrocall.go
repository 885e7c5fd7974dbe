package chattemplate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ardanlabs/jinja"
)

// badCallName is the filter a call of one of the template's macros that
// jinja2 refuses is rewritten to (macroCalls).
const badCallName = "__hone_badcall"

// macroSig is what jinja2 checks a macro's call against: its parameters,
// and whether its body reads caller (which makes a caller= keyword its).
type macroSig struct {
	params []string
	caller bool
}

// macroSignatures reads the macros src defines whose calls by name can be
// checked: the engine's macro binds the arguments it has parameters for and
// drops the rest, where jinja2 raises a TypeError. Left out, so that no
// call of them is checked: a name defined twice or also assigned by a set,
// a for or a parameter (the call may not reach the macro), and a macro
// with a *parameter, a parameter named caller or a body that reads
// varargs or kwargs (jinja2 takes extra arguments into those).
func macroSignatures(src string, segs []segment) map[string]macroSig {
	sigs := map[string]macroSig{}
	drop := map[string]bool{}
	var open []string // the macros whose body is being read
	for _, s := range segs {
		if s.kind != segExpr && s.kind != segStmt {
			continue
		}
		content := src[s.from:s.to]
		kw := ""
		if s.kind == segStmt {
			kw = keyword(content)
		}
		for _, name := range assignedNames(kw, content) {
			drop[name] = true
		}
		for _, tok := range codeTokens(content) {
			for _, m := range open {
				switch tok {
				case "varargs", "kwargs":
					drop[m] = true
				case "caller":
					sig := sigs[m]
					sig.caller = true
					sigs[m] = sig
				}
			}
		}
		switch kw {
		case "macro":
			name, params, ok := macroHead(content)
			if _, twice := sigs[name]; twice || !ok {
				drop[name] = true
			}
			sigs[name] = macroSig{params: params}
			open = append(open, name)
		case "endmacro":
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
	}
	for name := range drop {
		delete(sigs, name)
	}
	return sigs
}

// codeTokens cuts a tag's code into tagToken's tokens.
func codeTokens(code string) []string {
	var toks []string
	for i := 0; ; {
		start, end := tagToken(code, i)
		if start == len(code) {
			return toks
		}
		toks = append(toks, code[start:end])
		i = end
	}
}

// macroHead reads `macro name(p, q=default)`: the name and the parameter
// names; ok is false for a parameter macroSignatures leaves out.
func macroHead(content string) (name string, params []string, ok bool) {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(content), "macro"))
	open := strings.IndexByte(rest, '(')
	if open < 0 {
		return strings.TrimSpace(rest), nil, false
	}
	name = strings.TrimSpace(rest[:open])
	end := closeParen(rest, open)
	if end < 0 {
		return name, nil, false
	}
	params, ok = paramNames(rest[open+1 : end])
	return name, params, ok && isIdent(name)
}

// paramNames gives the names of a parameter list, each before its "=";
// ok is false when one is no plain name or is caller.
func paramNames(list string) ([]string, bool) {
	if strings.TrimSpace(list) == "" {
		return nil, true
	}
	var names []string
	for _, p := range splitTopLevel(list) {
		name, _, _ := strings.Cut(p, "=")
		name = strings.TrimSpace(name)
		if !isIdent(name) || name == "caller" {
			return names, false
		}
		names = append(names, name)
	}
	return names, true
}

// assignedNames are the names a statement binds: a set's targets, a for's
// targets, a macro's or call block's parameters.
func assignedNames(kw, content string) []string {
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(content), kw))
	var target string
	switch kw {
	case "set":
		target, _, _ = strings.Cut(rest, "=")
	case "for":
		target = rest
		if i := scanCode(rest, func(i, depth int) bool {
			return depth == 0 && strings.HasPrefix(rest[i:], " in ")
		}); i >= 0 {
			target = rest[:i]
		}
	case "macro", "call":
		open := strings.IndexByte(rest, '(')
		if open < 0 {
			return nil
		}
		if end := closeParen(rest, open); end > open {
			names, _ := paramNames(rest[open+1 : end])
			return names
		}
		return nil
	default:
		return nil
	}
	var names []string
	for _, tok := range codeTokens(target) {
		if isIdent(tok) {
			names = append(names, tok)
		}
	}
	return names
}

// refusal is jinja2's TypeError for calling m with npos positional
// arguments and the keyword arguments kws, in the order its Macro checks
// them, or "" when jinja2 takes the call.
func (m macroSig) refusal(name string, npos int, kws []string) string {
	return m.refusalOf("'"+name+"'", npos, kws)
}

// refusalOf is refusal with the macro named as jinja2's message names it:
// its name quoted, or None for a call block's caller, which has no name.
func (m macroSig) refusalOf(who string, npos int, kws []string) string {
	var left []string
	for _, k := range kws {
		filled := npos < len(m.params) && contains(m.params[npos:], k)
		if !filled && !(k == "caller" && m.caller) {
			left = append(left, k)
		}
	}
	switch {
	case contains(left, "caller"):
		return fmt.Sprintf("macro %s was invoked with two values for the special caller argument. This is most likely a bug.", who)
	case len(left) > 0:
		return fmt.Sprintf("macro %s takes no keyword argument '%s'", who, left[0])
	case npos > len(m.params):
		return fmt.Sprintf("macro %s takes not more than %d argument(s)", who, len(m.params))
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// macroCalls rewrites each call by name of a macro in sigs that jinja2
// refuses, m(a, k=v), as (m|__hone_badcall("message", a, k=v)): the
// arguments are still evaluated, as jinja2 evaluates them before the
// macro checks them, and then the rendering fails with jinja2's message.
// Calls jinja2 takes are left as written, their arguments rewritten.
func macroCalls(code string, sigs map[string]macroSig) string {
	if len(sigs) == 0 {
		return code
	}
	var b strings.Builder
	for i := 0; i < len(code); {
		c := code[i]
		if c == '\'' || c == '"' {
			i = copyString(&b, code, i)
			continue
		}
		if !isIdentByte(c) || (i > 0 && (isIdentByte(code[i-1]) || code[i-1] == '.')) {
			b.WriteByte(c)
			i++
			continue
		}
		k := i
		for k < len(code) && isIdentByte(code[k]) {
			k++
		}
		name := code[i:k]
		j := k
		for j < len(code) && strings.IndexByte(" \t\r\n", code[j]) >= 0 {
			j++
		}
		sig, ok := sigs[name]
		end := -1
		if ok && j < len(code) && code[j] == '(' && !filterOrTest(code[:k]) {
			end = closeParen(code, j)
		}
		if ok && strings.HasPrefix(code[j:], "|"+splatName+"(") {
			// A call with *args or **kwargs (splatCalls rewrote it
			// first): what they spread is known only when the call
			// runs, so the macro is called through checkedMacro.
			fmt.Fprintf(&b, "%s(%s, %q, [%s], %t)", checkedMacroName, name, name, quotedList(sig.params), sig.caller)
			i = k
			continue
		}
		if end < 0 {
			b.WriteString(name)
			i = k
			continue
		}
		args := macroCalls(code[j+1:end], sigs)
		if msg := callRefusal(name, sig, args); msg != "" {
			fmt.Fprintf(&b, "(%s|%s(%q", name, badCallName, msg)
			if strings.TrimSpace(args) != "" {
				b.WriteString(", " + args)
			}
			b.WriteString("))")
		} else {
			b.WriteString(code[i:j] + "(" + args + ")")
		}
		i = end + 1
	}
	return b.String()
}

// checkedMacroName is the variable checkedMacro is passed as: macroCalls
// rewrites a call with *args or **kwargs of a macro in sigs, m(*xs),
// which splatCalls made m|__hone_splat(xs), to
// __hone_checked_macro(m, "m", ['a', 'b'], false)|__hone_splat(xs).
const checkedMacroName = "__hone_checked_macro"

// quotedList is params as the items of a template's list of strings;
// they are macro parameters, identifiers, so need no escaping.
func quotedList(params []string) string {
	q := make([]string, len(params))
	for i, p := range params {
		q[i] = "'" + p + "'"
	}
	return strings.Join(q, ", ")
}

// checkedMacro is __hone_checked_macro: the callee m, the macro's name,
// its parameters and whether it reads caller. It gives back a callable
// that checks the arguments the call spread, as jinja2's macro does, and
// fails with jinja2's TypeError (sig.refusal) where the engine's macro
// dropped what it has no parameter for; the arguments it takes go on to
// m. Anything else the name holds when the call runs is given back as it
// is, to be called as the engine would call it.
func checkedMacro(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 4 || !args[1].IsString() || !args[2].IsList() || !args[3].IsBool() {
		return jinja.Undefined(), fmt.Errorf("%s: want the callee, its name, its parameters and whether it reads caller", checkedMacroName)
	}
	fn, name := args[0], args[1].AsString()
	if !fn.IsCallable() || fn.AsCallable().Name != name {
		return fn, nil
	}
	sig := macroSig{caller: args[3].AsBool()}
	for _, p := range args[2].AsList().Items {
		sig.params = append(sig.params, p.AsString())
	}
	call := fn.AsCallable().Fn
	return jinja.NewCallable(name, func(pos []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		kws := make([]string, 0, len(kwargs))
		for k := range kwargs {
			kws = append(kws, k)
		}
		slices.Sort(kws) // jinja2 names the first it finds; ours is one of them, the same each run
		if msg := sig.refusal(name, len(pos), kws); msg != "" {
			return jinja.Undefined(), fmt.Errorf("TypeError: %s", msg)
		}
		return call(pos, kwargs)
	}), nil
}

// callRefusal is sig.refusal for a call's argument text; "" for a call
// with *args or **kwargs, whose arguments are not known here (macroCalls
// has them checked when the call runs: checkedMacro).
func callRefusal(name string, sig macroSig, args string) string {
	if strings.TrimSpace(args) == "" {
		return sig.refusal(name, 0, nil)
	}
	npos := 0
	var kws []string
	for _, a := range splitTopLevel(args) {
		t := strings.TrimSpace(a)
		if t == "" {
			continue // the comma after the last argument
		}
		if strings.HasPrefix(t, "*") {
			return ""
		}
		if plainPositional(t) {
			npos++
			continue
		}
		k, _, _ := strings.Cut(t, "=")
		kws = append(kws, strings.TrimSpace(k))
	}
	return sig.refusal(name, npos, kws)
}

// badCall is __hone_badcall: the callee m, the message, then the call's
// arguments, already evaluated. A macro of the name fails with jinja2's
// message; anything else the name holds when the call runs is called as
// the engine would call it.
func badCall(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 || !args[1].IsString() {
		return jinja.Undefined(), fmt.Errorf("%s: want the callee and a message", badCallName)
	}
	fn, msg := args[0], args[1].AsString()
	name, _, _ := strings.Cut(strings.TrimPrefix(msg, "macro '"), "'")
	if !fn.IsCallable() {
		return jinja.Undefined(), fmt.Errorf("%s is not callable: %s", name, fn.String())
	}
	if fn.AsCallable().Name != name {
		return fn.AsCallable().Fn(args[2:], kwargs)
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: %s", msg)
}
