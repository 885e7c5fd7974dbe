package constrain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// kind is the JSON type a schema node allows.
type kind uint8

const (
	kAny kind = iota
	kObject
	kArray
	kString
	kNumber
	kInteger
	kBool
	kNull
	kEnum
	kUnion  // one of alts, told apart by the value's first byte
	kTagged // one of cases, told apart by their literal prefixes (Tagged)
)

// Schema is the subset of JSON Schema the constraint enforces; see the
// package comment for the keywords. Compile refuses the keywords it would
// otherwise have to ignore while they change which documents are valid.
type Schema struct {
	kind    kind
	props   []prop  // object with properties, emitted in this order
	anyKeys bool    // object without properties: any keys
	values  *Schema // anyKeys object: every value's schema (additionalProperties); nil: any
	items   *Schema // array items; nil: any value
	enum    []string
	alts    []*Schema // kUnion
	cases   []Case    // kTagged, sorted by prefix
	tags    []string  // kTagged: the cases' prefixes, in the same order (a literal frame's candidates)
	sufs    []string  // kTagged: the cases' suffixes, in the same order

	minLength, maxLength int // string characters; maxLength < 0: no limit
	minItems, maxItems   int // maxItems < 0: no limit

	// Number range (number and integer). With a range, exponents are not
	// generated, so every prefix has an interval of reachable values. The
	// bounds are exact decimals, as JSON Schema compares them: in float64
	// 6.0000000000000003 is 6, and passed a maximum of 6.
	hasMin, hasMax   bool
	exclMin, exclMax bool
	min, max         *big.Rat
	minF, maxF       approxNum // min and max as float64s, for Mask's fast tests (feasibleFast)

	minLen int // bytes of the shortest valid document
}

type prop struct {
	key    string // `"name":` as emitted
	schema *Schema
}

// Object is the schema of response_format json_object: any JSON object.
func Object() *Schema {
	return &Schema{kind: kObject, anyKeys: true, maxLength: -1, maxItems: -1, minLen: 2}
}

// Case is one alternative of Tagged: Prefix, then a value of Value, then
// Suffix, each literal emitted as it is.
type Case struct {
	Prefix string
	Value  *Schema
	Suffix string
}

// Tagged is the schema of documents that read as one of cases: a tool
// call whose fixed opening {"name":"f","arguments": picks the schema of
// the arguments that follow (JSON Schema's anyOf over objects told apart
// by a const property, which Compile does not read). The prefixes tell
// the cases apart, so none may be a prefix of another; prefixes and
// suffixes must not be empty, and Value not nil.
func Tagged(cases []Case) (*Schema, error) {
	if len(cases) == 0 {
		return nil, fmt.Errorf("tagged schema: no cases")
	}
	cs := slices.Clone(cases)
	slices.SortFunc(cs, func(a, b Case) int { return strings.Compare(a.Prefix, b.Prefix) })
	s := &Schema{kind: kTagged, cases: cs, maxLength: -1, maxItems: -1, minLen: math.MaxInt}
	for i, c := range cs {
		if c.Prefix == "" || c.Suffix == "" || c.Value == nil {
			return nil, fmt.Errorf("tagged schema: case %q needs a prefix, a value schema and a suffix", c.Prefix)
		}
		if i > 0 && strings.HasPrefix(c.Prefix, cs[i-1].Prefix) {
			// Sorted, a prefix of another sorts right before the first it begins.
			return nil, fmt.Errorf("tagged schema: prefix %q begins %q, so the two cannot be told apart", cs[i-1].Prefix, c.Prefix)
		}
		s.tags, s.sufs = append(s.tags, c.Prefix), append(s.sufs, c.Suffix)
		s.minLen = min(s.minLen, len(c.Prefix)+c.Value.minLen+len(c.Suffix))
	}
	s.tags = slices.Clip(s.tags)
	return s, nil
}

// caseOf is the case whose prefix is tag (one of s.tags).
func (s *Schema) caseOf(tag string) int {
	i, _ := slices.BinarySearch(s.tags, tag)
	return i
}

