package chattemplate

import (
	"strings"
)

// pyOps rewrites the operators whose meaning in the engine is not
// Python's into calls of our callables (pyarith.go), and chained
// comparisons into the conjunction Python evaluates:
//
//   - a ** b becomes __hone_pow(a, b): the engine made every power a
//     float (2 ** 3 printed 8.0; Python gives the int 8);
//   - a // b and a % b become __hone_floordiv(a, b) and __hone_mod(a, b):
//     the engine truncated toward zero and cut floats to ints (-7 // 2
//     gave -3, -7 % 2 gave -1, 7.5 // 2 gave 3; Python floors: -4, 1, 3.0);
//   - a / b becomes __hone_div(a, b): the engine gave 0.0 for a division
//     by zero, where jinja2 raises ZeroDivisionError;
//   - a * b becomes __hone_mul(a, b) (budget.mul): the engine repeated
//     only str * int, in one allocation no limit could measure (a
//     computed count could exhaust memory), cut any other pair to numbers
//     (3 * 'ab' and [1] * 2 gave 0) and panicked for a negative count;
//   - x is test binds to x alone, as a filter does: a * x is odd becomes
//     a * (x is odd), and a test's one argument without parentheses is
//     given them (filters); x is divisibleby n, a test the engine lacks,
//     becomes __hone_divisibleby(x, n);
//   - 1e3 becomes 1.0e3 and 1_000 1000, the numbers jinja2 reads them
//     as (atom);
//   - -x|abs becomes (-x)|abs: jinja2 applies filters after a sign
//     (unary), and -x and +x, x no number literal, become
//     __hone_neg(x) and __hone_pos(x), Python's (signed);
//   - a < b < c becomes (a < b and b < c), as Python reads it (the engine
//     compared the bool a < b with c, so 0 < 7 < 5 was True and
//     1 == 1 == 1 False);
//   - a ~ b becomes __hone_string(a) ~ __hone_string(b): jinja2 joins
//     str() of each operand, and the engine printed 1.0 as 1 and None as
//     "" (functionary v3.2 writes a tool parameter's default and bounds
//     with ~, so "default": 1.0 was "Default=1." where the model was
//     trained on "Default=1.0.", and null was "" where it read None);
//   - a + b and a - b become __hone_add(a, b) and __hone_sub(a, b),
//     Python's (pyAddSub): the engine took an undefined value, None, a
//     list or a dict for 0 or "" and joined 1 + 'a' into "1a", where
//     jinja2 raises;
//   - an operand of an ordering comparison that is no literal becomes
//     __hone_defined(x), which fails for an undefined value, as jinja2
//     does (defined): the engine compared 0 or "";
//   - a name whose attribute or item is read (x.y, x['y']) becomes
//     __hone_name_defined(x, 'x'), which fails with jinja2's "'x' is
//     undefined" for an undefined x (pyNameDefined): the engine gave "";
//   - an attribute or item read that another read follows (y.z.w)
//     becomes __hone_member(y, 'z').z.w, which fails with jinja2's
//     "'dict object' has no attribute 'z'" where the member is missing
//     (pyMember): the engine gave "".
//
// The operands are found by parsing the code with the engine's grammar
// (its precedence, which is what the rewritten text is parsed with, but
// for ~ and +, which levels orders as jinja2 does), so
// string literals and names that merely contain an operator's characters
// are left alone. The code of a statement tag (if, elif, for, call:
// opsStatements) is parsed as a sequence of expressions, skipping the
// tokens that start none (keywords, the commas of a for's names); code
// the parser does not follow is returned unchanged, to be compiled (or
// refused) by the engine as before. Bytes the engine skips are skipped
// (opTokens), not a reason to leave the code to the engine.
func pyOps(code string) string { return rewriteOps(code, false) }

// pyOpsStatement is pyOps for the code of a statement tag, keyword first.
func pyOpsStatement(code string) string { return rewriteOps(code, true) }

