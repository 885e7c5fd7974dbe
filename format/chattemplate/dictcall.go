package chattemplate

import (
	"strings"
	"unicode"

	"github.com/ardanlabs/jinja"
)

// dictCallsAsLiterals rewrites dict(a=x, b=y) as {'a': x, 'b': y}. The
// engine's dict builds its result from the keyword arguments' Go map, so
// the keys came out in a random order, a different one from rendering to
// rendering: a template that prints dict(id=…, name=…, arguments=…)|tojson
// (a Mistral v0.3 tool-calling template) wrote a tool call's keys in
// another order each time, where jinja2 (Python's dict) keeps the order
// they are written in. A call with a positional argument or ** is left
// alone.
func dictCallsAsLiterals(code string) string {
	if !strings.Contains(code, "dict") {
		return code
	}
	var b strings.Builder
	for i := 0; i < len(code); {
		c := code[i]
		if c == '\'' || c == '"' {
			i = copyString(&b, code, i)
			continue
		}
		if !isIdentByte(c) {
			b.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(code) && isIdentByte(code[j]) {
			j++
		}
		if code[i:j] == "dict" && !afterDot(code, i) {
			if end, lit, ok := dictLiteral(code, j); ok && parses(lit) {
				b.WriteString(lit)
				i = end
				continue
			}
		}
		b.WriteString(code[i:j])
		i = j
	}
	return b.String()
}

// afterDot reports whether the identifier at i is an attribute (x.dict).
func afterDot(code string, i int) bool {
	k := i - 1
	for k >= 0 && strings.IndexByte(" \t\n\r", code[k]) >= 0 {
		k--
	}
	return k >= 0 && code[k] == '.'
}

// dictLiteral reads the call's arguments from code[j:] (after the name)
// and gives where the call ends and its dict literal, if every argument is
// name=value.
func dictLiteral(code string, j int) (int, string, bool) {
	for j < len(code) && strings.IndexByte(" \t\n\r", code[j]) >= 0 {
		j++
	}
	if j >= len(code) || code[j] != '(' {
		return 0, "", false
	}
	end := closeBracket(code, j)
	if end < 0 {
		return 0, "", false
	}
	return dictFromArgs(splitTopLevel(code[j+1:end]), end+1)
}

func dictFromArgs(args []string, end int) (int, string, bool) {
	if len(args) == 1 && strings.TrimSpace(args[0]) == "" {
		return end, "{}", true
	}
	var b strings.Builder
	b.WriteByte('{')
	for n, a := range args {
		if strings.TrimSpace(a) == "" && n == len(args)-1 && n > 0 {
			break // a trailing comma
		}
		name, value, ok := strings.Cut(a, "=")
		name = strings.TrimSpace(name)
		if !ok || !isIdent(name) || strings.HasPrefix(value, "=") || strings.TrimSpace(value) == "" {
			return 0, "", false
		}
		if n > 0 {
			b.WriteString(", ")
		}
		value = strings.TrimRightFunc(dictCallsAsLiterals(value), unicode.IsSpace)
		b.WriteString("'" + name + "': " + value)
	}
	if strings.HasSuffix(b.String(), "}") {
		// A last value that is a dict would end the literal in "}}",
		// which the engine's scanner takes for the end of a {{ }} tag.
		b.WriteByte(' ')
	}
	b.WriteByte('}')
	return end, b.String(), true
}

// parses reports whether the engine parses expression e. The engine takes
// call arguments without commas between them (dict(a=() 0) passes 0 as a
// second, positional argument), which a literal cannot hold; such a call
// is left to the engine. e is tried in a {% %} tag: a value of a {% set %}
// may hold "}}" ({'k': {'j': 1}}), which would end a {{ }} tag there and
// fail the check, leaving the call to the engine's random key order.
func parses(e string) bool {
	_, err := jinja.Compile("{% if " + e + " %}{% endif %}")
	return err == nil
}