// anyValue is what an unconstrained value is read with.
func anyValue() *Schema { return &Schema{kind: kAny, maxLength: -1, maxItems: -1, minLen: 1} }

// annotations are keywords that do not change which documents are valid
// (format is an annotation by default in JSON Schema 2020-12).
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$schema": true, "$id": true,
	"$comment": true, "$defs": true, "definitions": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"format": true, "strict": true,
}

// known are the keywords Compile enforces.
var known = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "nullable": true,
}

// typeList reads a "type" keyword: one type name or a list of them.
func typeList(t json.RawMessage, path string) ([]string, error) {
	var one string
	if err := json.Unmarshal(t, &one); err == nil {
		return []string{one}, nil
	}
	var types []string
	if err := json.Unmarshal(t, &types); err != nil || len(types) == 0 {
		return nil, fmt.Errorf("%s.type: want a type name or a non-empty list of them", path)
	}
	return types, nil
}

// typedEnum is the schema of the literals of a const or enum (key), less
// those a sibling "type" (with "nullable") rules out: JSON Schema applies
// both keywords, so {"type": "string", "enum": ["a", 1]} allows only "a".
// No literal left is an error.
func typedEnum(obj map[string]json.RawMessage, path, key string, lits []string) (*Schema, error) {
	t, ok := obj["type"]
	if !ok {
		return enumSchema(lits), nil
	}
	types, err := typeList(t, path)
	if err != nil {
		return nil, err
	}
	var nullable bool
	if n, ok := obj["nullable"]; ok && json.Unmarshal(n, &nullable) == nil && nullable {
		types = append(types, "null")
	}
	var kept []string
	for _, lit := range lits {
		if slices.ContainsFunc(types, func(typ string) bool { return literalIs(lit, typ) }) {
			kept = append(kept, lit)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%s.%s: no value is of the type %s", path, key, strings.Join(types, " or "))
	}
	return enumSchema(kept), nil
}

// literalIs reports whether the compact JSON literal lit is a value of the
// JSON Schema type typ (an integer is a number whose fraction is zero).
func literalIs(lit, typ string) bool {
	switch lit[0] {
	case '"':
		return typ == "string"
	case '{':
		return typ == "object"
	case '[':
		return typ == "array"
	case 't', 'f':
		return typ == "boolean"
	case 'n':
		return typ == "null"
	}
	if typ == "number" {
		return true
	}
	f, err := strconv.ParseFloat(lit, 64)
	return typ == "integer" && err == nil && f == math.Trunc(f)
}

// Compile reads a JSON Schema document. Keywords outside the supported
// subset are an error naming the keyword and where it sits, so a server
// can answer 400 instead of producing documents the schema refuses.
func Compile(raw json.RawMessage) (*Schema, error) {
	return compile(raw, "schema", 0)
}

func compile(raw json.RawMessage, path string, depth int) (*Schema, error) {
	if depth > 32 {
		return nil, fmt.Errorf("%s: nested too deeply", path)
	}
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("true")) || bytes.Equal(raw, []byte("{}")) || len(raw) == 0 {
		return anyValue(), nil
	}
	if bytes.Equal(raw, []byte("false")) {
		// JSON Schema's false admits no value: nothing could be written.
		return nil, fmt.Errorf("%s: the schema false admits no value, so no output could match it", path)
	}
	_, obj, err := orderedObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var keys []string
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] && !annotations[k] {
			return nil, fmt.Errorf("%s: keyword %q is not supported by constrained decoding (supported: %s)", path, k, supportedList())
		}
	}
	_, hasConst := obj["const"]
	_, hasEnum := obj["enum"]
	if hasConst || hasEnum {
		if err := literalSiblings(keys, path); err != nil {
			return nil, err
		}
	}
	if c, ok := obj["const"]; ok {
		lit, err := compact(c)
		if err != nil {
			return nil, fmt.Errorf("%s.const: %w", path, err)
		}
		return typedEnum(obj, path, "const", []string{lit})
	}
	if e, ok := obj["enum"]; ok {
		var vals []json.RawMessage
		if err := json.Unmarshal(e, &vals); err != nil || len(vals) == 0 {
			return nil, fmt.Errorf("%s.enum: want a non-empty array", path)
		}
		var lits []string
		for _, v := range vals {
			lit, err := compact(v)
			if err != nil {
				return nil, fmt.Errorf("%s.enum: %w", path, err)
			}
			lits = append(lits, lit)
		}
		return typedEnum(obj, path, "enum", lits)
	}
	var types []string
	if t, ok := obj["type"]; ok {
		if types, err = typeList(t, path); err != nil {
			return nil, err
		}
	} else if _, ok := obj["properties"]; ok {
		types = []string{"object"}
	} else if _, ok := obj["items"]; ok {
		types = []string{"array"}
	} else {
		if len(keys) > 0 && !onlyAnnotations(keys) {
			return nil, fmt.Errorf("%s: give a \"type\" with %s", path, strings.Join(keys, ", "))
		}
		return anyValue(), nil
	}
	var nullable bool
	if n, ok := obj["nullable"]; ok {
		if err := json.Unmarshal(n, &nullable); err != nil {
			return nil, fmt.Errorf("%s.nullable: want true or false", path)
		}
	}
	if nullable && !slices.Contains(types, "null") {
		types = append(types, "null")
	}
	// integer and number both start with a digit: number covers both.
	if slices.Contains(types, "number") {
		types = slices.DeleteFunc(types, func(t string) bool { return t == "integer" })
	}
	var alts []*Schema
	seen := map[string]bool{}
	for _, typ := range types {
		if seen[typ] {
			return nil, fmt.Errorf("%s.type: %q listed twice", path, typ)
		}
		seen[typ] = true
		s, err := compileType(obj, typ, path, depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, s)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	u := &Schema{kind: kUnion, alts: alts, maxLength: -1, maxItems: -1, minLen: math.MaxInt}
	for _, a := range alts {
		u.minLen = min(u.minLen, a.minLen)
	}
	return u, nil
}

