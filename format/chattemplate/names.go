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
// {% set %} starts jinja2's checks again inside an if. Where this reading
// cannot tell, an inline if anywhere in a tag, the tag is left to the
// rendering, as before. It returns "" when there is none.
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
	for _, tok := range toks {
		if tok == "if" {
			// An inline if-expression defers what is inside it; where
			// it ends is not read here.
			return ""
		}
	}
	for i := 0; i+1 < len(toks); i++ {
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