// rewriteOps is pyOps of an expression, or (stmt) of a statement's code,
// whose first word is its keyword and not a name.
func rewriteOps(code string, stmt bool) string {
	if !mayRewrite(code) {
		return code
	}
	toks := opTokens(code)
	p := &opParser{code: code, toks: toks, stmt: stmt}
	var b strings.Builder
	at, changed := 0, false
	// An expression right after another, with no keyword or comma between,
	// is jinja2's syntax error everywhere but after a call block's
	// parameters ({% call(x) m(x) %}); rewritten, the second could become
	// the first's call arguments (0 x is odd: 0 (x is odd)), so the code
	// is left to the engine, which refuses it.
	adjacentOK := p.is(0, "call")
	after := -1 // the token after the last expression read
	for p.pos < len(toks) {
		if !p.startsExpr() {
			p.pos++
			continue
		}
		if p.pos == after && !adjacentOK {
			return code
		}
		n := p.expression()
		after = p.pos
		if p.failed {
			return code
		}
		if n.text != "" {
			b.WriteString(code[at:n.from])
			if n.text[0] != ' ' && n.from > 0 && isIdentByte(code[n.from-1]) {
				// {%if(x)%2%}: the call written for (x)%2 would
				// otherwise be one name with the keyword before it.
				b.WriteByte(' ')
			}
			b.WriteString(n.text)
			at, changed = n.to, true
		}
	}
	if !changed {
		return code
	}
	b.WriteString(code[at:])
	return b.String()
}

// mayRewrite reports whether code has what pyOps rewrites: an operator
// it calls ours for, a test, a sign before a filter, two comparisons or
// an attribute or item read (of a name, maybe undefined).
func mayRewrite(code string) bool {
	return strings.ContainsAny(code, "*/%~+-<>.[") || strings.Contains(code, "is") || unarySign(code) ||
		strings.Count(code, "<")+strings.Count(code, ">")+strings.Count(code, "==")+strings.Count(code, "!=") >= 2 ||
		jinja2OnlyNumber(code)
}

// unarySign reports whether code may hold a - or + that is a sign, not
// an operator, on something other than a number literal (-x, -(a), - -1):
// one after no operand (a name, a literal or a closing bracket) and before
// no digit, where a keyword (if -x, not -x) counts as no operand.
func unarySign(code string) bool {
	prev := "(" // the last token before i: a name, a literal or a byte
	for i := 0; i < len(code); {
		c := code[i]
		switch {
		case c == '\'' || c == '"':
			prev, i = "''", skipString(code, i)
			continue
		case isIdentByte(c):
			j := i
			for j < len(code) && isIdentByte(code[j]) {
				j++
			}
			prev, i = code[i:j], j
			continue
		case c == '-' || c == '+':
			last := prev[len(prev)-1]
			operand := strings.IndexByte(")]}'", last) >= 0 || (isIdentByte(last) && !statementWords[prev])
			j := skipSpace(code, i+1)
			if !operand && j < len(code) && (code[j] < '0' || code[j] > '9') {
				return true
			}
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			prev = code[i : i+1]
		}
		i++
	}
	return false
}

// jinja2OnlyNumber reports whether code may hold a number the engine
// reads differently (engineNumber): a digit followed by _, e or E.
func jinja2OnlyNumber(code string) bool {
	for i := 0; i+1 < len(code); i++ {
		if code[i] >= '0' && code[i] <= '9' && strings.IndexByte("_eE", code[i+1]) >= 0 {
			return true
		}
	}
	return false
}

// opTok is a token of an expression, as the engine's tokenizer cuts it,
// at code[from:to].
type opTok struct {
	kind     byte // 's' string, 'n' number, 'a' name, 'o' operator or punctuation
	from, to int
}

// engineSkips reports whether the engine's tokenizer (tokenizeExpr) reads
// no token from c outside a string literal: white space and every byte
// that starts no string, number, name or operator (U+001F and the bytes
// of U+00A0, which jinja2 reads as spaces, among them).
func engineSkips(c byte) bool {
	return !(c == '\'' || c == '"' || isIdentByte(c) || strings.IndexByte(",.:()[]{}|~+-*/%<>=!", c) >= 0)
}

