package chattemplate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The engine (github.com/ardanlabs/jinja) has no hooks for a step counter,
// a context or a recursion limit, so the limits are put into the template
// text itself: before it is compiled, the source is rewritten to call
// per-render callables that Render passes as variables (see limits.go).
//
//   - every {% for %} body starts with {{ __hone_loop(ID) }}, and every
//     {% macro %} and {% call %} body with {{ __hone_enter(ID) }} and ends
//     with {{ __hone_leave() }}; ID names the body's region, whose static
//     size (tokens of its tags and bytes of its literal text) each
//     execution charges to the budget; a macro's default values count as
//     a level of nesting too (guardMacroDefaults);
//   - {{ E }} becomes {{ __hone_out(E) }} and {% set x = E %} becomes
//     {% set x = __hone_set(E) %} (with the namespace as a second argument
//     for {% set ns.a = E %}), which measure the value and pass it through;
//   - `| tojson` becomes `| __hone_tojson` (the engine's own tojson sorts
//     keys; its filters are looked up before variables, so the call is
//     renamed instead), and likewise the other filters renamedFilter
//     names; operators whose meaning is not Python's become calls
//     (pyops.go);
//   - a {% call(params) f(args) %} or {% call f(args) %} block becomes
//     a macro that the {% endcall %} passes to f as caller
//     (callAsMacro), so its parameters bind, and its arguments are
//     checked, as jinja2 binds and checks them.
//
// The inserted tags are expressions, not block tags, on purpose: the
// engine applies trim_blocks/lstrip_blocks and the "-" markers by looking
// from each tag to the nearest text segment, skipping other tags, and an
// expression tag without markers neither trims nor is counted; a block tag
// would strip one more newline after it. Two tags of the source with no
// text between get an empty text between them (tagSeparator), so that
// each strips only the text that touches it, as in jinja2. Inserted tags
// add no text and no line breaks, so the output and the line numbers in
// errors are unchanged.
// The scanner below follows the engine's own (scan.go) so that it cuts the
// source into the same tags.

// Static limits, checked when a template is compiled. They keep the
// engine's recursive parser and evaluator far from Go's stack limit.
const (
	maxNesting       = 64      // nested blocks ({% if %} in {% for %} ...)
	maxTagTokens     = 1024    // tokens in one tag
	maxTagBrackets   = 64      // nested (, [ and { in one tag
	maxRepeatLiteral = 1 << 20 // s * N left to the engine allocates N copies at once (checkEngineRepeat)
)

type segKind int

const (
	segText segKind = iota
	segComment
	segExpr
	segStmt
)

// segment is a piece of template source: text, or a tag with its content
// (without delimiters and "-" markers) at src[from:to].
type segment struct {
	kind                segKind
	start, end          int // the whole segment
	from, to            int // a tag's content
	trimLeft, trimRight bool
	// keepLeft and keepRight are jinja2's "+" markers ({%+ and +%} on a
	// block tag or comment): lstrip_blocks and trim_blocks leave the
	// text on that side as it is.
	keepLeft, keepRight bool
	line                int
}

// scan cuts src into text and tags as the engine's scanner does: a tag
// opens with {{, {% or {#, may carry a "-" right after the opener or right
// before the closer, and (except comments) skips quoted strings with
// backslash escapes when looking for its closer.
func scan(src string) ([]segment, error) {
	var segs []segment
	line, textStart, textLine := 1, 0, 1
	i := 0
	for i < len(src) {
		if src[i] != '{' || i+1 >= len(src) || (src[i+1] != '{' && src[i+1] != '%' && src[i+1] != '#') {
			if src[i] == '\n' {
				line++
			}
			i++
			continue
		}
		if i > textStart {
			segs = append(segs, segment{kind: segText, start: textStart, end: i, line: textLine})
		}
		seg := segment{kind: segExpr, start: i, line: line}
		closer := "}}"
		switch src[i+1] {
		case '%':
			seg.kind, closer = segStmt, "%}"
		case '#':
			seg.kind, closer = segComment, "#}"
		}
		i += 2
		if i < len(src) && src[i] == '-' {
			seg.trimLeft = true
			i++
		} else if i < len(src) && src[i] == '+' {
			// jinja2's marker that keeps the white space before a
			// block tag or comment from lstrip_blocks; the engine has
			// none (the rewriter keeps it, keepLeft). jinja2 reads it
			// after {{ too, where it changes nothing.
			seg.keepLeft = seg.kind != segExpr
			i++
		}
		seg.from = i
		if err := closeTag(src, &seg, closer); err != nil {
			return nil, err
		}
		line += strings.Count(src[seg.from:seg.end], "\n")
		segs = append(segs, seg)
		i = seg.end
		textStart, textLine = i, line
		if seg.kind == segStmt && keyword(src[seg.from:seg.to]) == "raw" && seg.keepRight {
			// jinja2 opens a raw block only at "%}" or "-%}"; at "+%}"
			// the tag is an unknown one.
			return nil, &staticError{fmt.Sprintf("line %d: Encountered unknown tag 'raw'.", seg.line)}
		}
		if seg.kind == segStmt && keyword(src[seg.from:seg.to]) == "raw" {
			// jinja2 reads no tag inside a raw block: up to its
			// {% endraw %} it is one text, whatever it holds.
			if end := endRaw(src, i); end > i {
				segs = append(segs, segment{kind: segText, start: i, end: end, line: line})
				line += strings.Count(src[i:end], "\n")
				i, textStart, textLine = end, end, line
			}
		}
	}
	if textStart < len(src) {
		segs = append(segs, segment{kind: segText, start: textStart, end: len(src), line: textLine})
	}
	return segs, nil
}

