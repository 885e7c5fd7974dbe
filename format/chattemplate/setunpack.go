package chattemplate

import (
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// unpackName is the variable our unpacking callable is passed as, and
// unpackedName the one a {% set a, b = value %} keeps the items in.
const (
	unpackName   = "__hone_unpack"
	unpackedName = "__hone_unpacked"
)

// unpackTargets returns the names a {% set %} tag's content assigns when
// it unpacks (set a, b = value; set (a, ns.b) = value) and its value's
// code, or nil when it assigns one name. Only names and ns.attr are
// taken, as the engine's set takes them.
func unpackTargets(content string) ([]string, string) {
	eq := scanCode(content, func(i, depth int) bool { return depth == 0 && content[i] == '=' })
	if eq < 0 || eq+1 < len(content) && content[eq+1] == '=' {
		return nil, ""
	}
	target := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(content[:eq]), "set"))
	if strings.HasPrefix(target, "(") && strings.HasSuffix(target, ")") {
		target = target[1 : len(target)-1]
	}
	if !strings.Contains(target, ",") {
		return nil, ""
	}
	var names []string
	for i, part := range strings.Split(target, ",") {
		name := strings.TrimSpace(part)
		if name == "" && i > 0 && i == strings.Count(target, ",") {
			continue // a trailing comma
		}
		ns, attr, dotted := strings.Cut(name, ".")
		if !isIdent(ns) || (dotted && !isIdent(attr)) {
			return nil, ""
		}
		names = append(names, name)
	}
	return names, content[eq+1:]
}

// setUnpack writes {% set a, b = value %} as sets the engine reads: the
// value, checked to have as many items as names, into unpackedName, and
// each name its item. The engine refused a tuple value and ignored a
// tuple target. Between the tags goes a space the next expression tag
// trims away: the engine applies trim_blocks from every set tag to the
// next text, so without text between them each would strip a newline of
// the text after the last; s's own markers go on the first and last tag.
func (w *rewriter) setUnpack(s segment, names []string, value string) {
	value = renameFilters(pyOps(value))
	items := splitTopLevel(value)
	if w.syntax {
		w.syntaxItems(items)
		return
	}
	if len(items) > 1 {
		value = "[" + value + "]" // a tuple without parentheses
	}
	value = fmt.Sprintf("%s(%s, %d)", unpackName, value, len(names))
	if w.hooks {
		value = hookSet + "(" + value + ")"
	}
	first := s
	first.trimRight = false
	w.tag(first, " set "+unpackedName+" = "+value+" ")
	for i, name := range names {
		w.out.WriteString(" {{- '' }}")
		tag := segment{kind: segStmt}
		if i == len(names)-1 {
			tag.trimRight = s.trimRight
		}
		w.tag(tag, fmt.Sprintf(" set %s = %s[%d] ", name, unpackedName, i))
	}
}

// syntaxItems writes each item of a set's unpacked value (syntaxSource)
// as the value of a set of its own, which the engine parses as strictly
// as jinja2 does: in a list or a call it takes items without commas, and
// parentheses around an item would balance a stray one (set a, b = ) - ().
// No item (set a, b = 1,, 2) is jinja2's syntax error; the engine's set
// takes no value as None, so a lone comma, its error too, stands for it.
func (w *rewriter) syntaxItems(items []string) {
	if len(items) > 1 && strings.TrimSpace(items[len(items)-1]) == "" {
		items = items[:len(items)-1] // a trailing comma
	}
	for _, item := range items {
		if strings.TrimSpace(item) == "" {
			item = ","
		}
		w.tag(segment{kind: segStmt}, " set "+unpackedName+" = "+item+" ")
	}
}

// unpack is Python's unpacking of args[0] into args[1] names: the items
// list gives of it (a dict's keys, a string's characters), exactly as many
// as names, with Python's errors.
func unpack(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 || !args[1].IsInt() {
		return jinja.Undefined(), fmt.Errorf("set: unpacking takes a value and a count, got %d arguments", len(args))
	}
	v, want := args[0], args[1].AsInt()
	if !v.IsList() && !v.IsDict() && !v.IsString() {
		return jinja.Undefined(), fmt.Errorf("set: cannot unpack non-iterable %s object", pyTypeName(v))
	}
	items, err := listFilter(args[:1], nil)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("set: %w", err)
	}
	switch got := int64(items.AsList().Len()); {
	case got > want:
		return jinja.Undefined(), fmt.Errorf("set: too many values to unpack (expected %d)", want)
	case got < want:
		return jinja.Undefined(), fmt.Errorf("set: not enough values to unpack (expected %d, got %d)", want, got)
	}
	return items, nil
}