// opTokens cuts code as the engine's tokenizer does (tokenizeExpr),
// skipping the bytes it skips.
func opTokens(code string) []opTok {
	var toks []opTok
	for i := 0; i < len(code); {
		c := code[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '\'' || c == '"':
			i = skipString(code, i)
			toks = append(toks, opTok{'s', start, i})
			continue
		case c >= '0' && c <= '9':
			i = numberEnd(code, i)
			toks = append(toks, opTok{'n', start, i})
			continue
		case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			for i < len(code) && isIdentByte(code[i]) {
				i++
			}
			toks = append(toks, opTok{'a', start, i})
			continue
		}
		if i+1 < len(code) {
			switch code[i : i+2] {
			case "**", "//", "==", "!=", "<=", ">=":
				toks = append(toks, opTok{'o', i, i + 2})
				i += 2
				continue
			}
		}
		if !strings.ContainsRune(",.:()[]{}|~+-*/%<>=", rune(c)) {
			// The engine skips a byte it has no token for (U+001F and
			// the bytes of U+00A0, spaces to jinja2), and so does this:
			// "x" *\x1fn left to the engine was a * with no limit.
			i++
			continue
		}
		toks = append(toks, opTok{'o', i, i + 1})
		i++
	}
	return toks
}

// numberEnd is where jinja2's number token starting at i ends: digits
// (grouped with single underscores between them), then a fraction, an
// exponent or both. The engine's token is shorter where jinja2's has an
// underscore or an exponent without a fraction (engineNumber).
func numberEnd(code string, i int) int {
	digits := func(i int) int {
		for i < len(code) && code[i] >= '0' && code[i] <= '9' {
			i++
			if i+1 < len(code) && code[i] == '_' && code[i+1] >= '0' && code[i+1] <= '9' {
				i++
			}
		}
		return i
	}
	isDigit := func(i int) bool { return i < len(code) && code[i] >= '0' && code[i] <= '9' }
	start := i
	i = digits(i)
	float := false
	if i < len(code) && code[i] == '.' && isDigit(i+1) {
		i, float = digits(i+1), true
	}
	if i < len(code) && (code[i] == 'e' || code[i] == 'E') {
		j := i + 1
		if j < len(code) && (code[j] == '+' || code[j] == '-') {
			j++
		}
		if isDigit(j) {
			i, float = digits(j), true
		}
	}
	if tok := code[start:i]; !float && tok[0] == '0' && strings.Trim(tok, "0_") != "" {
		// An integer that begins with 0 is zeros to jinja2 (0(_?0)*), so
		// 0_7 is 0 and the name _7, a syntax error, not 07. (007, which
		// jinja2 refuses too, is left as the engine reads it: 7.)
		if u := strings.IndexByte(tok, '_'); u >= 0 {
			return start + u
		}
	}
	return i
}

// engineNumber is a number token as the engine reads it, "" when it reads
// it as it is: without underscores, and with a fraction before an
// exponent (1e3 is 1.0e3; the engine cut 1e3 into 1 and the name e3).
func engineNumber(tok string) string {
	n := strings.ReplaceAll(tok, "_", "")
	if e := strings.IndexAny(n, "eE"); e >= 0 && !strings.Contains(n, ".") {
		n = n[:e] + ".0" + n[e:]
	}
	if n == tok {
		return ""
	}
	return n
}

// opNode is a parsed expression at code[from:to]; text is what it is
// rewritten to, "" when it is unchanged. tuple marks a parenthesized
// tuple literal, which % formats as several arguments.
type opNode struct {
	from, to int
	text     string
	tuple    bool
}

type opParser struct {
	code   string
	toks   []opTok
	pos    int
	failed bool
	stmt   bool // code is a statement's, keyword first
}

func (p *opParser) str(n opNode) string {
	if n.text != "" {
		return n.text
	}
	return p.code[n.from:n.to]
}

// is reports whether the token at pos+ahead is s.
func (p *opParser) is(ahead int, s string) bool {
	i := p.pos + ahead
	return i >= 0 && i < len(p.toks) && p.code[p.toks[i].from:p.toks[i].to] == s
}

func (p *opParser) kindIs(k byte) bool { return p.pos < len(p.toks) && p.toks[p.pos].kind == k }

// from is where the next token begins; end where the last one read ends.
func (p *opParser) from() int {
	if p.pos < len(p.toks) {
		return p.toks[p.pos].from
	}
	return len(p.code)
}