// closeTag finds where the tag seg, whose content starts at seg.from,
// ends, as jinja2's lexer does: at the first closer (or "-" and closer),
// in a comment anywhere, in any other tag outside string literals (with
// backslash escapes) and outside brackets, where jinja2 reads a closer as
// operators ({{ {'a': {'b': 1}} }} is one tag). A bracket closed by
// another kind, or with none open, is refused with jinja2's words.
func closeTag(src string, seg *segment, closer string) error {
	var open []byte // the brackets open, innermost last
	line := seg.line
	for i := seg.from; i < len(src); {
		c := src[i]
		if seg.kind != segComment && (c == '\'' || c == '"') {
			line += strings.Count(src[i:skipString(src, i)], "\n")
			i = skipString(src, i)
			continue
		}
		if len(open) == 0 && c == '-' && strings.HasPrefix(src[i+1:], closer) {
			seg.to, seg.trimRight, seg.end = i, true, i+3
			return nil
		}
		if len(open) == 0 && c == '+' && seg.kind != segExpr && strings.HasPrefix(src[i+1:], closer) {
			// jinja2's marker that keeps the newline after a block
			// tag or comment from trim_blocks (keepRight).
			seg.to, seg.keepRight, seg.end = i, true, i+3
			return nil
		}
		if len(open) == 0 && strings.HasPrefix(src[i:], closer) {
			seg.to, seg.end = i, i+2
			return nil
		}
		if seg.kind != segComment {
			switch c {
			case '(', '[', '{':
				open = append(open, c)
			case ')', ']', '}':
				if len(open) == 0 {
					return &staticError{fmt.Sprintf("line %d: unexpected '%c'", line, c)}
				}
				if want := closingBracket(open[len(open)-1]); want != c {
					return &staticError{fmt.Sprintf("line %d: unexpected '%c', expected '%c'", line, c, want)}
				}
				open = open[:len(open)-1]
			}
		}
		if c == '\n' {
			line++
		}
		i++
	}
	return &unclosedTagError{line: seg.line}
}

// separateClosers is src with a space between the "}" and a "}" or "%"
// and "}" that stand side by side in a tag's code outside string
// literals, which scan reads inside brackets only ({{ {'a': {'b': 1}} }}).
// The engine's scanner ends a tag at the first closer outside strings,
// brackets or not, and refused the nested dict ("expected }"); the space
// changes no token. src is returned as it is when scan refuses it, for
// the checks after to report.
func separateClosers(src string) string {
	segs, err := scan(src)
	if err != nil {
		return src
	}
	var b strings.Builder
	last := 0
	for _, s := range segs {
		if s.kind != segExpr && s.kind != segStmt {
			continue
		}
		for i := s.from; i < s.to; {
			if src[i] == '\'' || src[i] == '"' {
				i = skipString(src, i)
				continue
			}
			if (src[i] == '}' || src[i] == '%') && i+1 < s.to && src[i+1] == '}' {
				b.WriteString(src[last:i+1] + " ")
				last = i + 1
			}
			i++
		}
	}
	b.WriteString(src[last:])
	return b.String()
}

// closingBracket is the bracket that closes the opening one c.
func closingBracket(c byte) byte {
	switch c {
	case '(':
		return ')'
	case '[':
		return ']'
	}
	return '}'
}

// endRaw is where the {% endraw %} tag that closes a raw block whose
// content starts at i begins ("{%", a "-" or "+", white space, endraw,
// white space, a "-" or "+", "%}"), or len(src) when none does.
func endRaw(src string, i int) int {
	for {
		k := strings.Index(src[i:], "{%")
		if k < 0 {
			return len(src)
		}
		j := i + k + 2
		if j < len(src) && (src[j] == '-' || src[j] == '+') {
			j++
		}
		rest := strings.TrimLeft(src[j:], " \t\n\r")
		if after, ok := strings.CutPrefix(rest, "endraw"); ok {
			after = strings.TrimLeft(after, " \t\n\r")
			after = strings.TrimLeft(after[:min(len(after), 1)], "-+") + after[min(len(after), 1):]
			if strings.HasPrefix(after, "%}") {
				return i + k
			}
		}
		i += k + 2
	}
}

type unclosedTagError struct{ line int }

func (e *unclosedTagError) Error() string { return fmt.Sprintf("unclosed tag at line %d", e.line) }

// keyword is a statement's first word, as the engine reads it: leading
// letters and underscores after the leading space.
func keyword(content string) string {
	s := strings.TrimSpace(content)
	for i, r := range s {
		if r != '_' && !unicode.IsLetter(r) {
			return s[:i]
		}
	}
	return s
}

// leadingName is the name token a tag's content starts with, white space
// skipped: letters, digits and underscores.
func leadingName(content string) string {
	s := strings.TrimSpace(content)
	i := 0
	for i < len(s) && (isIdentByte(s[i]) || s[i] >= 0x80) {
		i++
	}
	return s[:i]
}

// region is a part of the template that runs again and again (a loop
// body, a macro body, a {% call %} body) and what one run of it costs
// beyond the regions inside it: the tokens and tags it evaluates and the
// bytes of literal text it writes.
type region struct {
	steps int64
	text  int64
}