// setAssign returns the index in content, a set statement, of the "=" that
// assigns, or -1 for a block set ({% set x %} or {% set x | f %}), reading
// the target as jinja2's parser does: names, a tuple of them (in
// parentheses or not), or ns.attr, then "=", "|" or the end. An "=" in a
// string literal assigns nothing: {%set"="0%} is a string where the target
// should be, which jinja2 refuses ("can't assign to 'const'"), and so is a
// target that is no name (x['a'], x.y.z, nothing) and an "=" with no value.
func setAssign(content string) (int, error) {
	start := strings.Index(content, "set") + len("set")
	i := start
	for i < len(content) && (isIdentByte(content[i]) || content[i] >= 0x80 || strings.IndexByte(".,() \t\r\n", content[i]) >= 0) {
		i++
	}
	target := strings.TrimSpace(content[start:i])
	if !assignable(target) {
		return 0, &staticError{fmt.Sprintf("set: cannot assign to %q", strings.TrimSpace(content[start:]))}
	}
	if i == len(content) || content[i] == '|' {
		return -1, nil
	}
	if content[i] != '=' || strings.HasPrefix(content[i:], "==") {
		return 0, &staticError{fmt.Sprintf("set: cannot assign to %q", strings.TrimSpace(content[start:]))}
	}
	if strings.TrimSpace(content[i+1:]) == "" {
		return 0, &staticError{"set " + target + " = with no value"}
	}
	return i, nil
}

// assignable reports whether target (names, commas, dots and parentheses
// only) is one jinja2 assigns to: each item a name or ns.attr, with one
// trailing comma at most.
func assignable(target string) bool {
	items := strings.Split(strings.NewReplacer("(", "", ")", "").Replace(target), ",")
	for i, item := range items {
		item = strings.TrimSpace(item)
		if item == "" && i > 0 && i == len(items)-1 {
			continue
		}
		ns, attr, dotted := strings.Cut(item, ".")
		if !isName(ns) || (dotted && !isName(attr)) {
			return false
		}
	}
	return true
}

// isName is isIdent with the non-ASCII letters jinja2's names may hold.
func isName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) && s[i] < 0x80 {
			return false
		}
	}
	return true
}

// setHead is the statement up to its "=" at eq, with a single target in
// parentheses written without them: the engine's set takes (c) as no name
// and assigned nothing. The target is returned too.
func setHead(content string, eq int) (string, string) {
	start := strings.Index(content, "set") + len("set")
	target := strings.TrimSpace(content[start:eq])
	if !strings.Contains(target, ",") {
		target = strings.NewReplacer("(", "", ")", "").Replace(target)
	}
	return content[:start] + " " + target + " =", target
}

// blockSetFilter splits a block set statement, {% set x | f %}, into its
// target and its filters ("| f"); filter is empty when it has none. Each
// filter must be a name with its arguments in parentheses or none, as
// jinja2's parser reads them ({%set A|0=0%} is its syntax error).
func blockSetFilter(content string) (target, filter string, err error) {
	start := strings.Index(content, "set") + len("set")
	bar := scanCode(content, func(i, depth int) bool { return depth == 0 && content[i] == '|' })
	if bar < 0 {
		return strings.TrimSpace(content[start:]), "", nil
	}
	for rest := content[bar+1:]; ; {
		next := scanCode(rest, func(i, depth int) bool { return depth == 0 && rest[i] == '|' })
		one := rest
		if next >= 0 {
			one = rest[:next]
		}
		if !filterCall(strings.TrimSpace(one)) {
			return "", "", &staticError{fmt.Sprintf("set: %q is no filter", strings.TrimSpace(one))}
		}
		if next < 0 {
			break
		}
		rest = rest[next+1:]
	}
	return strings.TrimSpace(content[start:bar]), content[bar:], nil
}

// filterCall reports whether f is a filter as a block set names it: a
// name, dotted or not, with its arguments in parentheses or none.
func filterCall(f string) bool {
	i := 0
	for i < len(f) && (isIdentByte(f[i]) || f[i] == '.' || f[i] >= 0x80) {
		i++
	}
	for _, part := range strings.Split(f[:i], ".") {
		if !isName(part) {
			return false
		}
	}
	rest := strings.TrimSpace(f[i:])
	return rest == "" || (rest[0] == '(' && closeBracket(rest, 0) == len(rest)-1)
}

// endSetFilter writes the endset of a block set with filters, code, and
// after it the set that applies them, {% set x = x | f %}. The endset's
// right "-" or trim_blocks moves to that set, with tagSeparator between the
// two, so that it strips what follows once, as jinja2's endset does.
func (w *rewriter) endSetFilter(s segment, code string, b block) error {
	end := s
	end.trimRight = false
	w.tag(end, code)
	w.out.WriteString(tagSeparator)
	assign := " set " + b.setTarget + " = " + b.setTarget + " " + b.setFilter + " "
	eq, err := setAssign(assign)
	if err != nil {
		return err
	}
	if w.hooks {
		code = setWithHook(assign, eq)
	} else {
		head, _ := setHead(assign, eq)
		code = head + renameFilters(pyOps(assign[eq+1:]))
	}
	set := s
	set.kind = segStmt
	set.trimLeft = false
	w.tag(set, code)
	return nil
}