func (p *opParser) end() int {
	if p.pos == 0 {
		return 0
	}
	return p.toks[p.pos-1].to
}

func (p *opParser) expect(s string) {
	if !p.is(0, s) {
		p.failed = true
		return
	}
	p.pos++
}

// join is the node code[from:to] with its parts kids rewritten. After a
// failure a kid may be the empty node, not a part of code[from:to]; the
// caller gives the code up (pyOps returns it as written).
func (p *opParser) join(from, to int, kids ...opNode) opNode {
	if p.failed {
		return opNode{}
	}
	n := opNode{from: from, to: to}
	changed := false
	for _, k := range kids {
		changed = changed || k.text != ""
	}
	if !changed {
		return n
	}
	var b strings.Builder
	at := from
	for _, k := range kids {
		b.WriteString(p.code[at:k.from])
		if k.text != "" && k.text[0] != ' ' && k.from > 0 && isIdentByte(p.code[k.from-1]) {
			b.WriteByte(' ') // x in(xs)*2: see pyOps
		}
		b.WriteString(p.str(k))
		at = k.to
	}
	b.WriteString(p.code[at:to])
	n.text = b.String()
	return n
}

// statementWords are the names that begin or part statements, and the
// operators that are words: none of them is an operand. A statement's
// keywords are skipped; one where an operand should be ({% for % in x %})
// makes the parser give up, leaving the code to the engine as written.
var statementWords = map[string]bool{"for": true, "in": true, "if": true, "elif": true, "else": true, "set": true,
	"macro": true, "call": true, "filter": true, "recursive": true, "and": true, "or": true, "is": true, "not": true,
	"endfor": true, "endif": true, "endmacro": true, "endcall": true, "endfilter": true, "endset": true,
	"raw": true, "endraw": true, "break": true, "continue": true, "generation": true, "endgeneration": true,
	"include": true, "import": true, "from": true, "extends": true, "block": true, "endblock": true, "with": true, "endwith": true, "do": true}

func (p *opParser) word() bool {
	return p.kindIs('a') && statementWords[p.code[p.toks[p.pos].from:p.toks[p.pos].to]]
}

// startsExpr reports whether the next token can begin an expression. A
// keyword where jinja2 reads an operand, first in an expression's code
// or after the if, elif or in that a statement's expression follows, is
// a variable name to it ({% if if+A %} adds A to the variable if), as it
// is to the engine; read as a keyword, the + became the sign of a new
// operand and the rewritten tag did not parse.
func (p *opParser) startsExpr() bool {
	if p.is(0, "not") {
		return true
	}
	if p.kindIs('s') || p.kindIs('n') || (p.kindIs('a') && !p.word()) {
		return true
	}
	if p.kindIs('a') && !p.is(0, "not") {
		return (p.pos == 0 && !p.stmt) || p.is(-1, "if") || p.is(-1, "elif") || p.is(-1, "in")
	}
	return p.is(0, "(") || p.is(0, "[") || p.is(0, "{") || p.is(0, "-") || p.is(0, "+")
}

// expression: or [if or [else expression]] (parseExpression).
func (p *opParser) expression() opNode {
	from := p.from()
	kids := []opNode{p.binary(0)}
	if p.is(0, "if") {
		p.pos++
		kids = append(kids, p.binary(0))
		if p.is(0, "else") {
			p.pos++
			kids = append(kids, p.expression())
		}
	}
	return p.join(from, p.end(), kids...)
}

// levels are the left-associative binary levels above the comparisons'
// and below the multiplications', loosest first. They are jinja2's: ~
// binds tighter than + and -, where the engine's ~ is looser, so
// 'Step ' ~ loop.index + ': ' is ('Step ' ~ loop.index) + ': '. A + or -
// read here is always rewritten to a call (__hone_add), whose parentheses
// keep that reading in the rewritten text the engine parses.
var levels = [][]string{{"or"}, {"and"}, nil, {"+", "-"}, {"~"}}