// literalSiblings refuses the keywords beside const or enum that the
// literals would be emitted without: JSON Schema applies every keyword,
// so {"enum": ["a", "abcd"], "minLength": 3} allows only "abcd", and
// {"const": "a", "enum": ["b"]} allows nothing. Only type (with nullable),
// which typedEnum applies, may stand beside them.
func literalSiblings(keys []string, path string) error {
	lit := "enum"
	if slices.Contains(keys, "const") {
		lit = "const"
	}
	for _, k := range keys {
		if known[k] && k != lit && k != "type" && k != "nullable" {
			return fmt.Errorf("%s: keyword %q beside %q is not supported by constrained decoding (only type and nullable may stand beside const or enum)", path, k, lit)
		}
	}
	return nil
}

func onlyAnnotations(keys []string) bool {
	for _, k := range keys {
		if !annotations[k] {
			return false
		}
	}
	return true
}

func supportedList() string {
	var ks []string
	for k := range known {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

func enumSchema(lits []string) *Schema {
	// Sorted, so that the literals still possible after a prefix form one
	// run (the recogniser narrows a sub-slice and never allocates).
	slices.Sort(lits)
	lits = slices.Compact(lits)
	s := &Schema{kind: kEnum, enum: lits, maxLength: -1, maxItems: -1, minLen: math.MaxInt}
	for _, l := range lits {
		s.minLen = min(s.minLen, len(l))
	}
	return s
}

// intField reads a non-negative integer keyword; def when absent.
func intField(obj map[string]json.RawMessage, key, path string, def int) (int, error) {
	raw, ok := obj[key]
	if !ok {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f < 0 || f != math.Trunc(f) || f > 1<<20 {
		return 0, fmt.Errorf("%s.%s: want a non-negative integer up to %d", path, key, 1<<20)
	}
	return int(f), nil
}

// compileType compiles obj read as the one type typ.
func compileType(obj map[string]json.RawMessage, typ, path string, depth int) (*Schema, error) {
	s := &Schema{maxLength: -1, maxItems: -1}
	var err error
	switch typ {
	case "object":
		s.kind = kObject
		err = compileObject(s, obj, path, depth)
	case "array":
		s.kind = kArray
		err = compileArray(s, obj, path, depth)
	case "string":
		s.kind = kString
		err = compileString(s, obj, path)
	case "number", "integer":
		s.kind = kNumber
		if typ == "integer" {
			s.kind = kInteger
		}
		err = compileNumber(s, obj, typ, path)
	case "boolean":
		s.kind, s.enum, s.minLen = kBool, []string{"true", "false"}, 4
	case "null":
		s.kind, s.enum, s.minLen = kNull, []string{"null"}, 4
	default:
		return nil, fmt.Errorf("%s.type: %q is not a JSON Schema type", path, typ)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// compileObject fills s from an object schema: its properties, in order,
// or with none, any keys (whose values follow additionalProperties).
func compileObject(s *Schema, obj map[string]json.RawMessage, path string, depth int) error {
	var required []string
	if r, ok := obj["required"]; ok {
		if err := json.Unmarshal(r, &required); err != nil {
			return fmt.Errorf("%s.required: want a list of property names", path)
		}
	}
	var addl json.RawMessage
	if a, ok := obj["additionalProperties"]; ok {
		addl = bytes.TrimSpace(a)
	}
	p, ok := obj["properties"]
	if !ok {
		if len(required) > 0 {
			return fmt.Errorf("%s.required: required keys need \"properties\" that declare them", path)
		}
		if bytes.Equal(addl, []byte("false")) {
			s.minLen = 2 // only {}
			return nil
		}
		s.anyKeys = true
		if len(addl) > 0 && !bytes.Equal(addl, []byte("true")) {
			v, err := compile(addl, path+".additionalProperties", depth+1)
			if err != nil {
				return err
			}
			s.values = v
		}
		s.minLen = 2
		return nil
	}
	names, props, err := orderedObject(p)
	if err != nil {
		return fmt.Errorf("%s.properties: %w", path, err)
	}
	for _, r := range required {
		if _, ok := props[r]; !ok {
			return fmt.Errorf("%s.required: %q is not among the properties", path, r)
		}
	}
	// Every property is emitted, in the schema's order: that satisfies
	// required whatever it lists, and additionalProperties whatever it is.
	s.minLen = 2 + max(len(names)-1, 0)
	for _, n := range names {
		sub, err := compile(props[n], path+".properties."+n, depth+1)
		if err != nil {
			return err
		}
		key, _ := json.Marshal(n)
		s.props = append(s.props, prop{key: string(key) + ":", schema: sub})
		s.minLen += len(key) + 1 + sub.minLen
	}
	return nil
}

// compileArray fills s from an array schema: items and their count.
func compileArray(s *Schema, obj map[string]json.RawMessage, path string, depth int) error {
	s.items = anyValue()
	if it, ok := obj["items"]; ok {
		sub, err := compile(it, path+".items", depth+1)
		if err != nil {
			return err
		}
		s.items = sub
	}
	var err error
	if s.minItems, err = intField(obj, "minItems", path, 0); err != nil {
		return err
	}
	if s.maxItems, err = intField(obj, "maxItems", path, -1); err != nil {
		return err
	}
	if s.maxItems >= 0 && s.maxItems < s.minItems {
		return fmt.Errorf("%s: maxItems %d is below minItems %d", path, s.maxItems, s.minItems)
	}
	s.minLen = 2
	if s.minItems > 0 {
		s.minLen += s.minItems*s.items.minLen + s.minItems - 1
	}
	return nil
}

// compileString fills s from a string schema: its length bounds.
func compileString(s *Schema, obj map[string]json.RawMessage, path string) error {
	var err error
	if s.minLength, err = intField(obj, "minLength", path, 0); err != nil {
		return err
	}
	if s.maxLength, err = intField(obj, "maxLength", path, -1); err != nil {
		return err
	}
	if s.maxLength >= 0 && s.maxLength < s.minLength {
		return fmt.Errorf("%s: maxLength %d is below minLength %d", path, s.maxLength, s.minLength)
	}
	s.minLen = 2 + s.minLength
	return nil
}

// compileNumber fills s (kind kNumber or kInteger, for typ) from a number
// or integer schema: its range, closed for integers.
func compileNumber(s *Schema, obj map[string]json.RawMessage, typ, path string) error {
	if err := readRange(s, obj, path); err != nil {
		return err
	}
	if s.kind == kInteger {
		// Integer bounds, closed: the recogniser's intervals are exact for them.
		if s.hasMin {
			m := ratFloor(new(big.Rat).Neg(s.min)) // ceil(min) = -floor(-min)
			m.Neg(m)
			if s.exclMin && m.Cmp(s.min) == 0 {
				m.Add(m, big.NewRat(1, 1))
			}
			s.min, s.exclMin = m, false
		}
		if s.hasMax {
			m := ratFloor(s.max)
			if s.exclMax && m.Cmp(s.max) == 0 {
				m.Sub(m, big.NewRat(1, 1))
			}
			s.max, s.exclMax = m, false
		}
	}
	if s.hasMin {
		s.minF.f, s.minF.exact = s.min.Float64()
	}
	if s.hasMax {
		s.maxF.f, s.maxF.exact = s.max.Float64()
	}
	n := minNumberBytes(s, nil)
	if n < 0 {
		return fmt.Errorf("%s: no %s of at most %d characters lies within minimum/maximum", path, typ, maxNumberBytes)
	}
	s.minLen = n
	return nil
}

// readRange reads minimum/maximum and their exclusive forms (numbers in
// draft 6+, booleans modifying minimum/maximum in draft 4).
func readRange(s *Schema, obj map[string]json.RawMessage, path string) error {
	num := func(key string) (*big.Rat, bool, error) {
		raw, ok := obj[key]
		if !ok {
			return nil, false, nil
		}
		var n json.Number
		// json.Number also takes a quoted number ("5"), which a schema's
		// bound may not be: only a bare number token is one.
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
			return nil, false, fmt.Errorf("%s.%s: want a number, got a string", path, key)
		}
		if err := json.Unmarshal(raw, &n); err != nil {
			var b bool
			if json.Unmarshal(raw, &b) == nil && strings.HasPrefix(key, "exclusive") {
				return nil, b, errBoolExclusive
			}
			return nil, false, fmt.Errorf("%s.%s: want a number", path, key)
		}
		r, err := boundRat(string(n))
		if err != nil {
			return nil, false, fmt.Errorf("%s.%s: %w", path, key, err)
		}
		return r, true, nil
	}
	var err error
	if s.min, s.hasMin, err = num("minimum"); err != nil {
		return err
	}
	if s.max, s.hasMax, err = num("maximum"); err != nil {
		return err
	}
	if v, ok, err := num("exclusiveMinimum"); err == errBoolExclusive {
		s.exclMin = ok && s.hasMin
	} else if err != nil {
		return err
	} else if ok && (!s.hasMin || v.Cmp(s.min) >= 0) {
		s.min, s.hasMin, s.exclMin = v, true, true
	}
	if v, ok, err := num("exclusiveMaximum"); err == errBoolExclusive {
		s.exclMax = ok && s.hasMax
	} else if err != nil {
		return err
	} else if ok && (!s.hasMax || v.Cmp(s.max) <= 0) {
		s.max, s.hasMax, s.exclMax = v, true, true
	}
	return nil
}

var errBoolExclusive = fmt.Errorf("boolean exclusive bound")

// boundLimit is a magnitude no number the recogniser writes reaches (24
// bytes, no exponent: below 1e24, and 0 or at least 1e-22 in size).
const boundLimit = 1e30

// boundRat reads a bound's JSON number text exactly, as far as the
// numbers the recogniser writes can tell (onGrid). A bound beyond
// ±1e30, or nearer 0 than ±1e-30 (not 0), is taken as that limit, which
// admits the same numbers the recogniser writes: so a bound such as 1e999999
// costs no million-digit arithmetic on every byte.
func boundRat(text string) (*big.Rat, error) {
	f, _ := strconv.ParseFloat(text, 64) // ±Inf past float64's range
	mant, _, _ := strings.Cut(strings.ToLower(text), "e")
	nonzero := strings.ContainsAny(mant, "123456789")
	limit := ""
	switch {
	case math.Abs(f) >= boundLimit:
		limit = "1e30"
	case nonzero && math.Abs(f) < 1/boundLimit:
		limit = "1e-30" // f may have underflowed to 0: the sign is the text's
	}
	if limit != "" {
		r, _ := new(big.Rat).SetString(limit)
		if strings.HasPrefix(text, "-") {
			r.Neg(r)
		}
		return r, nil
	}
	return onGrid(text)
}

// gridPlaces is the finest decimal place of a number the recogniser
// writes: "0." and 22 digits fill its 24 bytes.
const gridPlaces = maxNumberBytes - 2

// onGrid reads the JSON number text (within ±1e30) exactly down to the
// place 10^-gridPlaces; digits below it, unless all 0, become one 5 just
// below it: a value strictly between the same two numbers the recogniser
// can write, so each compares with it as with the text (never equal, so
// exclusive or not alike). A bound of a million digits so costs no
// million-digit arithmetic: Rat.SetString took 5 seconds on one and then
// refused it, with the whole text in the error; at 8 MB, minutes.
func onGrid(text string) (*big.Rat, error) {
	neg := strings.HasPrefix(text, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(strings.TrimPrefix(text, "-")), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	lead := len(digits) - len(strings.TrimLeft(digits, "0"))
	if lead == len(digits) {
		return new(big.Rat), nil // 0, whatever its exponent
	}
	e := 0
	if hasExp {
		var err error
		if e, err = strconv.Atoi(exp); err != nil {
			return nil, fmt.Errorf("want a number, got an exponent of %d digits", len(exp))
		}
	}
	// The value is 0.digits × 10^point, its first digit not 0; within
	// ±1e30, point is at most 31, so at most 53 digits are kept.
	digits, point := digits[lead:], len(intPart)+e-lead
	keep := min(len(digits), max(point+gridPlaces, 0))
	num := new(big.Int)
	if keep > 0 {
		num.SetString(digits[:keep], 10) // digits only: cannot fail
	}
	r := new(big.Rat).SetInt(num)
	if shift := point - keep; shift >= 0 {
		r.Mul(r, pow10(shift))
	} else {
		r.Quo(r, pow10(-shift))
	}
	if strings.Trim(digits[keep:], "0") != "" {
		r.Add(r, new(big.Rat).Quo(big.NewRat(5, 1), pow10(gridPlaces+1)))
	}
	if neg {
		r.Neg(r)
	}
	return r, nil
}

// ratFloor is the greatest integer not above r (a new Rat).
func ratFloor(r *big.Rat) *big.Rat {
	// big.Int's Div rounds toward −∞ for a positive divisor, and a Rat's
	// denominator is positive.
	q := new(big.Int).Div(r.Num(), r.Denom())
	return new(big.Rat).SetInt(q)
}

func compact(v json.RawMessage) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// orderedObject decodes a JSON object keeping its key order.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("want a JSON object")
	}
	var keys []string
	m := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, ok := t.(string)
		if !ok {
			return nil, nil, fmt.Errorf("bad key")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("key %q: %w", k, err)
		}
		if _, dup := m[k]; !dup {
			keys = append(keys, k)
		}
		m[k] = v
	}
	return keys, m, nil
}