// block is an open {% ... %} block while rewriting.
type block struct {
	kind   string // for, if, macro, call, filter, set, generation
	region int    // the region its body opened, -1 if none
	inElse bool   // a for loop's {% else %}: runs once, in the outer region
	// star: the tag that rebinds a macro whose body reads varargs or
	// kwargs after its endmacro (starRebind).
	star string
	// setFilter is a block set's filters ("| f(1)"), applied to its
	// setTarget at the endset (endSetFilter).
	setFilter, setTarget string
	// callerCall: a call block with parameters, rewritten as a macro,
	// prints this call at its end (callAsMacro).
	callerCall string
	// elseSets: the names a for loop's {% else %} assigns, set back
	// after its {% endfor %} from what the loop saved (setBackAfter).
	elseSets []string
}

// instrumented is a rewritten template source with its regions.
type instrumented struct {
	source  string
	regions []region        // region 0 is the top level, which runs once
	intKeys map[string]bool // the integer keys its dict literals write (addIntKeys)
}

// instrument rewrites src as described at the top of this file and checks
// the static limits. With hooks false it only renames tojson and passes
// what {{ }} prints through hookOut, which gives the template as it
// rendered before limits existed when hookOut only formats floats (tests
// compare the two).
func instrument(src string, hooks bool) (*instrumented, error) {
	segs, err := scan(src)
	if err != nil {
		return nil, err
	}
	resets, elses := loopResets(src, segs)
	return rewrite(&rewriter{src: src, hooks: hooks, regions: []region{{}}, intKeys: map[string]bool{}, macros: macroSignatures(src, segs), stars: starMacros(src, segs), resets: resets, elses: elses}, segs)
}

// syntaxSource is src as instrument rewrites it without hooks, and
// without the calls that wrap what {{ }} prints and what a set unpacks:
// the engine reads a call's arguments without commas, so
// {{ __hone_out(1 2) }} compiles where {{ 1 2 }}, which jinja2 refuses,
// does not. add compiles this text to tell the syntax jinja2 reads and
// the engine does not (which pyOps and setUnpack rewrite) from an error.
func syntaxSource(src string) (string, error) {
	segs, err := scan(src)
	if err != nil {
		return "", err
	}
	resets, elses := loopResets(src, segs)
	ins, err := rewrite(&rewriter{src: src, syntax: true, regions: []region{{}}, intKeys: map[string]bool{}, stars: starMacros(src, segs), resets: resets, elses: elses}, segs)
	if err != nil {
		return "", err
	}
	return ins.source, nil
}

// rewrite runs w over the segments of w.src.
func rewrite(w *rewriter, segs []segment) (*instrumented, error) {
	src := w.src
	for _, s := range segs {
		if err := w.segment(s); err != nil {
			return nil, fmt.Errorf("line %d: %w", s.line, err)
		}
	}
	if w.inRaw {
		return nil, &staticError{"unclosed raw block"}
	}
	out := w.out.String()
	if spacesAfterTagFirst(src, segs) {
		out = keepSpacesPrefix + out
	}
	return &instrumented{source: out, regions: w.regions, intKeys: w.intKeys}, nil
}

// keepSpacesPrefix is a text segment the engine trims to nothing (the "-"
// of the empty expression after it strips it).
const keepSpacesPrefix = " {{- '' }}"

// tagSeparator goes between two tags with no text between them: a text
// segment the "-" of the empty expression after it trims to nothing. The
// engine applies trim_blocks, lstrip_blocks and the "-" markers to the
// nearest text segment, past any tags between, where jinja2 strips only
// the text that touches the tag: "{% if t %}{{ x }}\nX" lost its newline
// and "P {{ x }}{%- if t %}" its space. With it, the nearest text of a tag
// against another tag is this empty one.
const tagSeparator = keepSpacesPrefix

// spacesAfterTagFirst reports whether the template's first text is spaces
// and tabs between two tags on the line that the first of them opens, before
// a block tag or comment that lstrip_blocks would strip them for. jinja2
// strips them only when the tag begins its line, and it does not here (the
// text follows a tag); the engine takes a template's first text as the
// start of a line whatever precedes it, and strips them ("{{ bos_token }}
// {% for … %}" lost its space). Any text before them, even the empty text
// keepSpacesPrefix leaves, makes the engine keep them.
func spacesAfterTagFirst(src string, segs []segment) bool {
	for i, s := range segs {
		if s.kind == segStmt && keyword(src[s.from:s.to]) == "raw" {
			return false
		}
		if s.kind != segText {
			continue
		}
		if i == 0 || i+1 >= len(segs) || segs[i-1].trimRight || segs[i+1].trimLeft ||
			(segs[i+1].kind != segStmt && segs[i+1].kind != segComment) {
			return false
		}
		return strings.Trim(src[s.start:s.end], " \t") == ""
	}
	return false
}

type rewriter struct {
	src      string
	afterTag bool // the last segment was a tag to the engine (tagSeparator)
	keepNext bool // the last segment was a tag with a "+" before its closer
	hooks    bool
	syntax   bool // syntaxSource: nothing wrapped in calls
	out      strings.Builder
	regions  []region
	intKeys  map[string]bool
	stack    []block
	inRaw    bool
	// raw is a raw block's content so far, rawTrimRight whether its
	// {% raw -%} strips the white space it starts with (endRaw).
	raw          strings.Builder
	rawTrimRight bool
	// macros: the template's macros whose calls by name macroCalls
	// checks as jinja2 does (none for syntaxSource).
	macros map[string]macroSig
	// stars: the macros whose body reads varargs or kwargs, by the
	// offset of their tag's content (starMacros).
	stars map[int]starUse
	// resets: the names each loop sets back at the start of every
	// iteration, by the offset of its tag's content (loopResets).
	resets map[int][]string
	// elses: the names each loop's {% else %} assigns, which it saves
	// before the loop and sets back after it, by the offset of its tag's
	// content (loopResets).
	elses map[int][]string
}