// binary parses level i of levels; level 2 is not and the comparisons.
func (p *opParser) binary(i int) opNode {
	switch {
	case i == 2:
		return p.not()
	case i == len(levels):
		return p.mulDiv()
	}
	from := p.from()
	kids := []opNode{p.binary(i + 1)}
	for !p.failed && p.oneOf(levels[i]) {
		if levels[i][0] == "+" {
			// a + b - c is __hone_sub(__hone_add(a, b), c): jinja2's
			// left-associative reading.
			call := addName
			if p.is(0, "-") {
				call = subName
			}
			p.pos++
			left, right := kids[0], p.binary(i+1)
			kids[0] = opNode{from: left.from, to: right.to, text: call + "(" + p.str(left) + ", " + p.str(right) + ")"}
			continue
		}
		p.pos++
		kids = append(kids, p.binary(i+1))
	}
	if len(kids) > 1 && levels[i][0] == "~" {
		for k := range kids {
			if !p.stringLiteral(kids[k]) {
				kids[k].text = stringName + "(" + p.str(kids[k]) + ")"
			}
		}
	}
	return p.join(from, p.end(), kids...)
}

// stringLiteral reports whether n is one string token, which ~ joins as
// it is (the other operands are passed through Python's str()).
func (p *opParser) stringLiteral(n opNode) bool {
	for _, t := range p.toks {
		if t.from == n.from {
			return t.kind == 's' && t.to == n.to && n.text == ""
		}
	}
	return false
}

func (p *opParser) oneOf(ops []string) bool {
	for _, op := range ops {
		if p.is(0, op) {
			return true
		}
	}
	return false
}

func (p *opParser) not() opNode {
	if p.is(0, "not") {
		from := p.from()
		p.pos++
		operand := p.not()
		return p.join(from, p.end(), operand)
	}
	return p.comparison()
}

var comparisonOps = []string{"==", "!=", "<", ">", "<=", ">="}

// comparison parses operands joined by comparisons, in and not in
// (parseComparison); two or more comparisons and nothing else become
// Python's chain, each inner operand written twice. An is test is not
// here: it belongs to its operand (filters).
func (p *opParser) comparison() opNode {
	from := p.from()
	kids := []opNode{p.binary(3)}
	var ops []string
	chain := true    // only the operators of comparisonOps
	ordered := false // the operator before the next operand orders
	for !p.failed {
		ordered = false
		switch {
		case p.oneOf(comparisonOps):
			op := p.code[p.toks[p.pos].from:p.toks[p.pos].to]
			ops = append(ops, op)
			ordered = op != "==" && op != "!="
			if ordered {
				kids[len(kids)-1] = p.defined(kids[len(kids)-1])
			}
			p.pos++
		case p.is(0, "in"):
			p.pos, chain = p.pos+1, false
		case p.is(0, "not") && p.is(1, "in"):
			p.pos, chain = p.pos+2, false
		default:
			if !chain || len(ops) < 2 {
				return p.join(from, p.end(), kids...)
			}
			var b strings.Builder
			b.WriteByte('(')
			for i, op := range ops {
				if i > 0 {
					b.WriteString(" and ")
				}
				b.WriteString(p.str(kids[i]) + " " + op + " " + p.str(kids[i+1]))
			}
			b.WriteByte(')')
			return opNode{from: from, to: p.end(), text: b.String()}
		}
		next := p.binary(3)
		if ordered {
			next = p.defined(next)
		}
		kids = append(kids, next)
	}
	return opNode{}
}

// defined is n passed through a call of ours (pyDefined) that fails for
// an undefined value: jinja2 raises UndefinedError for an undefined
// operand of <, >, <= and >=, where the engine took it for 0 or "" (x < 1
// was True), so a misspelt name became silently wrong text. A literal, and a parenthesized tuple (which
// a call's parentheses would not keep one), are left as they are.
func (p *opParser) defined(n opNode) opNode {
	if p.failed || n.tuple || p.literal(n) || strings.HasPrefix(n.text, definedName+"(") {
		return n
	}
	n.text = definedName + "(" + p.str(n) + ")"
	return n
}

// literal reports whether n is one string or number token.
func (p *opParser) literal(n opNode) bool {
	for _, t := range p.toks {
		if t.from == n.from {
			return (t.kind == 's' || t.kind == 'n') && t.to == n.to
		}
	}
	return false
}

