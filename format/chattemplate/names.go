package chattemplate

import (
	"fmt"
	"strings"
)

// jinja2Filters and jinja2Tests are the filters and tests of jinja2 3.1's
// environment as transformers sets it up (TestNamesMatchJinja2 checks
// them against testdata/names/golden.json). A name outside them is an
// error in jinja2 whatever the engine has: the engine also takes any
// callable variable for a filter (raise_exception), which jinja2 does not.
var jinja2Filters = map[string]bool{
	"abs": true, "attr": true, "batch": true, "capitalize": true, "center": true, "count": true,
	"d": true, "default": true, "dictsort": true, "e": true, "escape": true, "filesizeformat": true,
	"first": true, "float": true, "forceescape": true, "format": true, "groupby": true,
	"indent": true, "int": true, "items": true, "join": true, "last": true, "length": true,
	"list": true, "lower": true, "map": true, "max": true, "min": true, "pprint": true,
	"random": true, "reject": true, "rejectattr": true, "replace": true, "reverse": true,
	"round": true, "safe": true, "select": true, "selectattr": true, "slice": true, "sort": true,
	"string": true, "striptags": true, "sum": true, "title": true, "tojson": true, "trim": true,
	"truncate": true, "unique": true, "upper": true, "urlencode": true, "urlize": true,
	"wordcount": true, "wordwrap": true, "xmlattr": true,
}

var jinja2Tests = map[string]bool{
	"!=": true, "<": true, "<=": true, "==": true, ">": true, ">=": true, "boolean": true,
	"callable": true, "defined": true, "divisibleby": true, "eq": true, "equalto": true,
	"escaped": true, "even": true, "false": true, "filter": true, "float": true, "ge": true,
	"greaterthan": true, "gt": true, "in": true, "integer": true, "iterable": true, "le": true,
	"lessthan": true, "lower": true, "lt": true, "mapping": true, "ne": true, "none": true,
	"number": true, "odd": true, "sameas": true, "sequence": true, "string": true, "test": true,
	"true": true, "undefined": true, "upper": true,
}

// unknownName finds, in the template text src, a filter or test that
// jinja2 has not, in a place where jinja2's compiler refuses it: jinja2
// looks filters and tests up when it compiles a template, and refuses
// the template for one it has not, except in an {% if %}'s (or elif's)
// condition and body and in an inline if-expression, where the error
// waits until that code runs (the engine reports every such name only
// then). A {% for %}, {% macro %}, {% call %}, {% filter %} or block
// {% set %} starts jinja2's checks again inside an if. In a tag with an
// inline if, only what the if-expression spans waits (inlineIfTokens):
// the tag was left to the rendering whole, so a filter jinja2 has not,
// outside it in code that did not run, loaded and rendered. It returns
// "" when there is none.
func unknownName(src string) (string, error) {
	segs, err := scan(src)
	if err != nil {
		return "", err
	}
	var soft []bool // per open block: whether jinja2 defers names in its body
	inRaw := false
	for _, s := range segs {
		if s.kind == segText || s.kind == segComment {
			continue
		}
		content := src[s.from:s.to]
		kw := ""
		if s.kind == segStmt {
			kw = keyword(content)
		}
		if inRaw {
			inRaw = kw != "endraw"
			continue
		}
		deferred := len(soft) > 0 && soft[len(soft)-1]
		check := !deferred
		switch kw {
		case "raw":
			inRaw = true
		case "if":
			check = false
			soft = append(soft, true)
		case "elif":
			check = false
		case "for", "macro", "call":
			soft = append(soft, false)
		case "filter":
			// The block's filter is applied in its own frame, where
			// jinja2 checks names, and is named without a "|".
			check = true
			content = "|" + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(content), "filter"))
			soft = append(soft, false)
		case "set":
			if !strings.Contains(content, "=") {
				check = true
				soft = append(soft, false)
			}
		case "generation", "with", "block", "autoescape":
			// Not jinja2's own frames as far as this reading goes:
			// the names in them are left to the rendering.
			soft = append(soft, true)
		}
		if strings.HasPrefix(kw, "end") && len(soft) > 0 && kw != "endraw" {
			soft = soft[:len(soft)-1]
		}
		if !check {
			continue
		}
		if msg := unknownInCode(content); msg != "" {
			return fmt.Sprintf("line %d: %s", s.line, msg), nil
		}
	}
	return "", nil
}

