package chattemplate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ardanlabs/jinja"
)

// starName is the variable pyStar is passed as: a macro whose body reads
// varargs or kwargs is rebound, right after its {% endmacro %}, to
// __hone_star(m, [params], varargs, kwargs, caller, "'m'") (starMacros).
const starName = "__hone_star"

// starUse says which of jinja2's special names a macro's own body reads:
// jinja2 takes the extra positional arguments of a call into varargs
// and the unknown keyword arguments into kwargs only for a macro whose
// body reads them, and caller as the caller only where it reads caller.
type starUse struct {
	varargs, kwargs, caller bool
}

// starMacros finds the macros and call blocks whose body reads varargs
// or kwargs, by the offset of their tag's content (callAsMacro makes a
// call block's body a macro, its caller). The engine binds only the
// parameters a macro declares and drops the other arguments, so both
// names were undefined in it. A name read inside a macro or a call block
// nested in the body is that block's, not the outer macro's, and a macro
// with a parameter of either name reads the parameter.
func starMacros(src string, segs []segment) map[int]starUse {
	stars := map[int]starUse{}
	type open struct {
		at    int // the content's offset
		use   starUse
		param bool // a parameter named varargs or kwargs
	}
	var stack []open
	for _, s := range segs {
		if s.kind != segExpr && s.kind != segStmt {
			continue
		}
		content := src[s.from:s.to]
		kw := ""
		if s.kind == segStmt {
			kw = keyword(content)
		}
		switch kw {
		case "macro", "call":
			at := s.from
			names := assignedNames(kw, content)
			stack = append(stack, open{at: at, param: slices.Contains(names, "varargs") || slices.Contains(names, "kwargs")})
			continue
		case "endmacro", "endcall":
			if n := len(stack); n > 0 {
				if o := stack[n-1]; !o.param && (o.use.varargs || o.use.kwargs) {
					stars[o.at] = o.use
				}
				stack = stack[:n-1]
			}
			continue
		}
		if len(stack) == 0 {
			continue
		}
		top := &stack[len(stack)-1]
		for _, tok := range codeTokens(content) {
			switch tok {
			case "varargs":
				top.use.varargs = true
			case "kwargs":
				top.use.kwargs = true
			case "caller":
				top.use.caller = true
			}
		}
	}
	return stars
}

// withStarParams adds the parameters varargs and kwargs to a macro tag's
// rewritten content: pyStar passes them by keyword, which the engine binds
// to a parameter of the name.
func withStarParams(code string) string {
	end := strings.LastIndexByte(code, ')')
	open := strings.IndexByte(code, '(')
	if end < 0 || open < 0 || open > end {
		return code
	}
	sep := ", "
	if strings.TrimSpace(code[open+1:end]) == "" {
		sep = ""
	}
	return code[:end] + sep + "varargs, kwargs" + code[end:]
}

// starRebind is the content of the {% set %} tag that rebinds the macro
// of the tag content (a {% macro %} tag's, as written) to pyStar's
// wrapper; "" for a macro whose head macroHead cannot read (the engine
// refuses those).
func starRebind(content string, use starUse) string {
	name, params, ok := macroHead(content)
	if !ok {
		return ""
	}
	quoted := make([]string, len(params))
	for i, p := range params {
		quoted[i] = "'" + p + "'"
	}
	return fmt.Sprintf(" set %s = %s(%s, [%s], %t, %t, %t, \"'%s'\") ", name, starName, name, strings.Join(quoted, ", "),
		use.varargs, use.kwargs, use.caller, name)
}

// pyStar wraps a macro m (with the parameters varargs and kwargs added
// after its own, params; named who in errors, jinja2's way) in the call
// jinja2 makes of it: the positional
// arguments past params go to varargs and the keyword arguments none of
// params names to kwargs, each where the body reads it, else the call
// fails with jinja2's TypeError. A caller keyword is the caller where the
// body reads caller, else one of kwargs.
func pyStar(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 6 || !args[0].IsCallable() || !args[1].IsList() || !args[5].IsString() {
		return jinja.Undefined(), fmt.Errorf("%s: want a macro, its parameters, three flags and its name", starName)
	}
	who := args[5].AsString()
	macro := args[0].AsCallable()
	var params []string
	for _, p := range args[1].AsList().Items {
		params = append(params, p.AsString())
	}
	sig := macroSig{params: params, caller: args[4].IsTruthy()}
	catchVarargs, catchKwargs := args[2].IsTruthy(), args[3].IsTruthy()
	return jinja.NewCallable(macro.Name, func(pos []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		n := min(len(pos), len(params))
		keys := make([]string, 0, len(kw))
		for k := range kw {
			keys = append(keys, k)
		}
		// The engine hands the keywords over in a map: sorted, the
		// error and kwargs are the same each time.
		slices.Sort(keys)
		bound := map[string]jinja.Value{}
		extra := jinja.NewDict()
		var unknown []string
		for _, k := range keys {
			switch {
			case slices.Contains(params[n:], k) || (k == "caller" && sig.caller):
				bound[k] = kw[k]
			case catchKwargs:
				extra.AsDict().Set(k, kw[k])
			default:
				unknown = append(unknown, k)
			}
		}
		npos := len(pos)
		if catchVarargs {
			npos = min(npos, len(params))
		}
		if msg := sig.refusalOf(who, npos, unknown); msg != "" {
			return jinja.Undefined(), fmt.Errorf("TypeError: %s", msg)
		}
		bound["varargs"] = jinja.NewList(slices.Clone(pos[n:]))
		bound["kwargs"] = extra
		return macro.Fn(pos[:n], bound)
	}), nil
}