// current is the region the segment being read belongs to.
func (w *rewriter) current() int {
	for i := len(w.stack) - 1; i >= 0; i-- {
		if b := w.stack[i]; b.region >= 0 && !b.inElse {
			return b.region
		}
	}
	return 0
}

func (w *rewriter) segment(s segment) error {
	content := w.src[s.from:s.to]
	if w.inRaw {
		if s.kind == segStmt && keyword(content) == "endraw" {
			w.endRaw(s)
			w.afterTag, w.keepNext = true, s.keepRight
			return nil
		}
		w.regions[w.current()].text += int64(s.end - s.start)
		w.raw.WriteString(w.src[s.start:s.end])
		return nil
	}
	engineTag := s.kind != segText
	if engineTag && s.keepLeft && !w.afterTag {
		// The text before a tag whose "+" keeps it from lstrip_blocks
		// (which the engine applies whatever the markers) ends at an
		// empty expression, for tagSeparator to follow as a text of
		// its own.
		w.out.WriteString("{{ '' }}")
	}
	if (engineTag && (w.afterTag || s.keepLeft)) || (!engineTag && w.keepNext) {
		// Between two tags, and on the side of a tag that a "+" marker
		// keeps: the engine's lstrip_blocks and trim_blocks strip the
		// empty text instead.
		w.out.WriteString(tagSeparator)
	}
	w.afterTag, w.keepNext = engineTag, s.keepRight
	switch {
	case s.kind == segText:
		w.regions[w.current()].text += int64(s.end - s.start)
		w.out.WriteString(w.src[s.start:s.end])
		return nil
	case s.kind == segComment:
		w.out.WriteString(w.src[s.start:s.end])
		return nil
	}
	tokens, err := checkTag(content)
	if err != nil {
		return err
	}
	if content, err = pyStringLiterals(content); err != nil {
		return err
	}
	content = adjacentStrings(content)
	addIntKeys(content, w.intKeys)
	w.regions[w.current()].steps += int64(tokens) + 1
	before := w.out.Len()
	if err := w.code(s, content); err != nil {
		return err
	}
	return checkEngineRepeat(w.out.String()[before:])
}

// code writes an expression or statement tag as rewritten.
func (w *rewriter) code(s segment, content string) error {
	if s.kind == segExpr {
		w.tag(s, " "+w.printed(renameFilters(pyOps(content)))+" ")
		return nil
	}
	return w.statement(s, content)
}

// printed is the rewritten expression code as a {{ }} tag prints it.
// Printing goes through hookOut with hooks false too: it also prints
// floats as Python does, which is no limit, and the plain rendering
// tests compare against must do the same.
func (w *rewriter) printed(code string) string {
	if w.syntax {
		return code
	}
	return hookOut + "(" + code + ")"
}

// opsStatements are the statements whose expressions pyOps rewrites
// (besides a set's value and a macro's defaults, deferDefaults): the
// engine parses any other's text its own way (a macro's parameters are
// cut at every comma, which a rewritten default would add), or not as an
// expression at all.
var opsStatements = map[string]bool{"if": true, "elif": true, "for": true, "call": true}

// statement rewrites a {% ... %} tag and follows the block structure.
func (w *rewriter) statement(s segment, content string) error {
	kw := keyword(content)
	if leadingName(content) == "" {
		// A sign where the name goes ({% - if %}, or a "-" beside a
		// "+" marker, {%+- if %}): the engine takes the tag for the end
		// of the template and renders nothing after it.
		return &staticError{"tag name expected"}
	}
	if name := leadingName(content); name != kw {
		// jinja2's tag name is the whole name ({%for0 … %} is no for);
		// the engine's and keyword's stop at the digit.
		return &staticError{fmt.Sprintf("unknown tag %q", name)}
	}
	code := renameFilters(content)
	if opsStatements[kw] {
		code = renameFilters(pyOpsStatement(content))
	}
	switch kw {
	case "for", "macro", "call":
		return w.openBody(s, kw, content, code)
	case "if", "filter", "generation":
		w.tag(s, code)
		return w.push(block{kind: kw, region: -1})
	case "set":
		eq, err := setAssign(content)
		if err != nil {
			return err
		}
		if eq < 0 {
			// The engine reads no filter on a block set: {% set x | f %}
			// is {% set x %}, and the endset assigns x | f to x.
			target, filter, err := blockSetFilter(content)
			if err != nil {
				return err
			}
			if filter != "" {
				code = " set " + target + " "
			}
			w.tag(s, code)
			return w.push(block{kind: "set", region: -1, setFilter: filter, setTarget: target})
		}
		if names, value := unpackTargets(content); names != nil {
			if strings.TrimSpace(value) == "" {
				// jinja2's syntax error; the engine's set takes no value
				// as None, which the rewritten set would not compile.
				return &staticError{"set " + strings.Join(names, ", ") + " = with no value"}
			}
			w.setUnpack(s, names, value)
			return nil
		}
		if w.hooks {
			code = setWithHook(content, eq)
		} else {
			// The target is a name, not an expression: n.0 stays an
			// attribute, as setWithHook leaves it.
			head, _ := setHead(content, eq)
			code = head + renameFilters(pyOps(content[eq+1:]))
		}
		w.tag(s, code)
		return nil
	case "else":
		if n := len(w.stack); n > 0 && w.stack[n-1].kind == "for" {
			w.stack[n-1].inElse = true
		}
	case "endmacro", "endcall":
		if n := len(w.stack); kw == "endmacro" && n > 0 && w.stack[n-1].callerCall != "" {
			// The engine would close the macro a call block became.
			return &staticError{"unknown tag 'endmacro': the innermost block that needs to be closed is 'call'"}
		}
		if w.hooks {
			w.out.WriteString("{{ " + hookLeave + "() }}")
		}
		if n := len(w.stack); kw == "endcall" && n > 0 && w.stack[n-1].callerCall != "" {
			// The call block became a macro (callAsMacro): it ends, and
			// the call prints what the call block printed. An expression
			// tag without markers does not move the trimming the tag's
			// markers and trim_blocks do.
			call := w.stack[n-1].callerCall
			w.pop()
			w.tag(s, " endmacro ")
			// Checked as a call by name in a tag is (macroCalls).
			w.out.WriteString("{{ " + w.printed(macroCalls(call, w.macros)) + " }}")
			return nil
		}
		if n := len(w.stack); kw == "endmacro" && n > 0 && w.stack[n-1].star != "" {
			// The rebinding set follows the endmacro: an empty text
			// between takes the endmacro's trimming, and the set, with
			// the endmacro's right marker, trims the text after as the
			// endmacro would have (it would strip one more newline
			// there, tagSeparator).
			star := w.stack[n-1].star
			w.pop()
			w.tag(s, code)
			w.out.WriteString(tagSeparator)
			w.tag(segment{kind: segStmt, trimRight: s.trimRight}, star)
			return nil
		}
		w.pop()
	case "endset":
		if n := len(w.stack); n > 0 && w.stack[n-1].setFilter != "" {
			b := w.stack[n-1]
			w.pop()
			return w.endSetFilter(s, code, b)
		}
		w.pop()
	case "endfor":
		return w.endFor(s, code)
	case "endif", "endfilter", "endgeneration":
		w.pop()
	case "raw":
		w.inRaw, w.rawTrimRight = true, s.trimRight
		w.raw.Reset()
		w.tag(segment{kind: segStmt, trimLeft: s.trimLeft}, " if true ")
		return nil
	}
	w.tag(s, code)
	return nil
}