// arithCalls are the callables the operators that differ are rewritten to.
var arithCalls = map[string]string{"*": mulName, "/": divName, "//": floorDivName, "%": modName}

// mulDiv: power (op power)* for *, /, // and % (parseMulDiv).
func (p *opParser) mulDiv() opNode {
	left := p.power()
	for !p.failed && p.oneOf([]string{"*", "/", "//", "%"}) {
		op := p.code[p.toks[p.pos].from:p.toks[p.pos].to]
		p.pos++
		right := p.power()
		extra := ""
		if op == "%" && right.tuple {
			extra = ", true" // (a, b) is a tuple to %; the engine makes it a list
		}
		left = opNode{from: left.from, to: right.to, text: arithCalls[op] + "(" + p.str(left) + ", " + p.str(right) + extra + ")"}
	}
	return left
}

// power: unary (** unary)*, from the left as jinja2 reads it (parse_pow:
// 2 ** 3 ** 2 is (2 ** 3) ** 2, 64); the engine takes one ** only.
func (p *opParser) power() opNode {
	left := p.unary()
	for !p.failed && p.is(0, "**") {
		p.pos++
		exp := p.unary()
		left = opNode{from: left.from, to: exp.to, text: powName + "(" + p.str(left) + ", " + p.str(exp) + ")"}
	}
	return left
}

// unary: a signed operand, or one with its filters and tests (parseUnary
// with filters). jinja2 applies the filters after the sign, (-x)|abs,
// where the engine reads -(x|abs); the signed operand is put in
// parentheses for it.
func (p *opParser) unary() opNode {
	if !p.is(0, "-") && !p.is(0, "+") {
		return p.filters(p.postfix())
	}
	n := p.signed()
	if p.failed || (!p.is(0, "|") && !p.is(0, "is")) {
		return n
	}
	n.text = "(" + p.str(n) + ")"
	return p.filters(n)
}

// signed: signs and an operand without filters (parseUnary without). A
// sign on anything but a number literal becomes a call of ours, Python's
// unary - and + (pyNeg): the engine gave 0 for -'ab', -None and -x with x
// undefined, and 0 for -True, where Python gives -1.
func (p *opParser) signed() opNode {
	if p.is(0, "-") || p.is(0, "+") {
		from := p.from()
		call := negName
		if p.is(0, "+") {
			call = posName
		}
		p.pos++
		literal := p.kindIs('n') && (p.pos+1 == len(p.toks) || !p.is(1, ".") && !p.is(1, "[") && !p.is(1, "("))
		operand := p.signed()
		if p.failed || literal {
			return p.join(from, p.end(), operand)
		}
		if from > 0 && isIdentByte(p.code[from-1]) {
			call = " " + call // in+x: the call must not join the keyword
		}
		return opNode{from: from, to: p.end(), text: call + "(" + p.str(operand) + ")"}
	}
	return p.postfix()
}

// postfix: atom followed by .name, [index or slice] and (args)
// (parsePostfix).
func (p *opParser) postfix() opNode {
	from := p.from()
	atom := ""
	if p.kindIs('a') {
		atom = p.code[p.toks[p.pos].from:p.toks[p.pos].to]
	}
	// loop is checked too: where no for loop's body binds it (the top
	// level, a for's else, a macro called from a loop) jinja2 raises
	// "'loop' is undefined" on its attributes; its own members are the
	// engine's, not checked (member).
	unwrapped := unwrappedNames[atom]
	name := atom != "" && (!unwrapped || atom == "loop")
	kids := []opNode{p.atom()}
	if name && !p.failed && (p.is(0, ".") || p.is(0, "[")) {
		n := p.code[kids[0].from:kids[0].to]
		kids[0].text = nameDefinedName + "(" + n + ", '" + n + "')"
	}
	for more := false; !p.failed; more = true {
		switch {
		case p.is(0, "."):
			at := p.from()
			p.pos++
			if !p.kindIs('a') && !p.kindIs('n') {
				p.failed = true
				return opNode{}
			}
			key := ""
			if p.kindIs('a') && !unwrapped {
				key = "'" + p.code[p.toks[p.pos].from:p.toks[p.pos].to] + "'"
			}
			attr := p.code[p.toks[p.pos].from:p.toks[p.pos].to]
			p.pos++
			kids = p.member(from, at, kids, len(kids), key)
			if atom == "loop" && !more && loopItemNames[attr] != "" && (p.is(0, ".") || p.is(0, "[")) {
				// loop.previtem.x: checked as member checks a read (see
				// loopItemName), which loop's reads are not.
				read := p.join(from, p.end(), kids...)
				kids = []opNode{{from: from, to: p.end(), text: loopItemName + "(" + p.str(read) + ", '" + attr + "')"}}
			}
		case p.is(0, "["):
			at := p.from()
			p.pos++
			first, slice := len(kids), false
			for !p.failed && !p.is(0, "]") {
				if p.is(0, ":") {
					p.pos, slice = p.pos+1, true
					continue
				}
				kids = append(kids, p.expression())
			}
			p.expect("]")
			key := ""
			if !unwrapped && !slice && len(kids) == first+1 && !p.failed && !strings.Contains(p.code[at:p.end()], "(") {
				key = p.str(kids[first])
			}
			kids = p.member(from, at, kids, first, key)
		case p.is(0, "("):
			p.pos++
			kids = append(kids, p.list(")")...)
		default:
			if !more {
				return kids[0] // the atom, a tuple still
			}
			return p.join(from, p.end(), kids...)
		}
	}
	return opNode{}
}

