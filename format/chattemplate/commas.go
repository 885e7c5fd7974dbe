package chattemplate

import (
	"fmt"
	"slices"
	"strings"
)

// operatorWords are the names jinja2's expression parser reads as
// operators, not operands.
var operatorWords = map[string]bool{"and": true, "or": true, "not": true, "in": true, "is": true, "if": true, "else": true}

// parseRefusal finds, in the template text src, what jinja2's parser
// refuses and the engine's reads: two operands side by side inside
// brackets, f(1 2) or [a b] (expected token ','), which the engine reads
// as if a comma stood between them, a bare target list ending with a
// comma (targetRefusal), and a test named by what is no name
// (x is 3) or chained (x is odd is true; testSyntax). Two string literals
// side by side are one string to jinja2, and a test may take one argument
// without parentheses (x is divisibleby 3). Outside brackets the engine
// refuses two operands itself. It returns jinja2's complaint with the
// tag's line, or "".
func parseRefusal(src string) (string, error) {
	segs, err := scan(src)
	if err != nil {
		return "", err
	}
	inRaw := false
	for _, s := range segs {
		if s.kind != segExpr && s.kind != segStmt {
			continue
		}
		content := src[s.from:s.to]
		if inRaw || (s.kind == segStmt && keyword(content) == "raw") {
			inRaw = s.kind != segStmt || keyword(content) != "endraw"
			continue
		}
		if msg := targetRefusal(content); msg != "" {
			return fmt.Sprintf("line %d: %s", s.line, msg), nil
		}
		if loopTarget(content) {
			return fmt.Sprintf("line %d: Can't assign to special loop variable in for-loop target", s.line), nil
		}
		toks := codeTokens(content)
		if got := sideBySide(toks); got != "" {
			return fmt.Sprintf("line %d: expected token ',', got '%s'", s.line, got), nil
		}
		if msg := testSyntax(toks); msg != "" {
			return fmt.Sprintf("line %d: %s", s.line, msg), nil
		}
		if s.kind == segStmt && inlineIfInTest(keyword(content), toks) {
			return fmt.Sprintf("line %d: expected token 'end of statement block', got 'if'", s.line), nil
		}
	}
	return "", nil
}

// loopTarget reports whether a for tag (content) names loop among its
// targets, the names before its "in": jinja2's compiler refuses that
// ("Can't assign to special loop variable in for-loop target"), loop
// being the body's loop object, where the engine took it and a template
// that transformers cannot load rendered here. A target is names, commas
// and parentheses only, so the first "in" ends it.
func loopTarget(content string) bool {
	if keyword(content) != "for" {
		return false
	}
	toks := codeTokens(content)
	for _, tok := range toks[slices.Index(toks, "for")+1:] {
		switch tok {
		case "in":
			return false
		case "loop":
			return true
		}
	}
	return false
}

// inlineIfInTest reports whether the test of an {% if %} or {% elif %}
// tag (kw) holds an inline if-expression outside brackets: jinja2 reads
// that test without one (parse_tuple with_condexpr=False) and refuses
// the template at the second "if", where the engine rendered
// {% if A if A else 0 %} as if the template meant it.
func inlineIfInTest(kw string, toks []string) bool {
	if kw != "if" && kw != "elif" {
		return false
	}
	start := 0 // the token after the keyword (a trim sign may precede it)
	for start < len(toks) && toks[start] != kw {
		start++
	}
	depth := 0
	for i := start + 1; i < len(toks); i++ {
		switch toks[i] {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case "if":
			// After an operand, "if" is the operator; elsewhere it is a
			// name to jinja2 ({% if if %}, {% if not if %}), and after
			// a "." an attribute (d.if).
			if depth == 0 && i-1 > start && toks[i-1] != "." && endsOperand(toks, i-1) {
				return true
			}
		}
	}
	return false
}

// sideBySide returns jinja2's name for the second of two operands that
// stand side by side inside brackets in toks, or "".
func sideBySide(toks []string) string {
	depth := 0
	for i, tok := range toks {
		switch tok {
		case "(", "[", "{":
			depth++
			continue
		case ")", "]", "}":
			depth--
			continue
		}
		if depth <= 0 || i == 0 || !startsOperand(tok) || !endsOperand(toks, i-1) {
			continue
		}
		prev := toks[i-1]
		if isStringToken(prev) && isStringToken(tok) {
			continue
		}
		// x is [not] name arg: a test's one argument.
		if j := i - 2; isIdent(prev) && j >= 0 && (toks[j] == "is" || (toks[j] == "not" && j > 0 && toks[j-1] == "is")) {
			continue
		}
		return tokenName(tok)
	}
	return ""
}