// openBody writes the tag s of a block whose body is a region of its
// own (a for, a macro or a call block; code is its rewritten content)
// and the hook that starts the body.
func (w *rewriter) openBody(s segment, kw, content, code string) error {
	var callerCall string          // the call a call block with parameters prints at its end
	var deferred []deferredDefault // the defaults the body sets (deferDefaults)
	if kw == "call" {
		if rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(content), "call")); strings.HasPrefix(rest, "(") {
			if end := closeBracket(rest, 0); end > 0 {
				if err := emptyParameter(content, rest[1:end]); err != nil {
					return err
				}
			}
		}
		if macro, call, ok := callAsMacro(content, len(w.regions), w.stars[s.from]); ok {
			kw, content, code, callerCall = "macro", macro, renameFilters(macro), renameFilters(pyOps(call))
		}
	}
	if kw == "macro" {
		if err := macroSplatParameter(content); err != nil {
			return err
		}
		if open := strings.IndexByte(content, '('); open >= 0 && callerCall == "" {
			if end := closeParen(content, open); end > open {
				if err := emptyParameter(content, content[open+1:end]); err != nil {
					return err
				}
			}
		}
		var rewritten string
		if rewritten, deferred = deferDefaults(content); deferred != nil {
			code = renameFilters(rewritten)
		}
		if w.hooks {
			guarded, err := guardMacroDefaults(code)
			if err != nil {
				return err
			}
			code = guarded
		}
	}
	star := ""
	if use, ok := w.stars[s.from]; ok && kw == "macro" && callerCall == "" {
		if star = starRebind(content, use); star != "" {
			code = withStarParams(code)
		}
	}
	if kw == "for" {
		code = checkIterable(pairLoopFilter(code))
	}
	id := len(w.regions)
	w.regions = append(w.regions, region{steps: 1}) // an empty body still costs a step
	var elses []string
	if kw == "for" {
		elses = w.elses[s.from]
	}
	if err := w.push(block{kind: kw, region: id, callerCall: callerCall, star: star, elseSets: elses}); err != nil {
		return err
	}
	resets := w.resets[s.from]
	if saved := unionNames(resets, elses); kw == "for" && len(saved) > 0 {
		if err := w.saveOuter(s, id, saved); err != nil {
			return err
		}
	}
	w.tag(s, code)
	if w.hooks {
		// A {% call %} body counts as a macro level too: caller
		// can be passed to it and called again from within it.
		switch kw {
		case "macro", "call":
			fmt.Fprintf(&w.out, "{{ %s(%d) }}", hookEnter, id)
		case "for":
			// With the loop object, for the attributes the engine's
			// lacks (addLoopAttrs).
			fmt.Fprintf(&w.out, "{{ %s(%d, loop) }}", hookLoop, id)
		default:
			fmt.Fprintf(&w.out, "{{ %s(%d) }}", hookLoop, id)
		}
	}
	if kw == "for" && len(resets) > 0 {
		return w.setBack(s, id, resets)
	}
	return w.setDefaults(s, deferred)
}