// member checks the attribute or item read that begins at at, whose
// key's text is key and whose parts are kids[first:], when another read
// follows it (y.z.w): the object read so far, code[from:at], becomes
// __hone_member(object, key) (pyMember), which fails with jinja2's
// UndefinedError where the member is missing, as jinja2 raises on the
// read of its Undefined; the engine gave "". The key is evaluated twice,
// so a key with a call in it (one that may change something) is not
// checked (key ""), nor is a read of the loop object, caller, varargs or
// kwargs, which the engine binds in its own way.
func (p *opParser) member(from, at int, kids []opNode, first int, key string) []opNode {
	if p.failed || key == "" || (!p.is(0, ".") && !p.is(0, "[")) {
		return kids
	}
	object := p.join(from, at, kids[:first]...)
	read := p.join(at, p.end(), kids[first:]...)
	text := memberName + "(" + p.str(object) + ", " + key + ")" + p.str(read)
	return []opNode{{from: from, to: p.end(), text: text}}
}

// unwrappedNames are the names postfix leaves as they are before an
// attribute or item: literals, the loop object (but for its check, see
// postfix) and a macro's caller, varargs and kwargs (bound by the engine
// in its own way, and loop read by our loop hook), and jinja2's globals,
// which a template does not read attributes of but which are defined.
var unwrappedNames = map[string]bool{"true": true, "false": true, "none": true, "True": true, "False": true, "None": true,
	"loop": true, "caller": true, "varargs": true, "kwargs": true, "self": true,
	"range": true, "dict": true, "lipsum": true, "cycler": true, "joiner": true, "namespace": true}

// filters: n followed by |filter [(args)], is [not] test [arg or (args)]
// and (args), as jinja2's parse_filter_expr reads them: a test applies to
// what is before it up to the operator, as a filter does, where the
// engine parses is with the comparisons (2 * 3 is odd tested 2 * 3;
// jinja2 gives 2 * (3 is odd)). So each test is written in parentheses
// with its operand, and a single argument without parentheses (x is
// divisibleby 3, which the engine refused) is given them.
func (p *opParser) filters(n opNode) opNode {
	text, changed, at := p.str(n), n.text != "", n.to
	for !p.failed {
		from := p.from()
		var kids []opNode
		switch {
		case p.is(0, "|"):
			p.pos++
			if !p.kindIs('a') {
				p.failed = true
				return opNode{}
			}
			p.pos++
			if p.is(0, "(") {
				p.pos++
				kids = p.list(")")
			}
		case p.is(0, "(") && at != n.to:
			p.pos++ // a call of what a filter gave
			kids = p.list(")")
		case p.is(0, "is"):
			test, ok := p.test(text)
			if !ok {
				return opNode{}
			}
			text, changed, at = test, true, p.end()
			continue
		default:
			if at == n.to {
				return n
			}
			if !changed {
				return opNode{from: n.from, to: at}
			}
			return opNode{from: n.from, to: at, text: text}
		}
		part := p.join(from, p.end(), kids...)
		text, changed, at = text+p.code[at:from]+p.str(part), changed || part.text != "", p.end()
	}
	return opNode{}
}