// inlineIfTokens marks the tokens of a tag's code that belong to an
// inline if-expression (a if c else b), whose filters and tests jinja2
// looks up only when it runs one (CondExpr compiles in a soft frame);
// the rest of the tag jinja2 checks when it compiles it. An
// if-expression binds loosest, so it spans the whole expression it is
// in: from the start of the code, an opening bracket, a ",", a ":" or an
// assigning "=" to the next of those or the closing bracket. An "if" is
// the operator only after an operand (elsewhere it is a name to jinja2),
// and in a {% for %} the first "if" after the iterable starts the loop's
// filter, which jinja2 checks, and an expression of its own.
func inlineIfTokens(toks []string) []bool {
	soft := make([]bool, len(toks))
	type expr struct {
		start  int
		inline bool
	}
	stack := []expr{{start: 0}}
	end := func(at int) { // the innermost expression ends before at
		if top := stack[len(stack)-1]; top.inline {
			for k := top.start; k < at; k++ {
				soft[k] = true
			}
		}
	}
	isFor := len(toks) > 0 && toks[0] == "for"
	loopFilter := false // the for's loop filter has begun
	for i, tok := range toks {
		top := &stack[len(stack)-1]
		switch {
		case tok == "(" || tok == "[" || tok == "{":
			stack = append(stack, expr{start: i + 1})
		case (tok == ")" || tok == "]" || tok == "}") && len(stack) > 1:
			end(i)
			stack = stack[:len(stack)-1]
		case tok == "," || tok == ":" || (tok == "=" && assigns(toks, i)) ||
			(isFor && len(stack) == 1 && tok == "in" && !loopFilter):
			end(i)
			*top = expr{start: i + 1}
		case tok == "if" && i > 0 && toks[i-1] != "." && endsOperand(toks, i-1):
			if isFor && len(stack) == 1 && !loopFilter {
				loopFilter = true
				end(i)
				*top = expr{start: i + 1}
				continue
			}
			top.inline = true
		}
	}
	end(len(toks))
	return soft
}

// assigns reports whether the "=" at toks[i] assigns (a keyword argument,
// a default, a set) rather than being part of ==, !=, <= or >=.
func assigns(toks []string, i int) bool {
	if i+1 < len(toks) && toks[i+1] == "=" {
		return false
	}
	if i == 0 {
		return true
	}
	prev := toks[i-1]
	return prev != "=" && prev != "!" && prev != "<" && prev != ">"
}

// unknownInCode reads one tag's code token by token for the filter after
// each "|" and the test after each "is" (and "is not"); it returns
// jinja2's complaint about the first that jinja2 has not, or "".
func unknownInCode(code string) string {
	var toks []string
	for i := 0; ; {
		start, end := tagToken(code, i)
		if start == len(code) {
			break
		}
		toks = append(toks, code[start:end])
		i = end
	}
	soft := inlineIfTokens(toks)
	for i := 0; i+1 < len(toks); i++ {
		if soft[i] {
			continue // in an inline if-expression: jinja2 defers it
		}
		var what string
		var known map[string]bool
		j := i + 1
		switch {
		case toks[i] == "|":
			what, known = "filter", jinja2Filters
		case toks[i] == "is" && (i == 0 || toks[i-1] != "."):
			what, known = "test", jinja2Tests
			if toks[j] == "not" && j+1 < len(toks) {
				j++
			}
		default:
			continue
		}
		if !isIdent(toks[j]) || (toks[j][0] >= '0' && toks[j][0] <= '9') {
			continue // not a name: the parsers deal with it
		}
		name := toks[j]
		// jinja2 reads a dotted name (a|f.g) as one filter's name.
		for j+2 < len(toks) && toks[j+1] == "." && isIdent(toks[j+2]) {
			name += "." + toks[j+2]
			j += 2
		}
		if !known[name] {
			return fmt.Sprintf("no %s named '%s'", what, name)
		}
	}
	return ""
}