// saveOuter writes, before the {% for %} tag s of region id, the sets
// that keep the value outside the loop of each name its body sets back
// (looplocals.go). The first set takes the trimming on the left of the
// for tag, which an empty text then keeps from the for tag itself.
func (w *rewriter) saveOuter(s segment, id int, names []string) error {
	for i, n := range names {
		if i > 0 {
			w.out.WriteString(tagSeparator)
		}
		if err := w.statement(segment{kind: segStmt, trimLeft: s.trimLeft && i == 0}, fmt.Sprintf(" set %s%d_%s = %s ", loopOuterPrefix, id, n, n)); err != nil {
			return err
		}
	}
	w.out.WriteString(tagSeparator)
	return nil
}

// setBack writes, at the start of the body of the {% for %} tag s, the
// sets that give each name its value outside the loop again, trimming
// the body's text as the for tag would have (setDefaults).
func (w *rewriter) setBack(s segment, id int, names []string) error {
	for _, n := range names {
		w.out.WriteString(tagSeparator)
		if err := w.statement(segment{kind: segStmt, trimRight: s.trimRight}, fmt.Sprintf(" set %s = %s%d_%s ", n, loopOuterPrefix, id, n)); err != nil {
			return err
		}
	}
	return nil
}

// endFor closes a for loop at its {% endfor %} tag s, and sets back what
// its {% else %} assigned (setBackAfter).
func (w *rewriter) endFor(s segment, code string) error {
	var b block
	if n := len(w.stack); n > 0 {
		b = w.stack[n-1]
	}
	w.pop()
	w.tag(s, code)
	return w.setBackAfter(s, b.region, b.elseSets)
}

// setBackAfter writes, after the {% endfor %} tag s of the loop of
// region id, the sets that give each name its else assigned the value
// saveOuter kept: an empty text before each takes the trimming of the
// tag before it, and each set, with the endfor's right marker, trims the
// text after as the endfor would have.
func (w *rewriter) setBackAfter(s segment, id int, names []string) error {
	for _, n := range names {
		w.out.WriteString(tagSeparator)
		if err := w.statement(segment{kind: segStmt, trimRight: s.trimRight}, fmt.Sprintf(" set %s = %s%d_%s ", n, loopOuterPrefix, id, n)); err != nil {
			return err
		}
	}
	return nil
}