func isStringToken(tok string) bool { return tok != "" && (tok[0] == '\'' || tok[0] == '"') }

func isNumberToken(tok string) bool { return tok != "" && tok[0] >= '0' && tok[0] <= '9' }

// startsOperand: a literal or a name that is no operator.
func startsOperand(tok string) bool {
	return isStringToken(tok) || isNumberToken(tok) || (isIdent(tok) && !operatorWords[tok])
}

// endsOperand: toks[i] is the last token of an operand: a literal, a
// closing bracket, a name that is no operator, or any name after a "."
// (an attribute).
func endsOperand(toks []string, i int) bool {
	tok := toks[i]
	switch {
	case tok == ")" || tok == "]" || tok == "}":
		return true
	case isIdent(tok) && i > 0 && toks[i-1] == ".":
		return true
	}
	return startsOperand(tok)
}

// tokenName is how jinja2's parser names a token in its errors.
func tokenName(tok string) string {
	switch {
	case isStringToken(tok):
		return "string"
	case isNumberToken(tok) && strings.ContainsAny(tok, ".eE") && !strings.HasPrefix(tok, "0x"):
		return "float"
	case isNumberToken(tok):
		return "integer"
	}
	return tok
}

// adjacentStrings joins string literals that stand side by side in a
// tag's code, 'a' 'b', as ('a' ~ 'b'): jinja2 reads them as one string,
// as Python does, where the engine refused them or, in brackets, read
// two items. The parentheses keep what follows ('a' 'b'|upper) applying
// to the whole string; the blanks between the literals are kept, line
// breaks and all, so that errors keep their line numbers.
func adjacentStrings(code string) string {
	if !strings.ContainsAny(code, "'\"") {
		return code
	}
	var b strings.Builder
	last := 0 // code[:last] is written
	for i := 0; ; {
		start, end := tagToken(code, i)
		if start == len(code) {
			break
		}
		i = end
		if !isStringToken(code[start:end]) {
			continue
		}
		runEnd, n := end, 1
		for {
			s, e := tagToken(code, runEnd)
			if s == len(code) || !isStringToken(code[s:e]) {
				break
			}
			b.WriteString(code[last:start])
			if n == 1 {
				b.WriteString("(")
			}
			b.WriteString(code[start:runEnd] + code[runEnd:s] + "~ ")
			last, start, runEnd = s, s, e
			n++
		}
		if n > 1 {
			b.WriteString(code[last:runEnd] + ")")
			last = runEnd
		}
		i = runEnd
	}
	b.WriteString(code[last:])
	return b.String()
}

// testSyntax returns jinja2's complaint about the first test in toks
// whose name is no name (x is 3, which the engine took for a test named
// "3" when it ran) or that is followed by another test straight away
// (x is odd is true, which the engine evaluated), or "".
func testSyntax(toks []string) string {
	for i, tok := range toks {
		if tok != "is" || (i > 0 && toks[i-1] == ".") {
			continue
		}
		j := i + 1
		if j < len(toks) && toks[j] == "not" {
			j++
		}
		if j == len(toks) {
			return ""
		}
		if !isIdent(toks[j]) {
			return fmt.Sprintf("expected token 'name', got '%s'", tokenName(toks[j]))
		}
		for j+2 < len(toks) && toks[j+1] == "." && isIdent(toks[j+2]) {
			j += 2
		}
		if j+1 < len(toks) && toks[j+1] == "is" {
			return "You cannot chain multiple tests with is"
		}
	}
	return ""
}

// targetRefusal returns jinja2's complaint about a {% set %} or {% for %}
// whose target list ends with a comma outside parentheses (set a, = xs),
// which the engine read as the list without it, or "".
func targetRefusal(content string) string {
	kw := keyword(content)
	if kw != "set" && kw != "for" {
		return ""
	}
	toks := codeTokens(content)[1:]
	if len(toks) == 0 || toks[0] == "(" {
		return ""
	}
	end := "="
	if kw == "for" {
		end = "in"
	}
	for i, tok := range toks {
		if tok != end {
			continue
		}
		if i == 0 || toks[i-1] != "," {
			return ""
		}
		if kw == "set" {
			return "unexpected '='"
		}
		next := "end of statement block"
		if i+1 < len(toks) {
			next = tokenName(toks[i+1])
		}
		return fmt.Sprintf("expected token 'in', got '%s'", next)
	}
	return ""
}
