package chattemplate

import "strings"

// pairLoopFilter rewrites the filter of a loop that unpacks two names,
// `for k, v in items if cond`, so that cond sees them. The engine tests
// each item against the filter with only the second name bound, to the
// whole item, so `key` in Mistral's `for key, val in tool.items() if key
// != "return"` was undefined, the filter kept every key, and the tool's
// "return" schema was printed into the prompt that jinja2 leaves it out
// of. In the filter, the first name becomes (v[0]) and the second (v[1]),
// the values the engine gives the body; code is the tag's content after
// renameFilters, returned unchanged when it is no such loop.
func pairLoopFilter(code string) string {
	lead := len(code) - len(strings.TrimLeft(code, " \t\n\r"))
	rest := code[lead:]
	if !strings.HasPrefix(rest, "for") {
		return code
	}
	body := rest[len("for"):]
	in := topKeyword(body, "in")
	if in < 0 {
		return code
	}
	vars := strings.Split(body[:in], ",")
	if len(vars) != 2 {
		return code
	}
	key, val := strings.TrimSpace(vars[0]), strings.TrimSpace(vars[1])
	if !isIdent(key) || !isIdent(val) || key == val {
		return code
	}
	iter := body[in+len("in"):]
	if topKeyword(iter, "recursive") >= 0 {
		return code
	}
	cond := topKeyword(iter, "if")
	if cond < 0 {
		return code
	}
	start := lead + len("for") + in + len("in") + cond + len("if")
	names := map[string]string{key: "(" + val + "[0])", val: "(" + val + "[1])"}
	return code[:start] + replaceNames(code[start:], names)
}

// topKeyword finds kw as a word outside strings and brackets, as the
// engine's parser splits a for tag (findKeyword in its parse.go).
func topKeyword(s, kw string) int {
	return scanCode(s, func(i, depth int) bool {
		return depth == 0 && strings.HasPrefix(s[i:], kw) &&
			(i == 0 || !isIdentByte(s[i-1])) && (i+len(kw) >= len(s) || !isIdentByte(s[i+len(kw)]))
	})
}

// replaceNames replaces the variables of expression code named in names:
// identifiers outside strings that are not an attribute (after "."), a
// filter or test name (after "|", "is" or "is not") or a keyword
// argument's name (before a single "=").
func replaceNames(code string, names map[string]string) string {
	var b strings.Builder
	prev := "" // the last identifier or punctuation seen, spaces skipped
	for i := 0; i < len(code); {
		c := code[i]
		switch {
		case c == '\'' || c == '"':
			i, prev = copyString(&b, code, i), "'"
			continue
		case isIdentByte(c) && (c < '0' || c > '9'):
			j := i
			for j < len(code) && isIdentByte(code[j]) {
				j++
			}
			word := code[i:j]
			after := strings.TrimLeft(code[j:], " \t\n\r")
			kwarg := strings.HasPrefix(after, "=") && !strings.HasPrefix(after, "==")
			if to, ok := names[word]; ok && prev != "." && prev != "|" && prev != "is" && prev != "is not" && !kwarg {
				word = to
			}
			b.WriteString(word)
			switch {
			case code[i:j] == "not" && prev == "is":
				prev = "is not"
			default:
				prev = code[i:j]
			}
			i = j
			continue
		case c >= '0' && c <= '9':
			j := i
			for j < len(code) && (isIdentByte(code[j]) || code[j] == '.') {
				j++
			}
			b.WriteString(code[i:j])
			i, prev = j, "0"
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			prev = string(c)
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}