// test reads `is [not] name [arg | (args)]` after operand and returns
// the test as the engine reads it: its argument in parentheses. jinja2
// takes a single argument without parentheses when the next token begins
// a primary other than else, or and and. divisibleby, which the engine
// does not have, and sameas, which it answers by equality, become calls of
// ours with their argument; the other tests of ours take none.
func (p *opParser) test(operand string) (string, bool) {
	p.pos++ // is
	neg := ""
	if p.is(0, "not") {
		p.pos++
		neg = "not "
	}
	if !p.kindIs('a') {
		p.failed = true
		return "", false
	}
	name := p.code[p.toks[p.pos].from:p.toks[p.pos].to]
	p.pos++
	args := ""
	switch {
	case p.is(0, "("):
		from := p.from()
		p.pos++
		kids := p.list(")")
		args = p.str(p.join(from, p.end(), kids...))
	case p.kindIs('s') || p.kindIs('n') || (p.kindIs('a') && !p.word()) || p.is(0, "[") || p.is(0, "{"):
		args = "(" + p.str(p.postfix()) + ")"
	}
	if call := ownTest(name); call != "" && (args == "" || name == "divisibleby" || name == "sameas") {
		if args == "" {
			return "(" + neg + call + "(" + operand + "))", !p.failed
		}
		return "(" + neg + call + "(" + operand + ", " + args[1:] + ")", !p.failed
	}
	return "(" + operand + " is " + neg + name + args + ")", !p.failed
}

// ownTest is the variable our version of jinja2's test name is passed as
// (pyCallables), for the tests the engine has not or answers otherwise,
// or "". `x is name` calls it (test), and so do select and reject given
// the name as a string (testItems).
func ownTest(name string) string {
	call, _ := ownTestCallable(name)
	return call
}

// list parses the items up to closer (already past the opener): call
// arguments (name=value too), list items or dict pairs, with their commas
// and colons.
func (p *opParser) list(closer string) []opNode {
	var kids []opNode
	for !p.failed && !p.is(0, closer) {
		switch {
		case p.pos >= len(p.toks):
			p.failed = true
		case p.is(0, ",") || p.is(0, ":"):
			p.pos++
		case p.kindIs('a') && p.is(1, "="):
			p.pos += 2
		case closer == ")" && (p.is(0, "*") || p.is(0, "**")):
			p.pos++ // a call's *args or **kwargs: splatCalls rewrites it after
		default:
			kids = append(kids, p.expression())
		}
	}
	p.expect(closer)
	return kids
}

func (p *opParser) atom() opNode {
	from := p.from()
	switch {
	case p.pos >= len(p.toks):
		p.failed = true
	case p.kindIs('n'):
		p.pos++
		return opNode{from: from, to: p.end(), text: engineNumber(p.code[from:p.end()])}
	case p.kindIs('s') || (p.kindIs('a') && !p.is(0, "not")):
		p.pos++ // a keyword here is a name to jinja2 (startsExpr)
	case p.is(0, "("):
		p.pos++
		if p.is(0, ")") {
			p.pos++
			return opNode{from: from, to: p.end()}
		}
		kids := []opNode{p.expression()}
		tuple := false
		for !p.failed && p.is(0, ",") {
			p.pos, tuple = p.pos+1, true
			if !p.is(0, ")") {
				kids = append(kids, p.expression())
			}
		}
		p.expect(")")
		n := p.join(from, p.end(), kids...)
		n.tuple = tuple
		return n
	case p.is(0, "["):
		p.pos++
		kids := p.list("]")
		return p.join(from, p.end(), kids...)
	case p.is(0, "{"):
		p.pos++
		kids := p.list("}")
		return p.join(from, p.end(), kids...)
	case p.is(0, "-"):
		p.pos++
		operand := p.atom()
		return p.join(from, p.end(), operand)
	default:
		p.failed = true
	}
	return opNode{from: from, to: p.end()}
}
