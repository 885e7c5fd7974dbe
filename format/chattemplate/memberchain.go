package chattemplate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// memberName is the variable pyMember is passed as: pyOps rewrites an
// attribute or item read that another read follows (y.z.w, y[0].x) to
// __hone_member(y, 'z').z.w, checking the member before the engine reads
// it.
const memberName = "__hone_member"

// pyMember gives its first argument, the object, back when the engine's
// read of the member (its second argument, an attribute's name or an
// item's key) finds something, and jinja2's UndefinedError where jinja2's
// read gives an Undefined: jinja2 raises on an attribute or item of that
// Undefined, the read pyOps found after it, where the engine gave "" and
// went on. Python's methods of a dict, list, str or number count as found
// (d.items.x reads an attribute of the method, not an Undefined), and an
// object the engine left undefined, a macro or another callable is given
// back unchecked: what jinja2 says of them is not known here.
func pyMember(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), fmt.Errorf("member check: takes an object and a member, got %d arguments", len(args))
	}
	obj, key := args[0], args[1]
	if memberFound(obj, key) {
		return obj, nil
	}
	typ := objectTypeRepr(obj)
	if typ == "" {
		return obj, nil
	}
	var b strings.Builder
	writeRepr(&b, key)
	if key.IsString() {
		var t strings.Builder
		writeStrRepr(&t, typ)
		return jinja.Undefined(), fmt.Errorf("UndefinedError: %s has no attribute %s", t.String(), b.String())
	}
	return jinja.Undefined(), fmt.Errorf("UndefinedError: %s has no element %s", typ, b.String())
}

// memberFound reports whether the engine finds key in obj, as an item or
// a Python attribute, or whether obj is one pyMember does not check.
func memberFound(obj, key jinja.Value) bool {
	if key.IsString() && (strings.HasPrefix(key.AsString(), "_") || pyAttrs[pyTypeName(obj)][key.AsString()]) {
		return true // a sandboxed or Python attribute, not a missing member
	}
	switch {
	case obj.IsDict():
		_, ok := obj.AsDict().Get(engineKey(key))
		return ok
	case obj.IsList():
		return key.IsInt() && inRange(key.AsInt(), obj.AsList().Len())
	case obj.IsString():
		return key.IsInt() && inRange(key.AsInt(), len([]rune(obj.AsString())))
	}
	return objectTypeRepr(obj) == ""
}

// inRange reports whether Python's index i, counted from the end when
// negative, falls in a sequence of n.
func inRange(i int64, n int) bool {
	if i < 0 {
		i += int64(n)
	}
	return i >= 0 && i < int64(n)
}

// engineKey is the dict key the engine looks an item up by: it keeps a
// dict's keys as the text it prints them as (its printValue).
func engineKey(key jinja.Value) string {
	switch {
	case key.IsString():
		return key.AsString()
	case key.IsNone(), key.IsUndefined():
		return ""
	case key.IsInt():
		return strconv.FormatInt(key.AsInt(), 10)
	case key.IsFloat():
		return strconv.FormatFloat(key.AsFloat(), 'g', -1, 64)
	}
	return key.String()
}

// objectTypeRepr is what jinja2's messages call obj's type (its
// object_type_repr), "" for a value pyMember leaves unchecked.
func objectTypeRepr(obj jinja.Value) string {
	switch {
	case obj.IsNone():
		return "None"
	case obj.IsDict():
		return "dict object"
	case obj.IsList():
		return "list object"
	case obj.IsString():
		return "str object"
	case obj.IsBool():
		return "bool object"
	case obj.IsInt():
		return "int object"
	case obj.IsFloat():
		return "float object"
	}
	return ""
}

// pyAttrs are the attributes Python's types have, by pyTypeName: reading
// one gives a method or a number, never an Undefined.
var pyAttrs = map[string]map[string]bool{
	"dict": wordSet("clear copy fromkeys get items keys pop popitem setdefault update values"),
	"list": wordSet("append clear copy count extend index insert pop remove reverse sort"),
	"str": wordSet("capitalize casefold center count encode endswith expandtabs find format format_map index " +
		"isalnum isalpha isascii isdecimal isdigit isidentifier islower isnumeric isprintable isspace istitle isupper " +
		"join ljust lower lstrip maketrans partition removeprefix removesuffix replace rfind rindex rjust rpartition " +
		"rsplit rstrip split splitlines startswith strip swapcase title translate upper zfill"),
	"int":   wordSet(intAttrs),
	"bool":  wordSet(intAttrs),
	"float": wordSet("as_integer_ratio conjugate fromhex hex imag is_integer real"),
}

const intAttrs = "as_integer_ratio bit_count bit_length conjugate denominator from_bytes imag is_integer numerator real to_bytes"

func wordSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}
