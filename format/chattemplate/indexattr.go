package chattemplate

import "strings"

// indexAttrs rewrites an attribute that is a number, x.0, as the item
// x[0], which is what jinja2's parser makes of it. The engine looked up an
// attribute named "0", found none, and took the value as undefined, so
// GLM-5.1's test of a tool result's content (m.content.0.type ==
// "tool_reference") was never true and the tools it names were left out.
func indexAttrs(code string) string {
	if !strings.Contains(code, ".") {
		return code
	}
	var b strings.Builder
	operand := false // the last token ends a value that .N can index
	for i := 0; i < len(code); {
		c := code[i]
		switch {
		case c == '\'' || c == '"':
			i, operand = copyString(&b, code, i), true
			continue
		case c >= '0' && c <= '9':
			j := i
			for j < len(code) && (isIdentByte(code[j]) || code[j] == '.') {
				j++
			}
			b.WriteString(code[i:j])
			i, operand = j, false
			continue
		case isIdentByte(c):
			j := i
			for j < len(code) && isIdentByte(code[j]) {
				j++
			}
			b.WriteString(code[i:j])
			i, operand = j, true
			continue
		case c == '.' && operand && i+1 < len(code) && code[i+1] >= '0' && code[i+1] <= '9':
			j := i + 1
			for j < len(code) && code[j] >= '0' && code[j] <= '9' {
				j++
			}
			// jinja2 reads no float right after a dot: x.0.1 is x[0][1].
			if j == len(code) || !isIdentByte(code[j]) {
				b.WriteString("[" + code[i+1:j] + "]")
				i, operand = j, true
				continue
			}
		}
		operand = c == ')' || c == ']' || c == '}'
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// indexAttrsInTags is src with indexAttrs applied to the code of every tag
// outside {% raw %} (a {% set %}'s value only: its target is a name), for
// the engine's syntax check of the template as written. The engine's
// lexer reads x.0.1 as x, ".", and the float 0.1, and refused it
// ("expected attribute name after '.'"), where jinja2 reads x[0][1]: the
// template was refused before its rewritten text, which the engine parses,
// was compiled.
func indexAttrsInTags(src string) string {
	segs, err := scan(src)
	if err != nil || (!strings.Contains(src, ".") && !strings.Contains(src, "*")) {
		return src // the engine reports the unclosed tag itself
	}
	var b strings.Builder
	inRaw := false
	for _, s := range segs {
		content := src[s.from:s.to]
		kw := ""
		if s.kind == segStmt {
			kw = keyword(content)
		}
		switch {
		case s.kind == segText || s.kind == segComment || (inRaw && kw != "endraw"):
			b.WriteString(src[s.start:s.end])
			continue
		case kw == "raw":
			inRaw = true
		case kw == "endraw":
			inRaw = false
		}
		code := indexAttrs(splatCalls(content))
		if eq := strings.IndexByte(content, '='); kw == "set" && eq >= 0 {
			code = content[:eq+1] + indexAttrs(splatCalls(content[eq+1:]))
		}
		b.WriteString(src[s.start:s.from] + code + src[s.to:s.end])
	}
	return b.String()
}
