package chattemplate

// scanCode walks a tag's code outside its string literals (skipString's
// rules) and calls at with each byte's index and bracket depth, the depth
// outside the byte when it is a bracket: an opening bracket at the top
// level and the one that closes it are both at depth 0. It stops at the
// first index at returns true for and returns it; -1 when there is none.
// The rewrites that need the top-level commas, keywords or closers of some
// code share it.
func scanCode(code string, at func(i, depth int) bool) int {
	depth := 0
	for i := 0; i < len(code); {
		c := code[i]
		if c == '\'' || c == '"' {
			i = skipString(code, i)
			continue
		}
		if c == ')' || c == ']' || c == '}' {
			depth--
		}
		if at(i, depth) {
			return i
		}
		if c == '(' || c == '[' || c == '{' {
			depth++
		}
		i++
	}
	return -1
}

// closeBracket returns the index of the bracket, of any kind, that closes
// the one at open, skipping strings and nested brackets; -1 when there is
// none.
func closeBracket(code string, open int) int {
	end := scanCode(code[open:], func(i, depth int) bool {
		c := code[open+i]
		return depth == 0 && (c == ')' || c == ']' || c == '}')
	})
	if end < 0 {
		return -1
	}
	return open + end
}

// splitTopLevel splits a call's argument text at the commas outside
// strings and brackets.
func splitTopLevel(s string) []string {
	var parts []string
	from := 0
	scanCode(s, func(i, depth int) bool {
		if depth == 0 && s[i] == ',' {
			parts = append(parts, s[from:i])
			from = i + 1
		}
		return false
	})
	return append(parts, s[from:])
}