// unionNames is the names of a and then those of b not in a.
func unionNames(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// setDefaults writes the sets that give a macro's parameters their
// deferred defaults, at the start of its body. An empty text before each
// takes the trimming of the tag before it, and each set, with the macro
// tag's right marker, trims the body's text as the macro tag would have
// (two tags would strip two newlines, tagSeparator).
func (w *rewriter) setDefaults(s segment, deferred []deferredDefault) error {
	for _, d := range deferred {
		w.out.WriteString(tagSeparator)
		if err := w.statement(segment{kind: segStmt, trimRight: s.trimRight}, d.setContent()); err != nil {
			return fmt.Errorf("the default value of %s: %w", d.name, err)
		}
	}
	return nil
}

// endRaw ends a raw block at its {% endraw %} tag s. The engine reads the
// tags inside a raw block as tags, trims the text around them (and the
// newline after {% raw %}) and drops their "-" markers, so the block
// becomes {% if true %}{{ 'content' }}{% endif %} instead: the two tags
// trim the text outside as {% raw %} and {% endraw %} do in jinja2, and
// the content is as jinja2 leaves it: stripped of its leading white space
// for {% raw -%}, of its trailing white space for {%- endraw %}, else of
// the spaces and tabs that begin the endraw's line (lstrip_blocks).
func (w *rewriter) endRaw(s segment) {
	content := w.raw.String()
	if w.rawTrimRight {
		content = strings.TrimLeft(content, " \t\n\r\f\v")
	}
	if s.trimLeft {
		content = strings.TrimRight(content, " \t\n\r\f\v")
	} else if nl := strings.LastIndexByte(content, '\n'); !s.keepLeft && nl >= 0 && strings.Trim(content[nl+1:], " \t") == "" {
		content = content[:nl+1]
	}
	w.out.WriteString(tagSeparator + "{{ " + quoteForEngine(content) + " }}" + tagSeparator)
	w.tag(segment{kind: segStmt, trimRight: s.trimRight}, " endif ")
	w.inRaw = false
}

// quoteForEngine is s as a string literal the engine reads back as s: it
// undoes only the escapes \\ and \' (and \n, \t, \"), so those two are
// all that need one; line breaks stay as they are, keeping the template's
// line numbers.
func quoteForEngine(s string) string {
	return "'" + strings.NewReplacer("\\", "\\\\", "'", "\\'").Replace(s) + "'"
}

func (w *rewriter) push(b block) error {
	if len(w.stack) >= maxNesting {
		return &staticError{fmt.Sprintf("blocks nested more than %d deep", maxNesting)}
	}
	w.stack = append(w.stack, b)
	return nil
}

func (w *rewriter) pop() {
	if n := len(w.stack); n > 0 {
		w.stack = w.stack[:n-1]
	}
}

// tag writes s with new content, keeping its delimiters and markers.
func (w *rewriter) tag(s segment, content string) {
	open, close := "{{", "}}"
	if s.kind == segStmt {
		open, close = "{%", "%}"
	}
	if kw := keyword(content); s.kind == segExpr || (kw != "macro" && kw != "call") {
		// A macro's parameters and a call block's call are the
		// engine's to parse (see opsStatements).
		content = macroCalls(content, w.macros)
	}
	w.out.WriteString(open)
	if s.trimLeft {
		w.out.WriteByte('-')
	}
	w.out.WriteString(content)
	if strings.HasSuffix(content, "-") || strings.HasSuffix(content, "+") {
		// The sign jinja2 read as an operator before a "+" marker
		// ({% if t -+%}): the engine would take a "-" for its own
		// marker and accept the tag jinja2 refuses.
		w.out.WriteByte(' ')
	}
	if s.trimRight {
		w.out.WriteByte('-')
	}
	w.out.WriteString(close)
}

// withoutKeepMarkers is src with the "+" markers of its block tags and
// comments ({%+, +%}, {#+, +#}) made spaces, for the engine's check of
// the text as written: it reads no such marker, and a "{%+" is a tag
// with no name to it, where its parser ends the template and checks
// nothing after. Offsets and lines stay as they are. src is returned as
// it is when scan refuses it, for the engine to report.
func withoutKeepMarkers(src string) string {
	segs, err := scan(src)
	if err != nil || !strings.Contains(src, "+") {
		return src
	}
	b := []byte(src)
	for _, s := range segs {
		if s.keepLeft {
			b[s.from-1] = ' '
		}
		if s.keepRight {
			b[s.to] = ' '
		}
	}
	return string(b)
}

// setWithHook wraps the value of an inline {% set target = value %}, whose
// assigning "=" is at eq (setAssign).
func setWithHook(content string, eq int) string {
	head, target := setHead(content, eq)
	extra := ""
	if ns, _, ok := strings.Cut(target, "."); ok && isIdent(ns) {
		extra = ", " + ns
	}
	return head + " " + hookSet + "(" + renameFilters(pyOps(content[eq+1:])) + extra + ") "
}

func isIdent(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

func isIdentByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// renameFilters points `| tojson`, `| trim` and the other filters
// renamedFilter names at ours (tojsonName, trimName, ...), and calls of
// the str methods in strMethodNames, `.split(`, at ours
// (`|__hone_str_split(`), outside string literals: the engine's differ
// from Python's. |map('name', ...) becomes our map with the filter named
// (mapByName), |map(attribute=...) ours that reads a dotted path
// (mapByAttribute).
func renameFilters(code string) string {
	code = indexAttrs(dictCallsAsLiterals(splatCalls(code)))
	if !strings.Contains(code, "tojson") && !strings.Contains(code, "trim") && !strings.Contains(code, "split") &&
		!strings.Contains(code, "strip") && !strings.Contains(code, "string") && !strings.Contains(code, "with") && !strings.Contains(code, "select") &&
		!strings.Contains(code, "reject") && !strings.Contains(code, "list") && !strings.Contains(code, "round") && !strings.Contains(code, "int") && !strings.Contains(code, "format") && !strings.Contains(code, "sort") && !strings.Contains(code, "map") && !strings.Contains(code, "join") &&
		!strings.Contains(code, "first") && !strings.Contains(code, "last") && !strings.Contains(code, "unique") &&
		!strings.Contains(code, "min") && !strings.Contains(code, "max") && !strings.Contains(code, "sum") &&
		!strings.Contains(code, "append") && !strings.Contains(code, "insert") && !strings.Contains(code, "items") && !strings.Contains(code, "keys") && !strings.Contains(code, "values") && !strings.Contains(code, "get") &&
		!strings.Contains(code, "update") && !strings.Contains(code, "pop") &&
		!strings.Contains(code, "find") && !strings.Contains(code, "index") && !strings.Contains(code, "count") &&
		!strings.Contains(code, "title") && !strings.Contains(code, "capitalize") && !strings.Contains(code, "center") &&
		!strings.Contains(code, "slice") && !strings.Contains(code, "attr") &&
		!slices.ContainsFunc(strExtraNames(), func(name string) bool { return strings.Contains(code, name) }) {
		return code
	}
	var b strings.Builder
	for i := 0; i < len(code); {
		c := code[i]
		if c == '\'' || c == '"' {
			i = copyString(&b, code, i)
			continue
		}
		if c == '|' {
			// past what the engine skips: l|\x1ftojson is its tojson too
			j := i + 1
			for j < len(code) && engineSkips(code[j]) {
				j++
			}
			k := j
			for k < len(code) && isIdentByte(code[k]) {
				k++
			}
			if ours := renamedFilter(code[j:k]); ours != "" {
				b.WriteString("|" + ours)
				i = k
				continue
			}
			if mapByAttribute(code, code[j:k], k) {
				b.WriteString("|" + mapAttrName)
				i = k
				continue
			}
			if end, call := mapByName(code, code[j:k], k); call != "" {
				b.WriteString("|" + mapName + call)
				i = end
				continue
			}
			if end, call := selectCall(code, code[j:k], k); call != "" {
				b.WriteString(call)
				i = end
				continue
			}
		}
		if c == '.' && i > 0 && (isIdentByte(code[i-1]) || strings.IndexByte(")]'\"", code[i-1]) >= 0) {
			k := i + 1
			for k < len(code) && isIdentByte(code[k]) {
				k++
			}
			j := k
			for j < len(code) && engineSkips(code[j]) {
				j++
			}
			if name := code[i+1 : k]; isStrMethod(name) && j < len(code) && code[j] == '(' {
				b.WriteString("|" + strMethodPrefix + name)
				i = k
				continue
			}
			if name := code[i+1 : k]; isStrMethod(name) && strings.HasPrefix(code[j:], "|"+splatName+"(") {
				// called with *args or **kwargs (strBoundPrefix)
				b.WriteString("|" + strBoundPrefix + name)
				i = k
				continue
			}
			if name := code[i+1 : k]; isDictMethod(name) && j < len(code) && code[j] == '(' {
				// called only (dictmethods.go)
				b.WriteString("|" + dictMethodPrefix + name)
				i = k
				continue
			}
			if name := code[i+1 : k]; isMutator(name) {
				// called or not (mutate.go)
				prefix := mutAttrPrefix
				if j < len(code) && code[j] == '(' {
					prefix = mutCallPrefix
				}
				b.WriteString("|" + prefix + name)
				i = k
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// renamedFilter is the variable our version of the engine's filter name is
// passed as, or "" where the engine's own is used.
func renamedFilter(name string) string {
	switch name {
	case "tojson":
		return tojsonName
	case "trim":
		return trimName
	case "string":
		return stringName
	case "list":
		return listName
	case "round":
		return roundName
	case "int":
		return intName
	case "format":
		return formatName
	case "dictsort":
		return dictsortName
	case "sort":
		return sortName
	case "join":
		return joinName
	case "first":
		return firstName
	case "last":
		return lastName
	case "unique":
		return uniqueName
	case "min":
		return minName
	case "max":
		return maxName
	case "sum":
		return sumName
	case "title":
		return titleName
	case "center":
		return centerName
	case "slice":
		return sliceName
	case "attr":
		return attrName
	}
	return ""
}

// skipString returns the index after the string literal starting at i,
// with the engine's tokenizer's rules (a backslash escapes the next byte;
// an unterminated string runs to the end).
func skipString(code string, i int) int {
	q := code[i]
	i++
	for i < len(code) && code[i] != q {
		if code[i] == '\\' && i+1 < len(code) {
			i++
		}
		i++
	}
	if i < len(code) {
		i++
	}
	return i
}

// copyString writes the string literal starting at i to b as it is, for
// the rewrites of a tag's code that change names and calls but never the
// text inside quotes, and returns the index after it.
func copyString(b *strings.Builder, code string, i int) int {
	j := skipString(code, i)
	b.WriteString(code[i:j])
	return j
}

// tagToken returns the span of the token of code at or after i, white
// space and the other bytes the engine skips skipped (engineSkips): a string literal, a number with the letters and dots
// that follow it (1e3, 0x10, 1.5), a name, `**` or `//`, or one other
// byte; start is len(code) when none is left. checkTag and
// checkEngineRepeat read a tag's code through it.
func tagToken(code string, i int) (start, end int) {
	for i < len(code) && engineSkips(code[i]) {
		i++
	}
	if i == len(code) {
		return i, i
	}
	c, j := code[i], i+1
	switch {
	case c == '\'' || c == '"':
		j = skipString(code, i)
	case c >= '0' && c <= '9':
		for j < len(code) && (isIdentByte(code[j]) || code[j] == '.') {
			j++
		}
	case isIdentByte(c):
		for j < len(code) && isIdentByte(code[j]) {
			j++
		}
	case (c == '*' || c == '/') && j < len(code) && code[j] == c:
		j++
	}
	return i, j
}

// checkTag counts the tokens of a tag's content and checks the static
// limits on it: its size and its bracket nesting.
func checkTag(code string) (int, error) {
	tokens, depth := 0, 0
	var last, beforeLast string // the last two tokens, for a dangling `is`
	for i := 0; ; {
		start, end := tagToken(code, i)
		if start == len(code) {
			break
		}
		switch code[start] {
		case '(', '[', '{':
			if depth++; depth > maxTagBrackets {
				return 0, &staticError{fmt.Sprintf("brackets nested more than %d deep in one tag", maxTagBrackets)}
			}
		case ')', ']', '}':
			depth--
		}
		beforeLast, last = last, code[start:end]
		if tokens++; tokens > maxTagTokens {
			return 0, &staticError{fmt.Sprintf("a tag of more than %d tokens", maxTagTokens)}
		}
		i = end
	}
	// The engine takes the token after `is` as the test's name, whatever
	// it is; at the end of a tag that is the closing parenthesis of a hook
	// (so the rewritten tag would not parse), and Jinja itself refuses it.
	if last == "is" || (last == "not" && beforeLast == "is") {
		return 0, &staticError{"the tag ends in `is` with no test name"}
	}
	return tokens, nil
}

// checkEngineRepeat refuses, in a tag as rewritten, `* N` with a literal N
// above maxRepeatLiteral where the rewrite left * to the engine: code
// pyOps does not follow, a macro's default value among it (the others
// are deferred to the body, deferDefaults).
// The engine repeats a string N times at once, before any limit can
// measure it. Everywhere else * is budget.mul, which checks the size of
// the repetition when it runs; a number literal before the * is let
// through here, since numbers multiply freely.
func checkEngineRepeat(code string) error {
	lastNumber, starAfterNumber, prevStar := false, false, false
	for i := 0; ; {
		start, end := tagToken(code, i)
		if start == len(code) {
			return nil
		}
		tok := code[start:end]
		star, number := tok == "*", tok[0] >= '0' && tok[0] <= '9'
		if number && prevStar && !starAfterNumber {
			if n, err := strconv.ParseInt(tok, 10, 64); err == nil && n > maxRepeatLiteral {
				return &staticError{fmt.Sprintf("`* %d` where the engine evaluates it itself (a macro's default value): repeating a string that many times would exhaust memory (limit %d)", n, maxRepeatLiteral)}
			}
		}
		if star {
			starAfterNumber = lastNumber
		}
		prevStar, lastNumber = star, number
		i = end
	}
}

// staticError is a template refused before it runs: it breaks a static
// limit, has a tag that the limits cannot be added to, or has what
// jinja2 refuses when it compiles a template and the engine does not
// (commas.go, names.go).
type staticError struct{ msg string }

func (e *staticError) Error() string { return e.msg }
