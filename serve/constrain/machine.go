package constrain

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// The recogniser is a pushdown automaton over bytes: a stack of frames, one
// per JSON value being read. It accepts compact JSON only (no whitespace),
// which every JSON parser reads, and which keeps a sampling model from
// padding with blanks forever. Next to each state it knows the fewest bytes
// that complete the document (minBytes), which is what lets the constraint
// close a document before max_tokens runs out.

type frameKind uint8

const (
	fValue   frameKind = iota // a value of schema s starts with the next byte
	fObject                   // inside {…}
	fArray                    // inside […]
	fString                   // inside "…"
	fNumber                   // a number
	fLiteral                  // one of several literal texts (enum, true, keys)
	fTagged                   // a Tagged document: a case's prefix, its value, its suffix
)

// Object, array, string and number states.
const (
	oOpen = iota
	oAfterOpen
	oAfterKey
	oAfterColon
	oAfterValue
	oNeedKey
	oSchemaValue // a property's key literal is done; its value follows
	oSchemaAfter // a property's value is done
)

// Tagged states: the frame matches the literals itself (cands, i), so
// that it knows which prefix was read; n is then the case.
const (
	tPrefix = iota
	tValue
	tSuffix
)

const (
	aOpen = iota
	aAfterOpen
	aAfterValue
	aNeedValue
)

const (
	sOpen = iota
	sIn
	sEsc
	sHex     // the 4 hex digits of a \u escape (f.i read; f.hex: the first two's value)
	sPairEsc // after a high surrogate's escape: the backslash of its low half
	sPairU   // its u
	sLowHex  // the low half's 4 hex digits (f.i read)
)

const (
	nStart = iota
	nSign
	nZero
	nInt
	nFracStart
	nFrac
	nExpStart
	nExpSign
	nExp
)

// maxNumberBytes caps a number's length: a sampling model could otherwise
// append digits until max_tokens.
const maxNumberBytes = 24

type frame struct {
	kind  frameKind
	st    uint8
	s     *Schema
	i     int      // property index, literal position, number bytes; fString: UTF-8 continuation bytes due, or hex digits read
	n     int      // fString: characters between the quotes; fArray: items started
	cands []string // fLiteral: texts still possible, sorted (a sub-slice; never written)
	lead  byte     // fString: the lead byte of the UTF-8 character being read, until its second byte
	hex   byte     // fString in sHex: the value of the escape's first two hex digits (0xD8–0xDB: a high surrogate)
	num   [maxNumberBytes]byte
}

type result uint8

const (
	reject    result = iota
	accept           // byte consumed, frame stays
	acceptPop        // byte consumed, frame complete
	pass             // frame complete before this byte; give it to the parent
)

// maxDepth is how many objects and arrays a document may nest. Mask copies
// the stack for every byte and token it tries, so each token cost time in
// proportion to the depth: a model writing [[[[… under json_object took a
// Mask from 1.4 ms to 190 ms at depth 16000 (Qwen3's vocabulary), and a
// long answer's decoding grew with the square of its length, every other
// sequence in the batch waiting on it. Compiled schemas nest at most 33
// deep, so only unconstrained values (json_object, {} and the like) meet
// it. Go's encoding/json decoder stops at 10000 levels; a tool call's
// arguments nested 128 deep are already far past any real one.
const maxDepth = 128

// machine is the parser state; copy is cheap (the stack is small).
type machine struct {
	stack []frame
	done  bool // the top-level value is complete
	open  int  // objects and arrays on the stack (at most maxDepth)
}

func newMachine(s *Schema) machine {
	return machine{stack: []frame{{kind: fValue, s: s}}}
}

func (m *machine) clone() machine {
	return machine{stack: append(make([]frame, 0, len(m.stack)+4), m.stack...), done: m.done, open: m.open}
}

// copyInto makes dst equal to m, reusing dst's stack.
func (m *machine) copyInto(dst *machine) {
	dst.stack = append(dst.stack[:0], m.stack...)
	dst.done, dst.open = m.done, m.open
}

// complete reports whether the bytes so far form a whole document.
func (m *machine) complete() bool {
	if m.done {
		return true
	}
	// A top-level number or literal that may end here.
	return len(m.stack) == 1 && canEnd(&m.stack[0])
}

func canEnd(f *frame) bool {
	switch f.kind {
	case fNumber:
		return numberCanEnd(f)
	case fLiteral:
		for _, c := range f.cands {
			if len(c) == f.i {
				return true
			}
		}
	}
	return false
}

// feed advances by one byte; false means b cannot come next (and m may be
// left part-way: callers feed a copy when they need to recover).
func (m *machine) feed(b byte) bool {
	for {
		if len(m.stack) == 0 {
			return false
		}
		top := &m.stack[len(m.stack)-1]
		switch r := m.step(top, b); r {
		case reject:
			return false
		case accept:
			return true
		case acceptPop:
			m.pop()
			return true
		case pass:
			m.pop()
			if len(m.stack) == 0 {
				return false // nothing may follow the document
			}
		}
	}
}

func (m *machine) pop() {
	if k := m.stack[len(m.stack)-1].kind; k == fObject || k == fArray {
		m.open--
	}
	m.stack = m.stack[:len(m.stack)-1]
	if len(m.stack) == 0 {
		m.done = true
	}
}

func (m *machine) push(f frame) { m.stack = append(m.stack, f) }

// step runs frame f on byte b. It may push frames (then the byte is fed to
// the new top by returning the result of that frame's step).
func (m *machine) step(f *frame, b byte) result {
	switch f.kind {
	case fValue:
		nf, ok := startValue(f.s, b)
		if !ok {
			return reject
		}
		if nf.kind == fObject || nf.kind == fArray {
			if m.open >= maxDepth {
				return reject
			}
			m.open++
		}
		*f = nf
		return m.step(f, b)
	case fObject:
		return m.stepObject(f, b)
	case fArray:
		return m.stepArray(f, b)
	case fString:
		return stepString(f, b)
	case fNumber:
		return stepNumber(f, b)
	case fLiteral:
		if !narrow(f, b) {
			if canEnd(f) {
				return pass
			}
			return reject
		}
		for _, c := range f.cands {
			if len(c) > f.i {
				return accept
			}
		}
		return acceptPop
	case fTagged:
		return m.stepTagged(f, b)
	}
	return reject
}

// narrow keeps the candidates of f (a literal or tagged frame) that have b
// next, or reports false, leaving f as it was, when none has. cands are
// sorted and share their first i bytes, so those with b next form one run.
func narrow(f *frame, b byte) bool {
	lo, hi := -1, -1
	for k, c := range f.cands {
		if len(c) > f.i && c[f.i] == b {
			if lo < 0 {
				lo = k
			}
			hi = k + 1
		}
	}
	if lo < 0 {
		return false
	}
	f.cands = f.cands[lo:hi]
	f.i++
	return true
}

// stepTagged reads a Tagged document: once a whole prefix is read (no
// prefix begins another, so one candidate is left), its case's value
// follows, then its suffix.
func (m *machine) stepTagged(f *frame, b byte) result {
	s := f.s
	switch f.st {
	case tPrefix:
		if !narrow(f, b) {
			return reject
		}
		if len(f.cands[0]) == f.i {
			f.st, f.n = tValue, s.caseOf(f.cands[0])
		}
		return accept
	case tValue:
		f.st, f.cands, f.i = tSuffix, s.sufs[f.n:f.n+1], 0
		return m.pushAndStep(frame{kind: fValue, s: s.cases[f.n].Value}, b)
	case tSuffix:
		if !narrow(f, b) {
			return reject
		}
		if len(f.cands[0]) == f.i {
			return acceptPop
		}
		return accept
	}
	return reject
}

// pushAndStep pushes nf and feeds it b. The parent pointer may move when
// the stack grows, so the caller must not use it afterwards.
func (m *machine) pushAndStep(nf frame, b byte) result {
	m.push(nf)
	top := &m.stack[len(m.stack)-1]
	r := m.step(top, b)
	switch r {
	case acceptPop:
		m.pop()
		return accept
	case pass, reject:
		m.pop()
		return reject
	}
	return r
}

func (m *machine) stepArray(f *frame, b byte) result {
	s := f.s
	minItems, maxItems := 0, -1
	var items *Schema
	if s != nil {
		minItems, maxItems, items = s.minItems, s.maxItems, s.items
	}
	switch f.st {
	case aOpen:
		if b == '[' {
			f.st = aAfterOpen
			return accept
		}
	case aAfterOpen, aNeedValue:
		if f.st == aAfterOpen && b == ']' {
			if minItems > 0 {
				return reject
			}
			return acceptPop
		}
		if maxItems >= 0 && f.n >= maxItems {
			return reject
		}
		f.st = aAfterValue
		f.n++
		return m.pushAndStep(frame{kind: fValue, s: items}, b)
	case aAfterValue:
		switch b {
		case ',':
			if maxItems >= 0 && f.n >= maxItems {
				return reject
			}
			f.st = aNeedValue
			return accept
		case ']':
			if f.n < minItems {
				return reject
			}
			return acceptPop
		}
	}
	return reject
}

var anyLiterals = []string{"false", "null", "true"} // sorted; never written

// firstByteOK reports whether a value of s may start with b.
func firstByteOK(s *Schema, b byte) bool {
	isNum := b == '-' || (b >= '0' && b <= '9')
	k := kAny
	if s != nil {
		k = s.kind
	}
	switch k {
	case kAny:
		return b == '{' || b == '[' || b == '"' || isNum || b == 't' || b == 'f' || b == 'n'
	case kObject:
		return b == '{'
	case kArray:
		return b == '['
	case kString:
		return b == '"'
	case kNumber, kInteger:
		return isNum
	case kBool, kNull, kEnum:
		for _, c := range s.enum {
			if c[0] == b {
				return true
			}
		}
	case kUnion:
		for _, a := range s.alts {
			if firstByteOK(a, b) {
				return true
			}
		}
	case kTagged:
		for _, t := range s.tags {
			if t[0] == b {
				return true
			}
		}
	}
	return false
}

// startValue picks the frame for a value of schema s starting with b.
func startValue(s *Schema, b byte) (frame, bool) {
	if !firstByteOK(s, b) {
		return frame{}, false
	}
	k := kAny
	if s != nil {
		k = s.kind
	}
	switch k {
	case kAny:
		switch b {
		case '{':
			return frame{kind: fObject, s: Object()}, true
		case '[':
			return frame{kind: fArray}, true
		case '"':
			return frame{kind: fString}, true
		case 't', 'f', 'n':
			return frame{kind: fLiteral, cands: anyLiterals}, true
		}
		return frame{kind: fNumber}, true
	case kObject:
		return frame{kind: fObject, s: s}, true
	case kArray:
		return frame{kind: fArray, s: s}, true
	case kString:
		return frame{kind: fString, s: s}, true
	case kNumber, kInteger:
		return frame{kind: fNumber, s: s}, true
	case kBool, kNull, kEnum:
		return frame{kind: fLiteral, cands: s.enum}, true
	case kTagged:
		return frame{kind: fTagged, s: s, cands: s.tags}, true
	case kUnion:
		for _, a := range s.alts {
			if firstByteOK(a, b) {
				return startValue(a, b)
			}
		}
	}
	return frame{}, false
}

func (m *machine) stepObject(f *frame, b byte) result {
	s := f.s
	switch f.st {
	case oOpen:
		if b != '{' {
			return reject
		}
		f.st = oAfterOpen
		if !s.anyKeys {
			if len(s.props) == 0 {
				return accept // only "}" may follow
			}
			key := s.props[0].key
			f.st, f.i = oSchemaValue, 0
			m.push(frame{kind: fLiteral, cands: []string{key}})
		}
		return accept
	case oAfterOpen:
		if b == '}' {
			return acceptPop
		}
		if !s.anyKeys {
			return reject
		}
		f.st = oAfterKey
		return m.pushAndStep(frame{kind: fString}, b)
	case oNeedKey:
		f.st = oAfterKey
		return m.pushAndStep(frame{kind: fString}, b)
	case oAfterKey:
		if b == ':' {
			f.st = oAfterColon
			return accept
		}
	case oAfterColon:
		f.st = oAfterValue
		return m.pushAndStep(frame{kind: fValue, s: s.values}, b)
	case oAfterValue:
		switch b {
		case ',':
			f.st = oNeedKey
			return accept
		case '}':
			return acceptPop
		}
	case oSchemaValue:
		f.st = oSchemaAfter
		return m.pushAndStep(frame{kind: fValue, s: s.props[f.i].schema}, b)
	case oSchemaAfter:
		if f.i+1 < len(s.props) {
			if b != ',' {
				return reject
			}
			f.i++
			f.st = oSchemaValue
			m.push(frame{kind: fLiteral, cands: []string{s.props[f.i].key}})
			return accept
		}
		if b == '}' {
			return acceptPop
		}
	}
	return reject
}

func isHex(b byte) bool {
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

func stepString(f *frame, b byte) result {
	minLength, maxLength := 0, -1
	if f.s != nil {
		minLength, maxLength = f.s.minLength, f.s.maxLength
	}
	switch f.st {
	case sOpen:
		if b == '"' {
			f.st = sIn
			return accept
		}
	case sIn:
		if f.i > 0 { // inside a multi-byte UTF-8 character
			lo, hi := byte(0x80), byte(0xBF)
			if f.lead != 0 { // the byte after the lead: no overlong forms, surrogates or > U+10FFFF
				switch f.lead {
				case 0xE0:
					lo = 0xA0
				case 0xED:
					hi = 0x9F
				case 0xF0:
					lo = 0x90
				case 0xF4:
					hi = 0x8F
				}
			}
			if b < lo || b > hi {
				return reject
			}
			f.i--
			f.lead = 0
			return accept
		}
		switch {
		case b == '"':
			if f.n < minLength {
				return reject
			}
			return acceptPop
		case b < 0x20:
			return reject
		}
		if maxLength >= 0 && f.n >= maxLength {
			return reject // maxLength counts characters, as JSON Schema does
		}
		f.lead = b
		switch {
		case b < 0x80:
			f.lead = 0
		case b >= 0xC2 && b <= 0xDF:
			f.i = 1
		case b >= 0xE0 && b <= 0xEF:
			f.i = 2
		case b >= 0xF0 && b <= 0xF4:
			f.i = 3
		default:
			return reject // not a UTF-8 lead byte
		}
		f.n++
		if b == '\\' {
			f.st = sEsc
		}
		return accept
	case sEsc:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			f.st = sIn
			return accept
		case 'u':
			f.st, f.i = sHex, 0
			return accept
		}
	case sHex:
		// A surrogate (D800–DFFF) only as a high half followed by its low
		// half: a lone one is no character, and strict parsers refuse it.
		if !isHex(b) {
			return reject
		}
		v := hexVal(b)
		switch f.i {
		case 0:
			f.hex = v
		case 1:
			if f.hex = f.hex<<4 | v; f.hex >= 0xDC && f.hex <= 0xDF {
				return reject // a low half with no high half before it
			}
		}
		if f.i++; f.i == 4 {
			f.st, f.i = sIn, 0
			if highSurrogate(f.hex) {
				f.st = sPairEsc
			}
		}
		return accept
	case sPairEsc:
		if b == '\\' {
			f.st = sPairU
			return accept
		}
	case sPairU:
		if b == 'u' {
			f.st, f.i = sLowHex, 0
			return accept
		}
	case sLowHex:
		if !isHex(b) || f.i == 0 && hexVal(b) != 0xD || f.i == 1 && hexVal(b) < 0xC {
			return reject // DC00–DFFF only
		}
		if f.i++; f.i == 4 {
			f.st, f.i = sIn, 0
		}
		return accept
	}
	return reject
}

func hexVal(b byte) byte {
	switch {
	case b <= '9':
		return b - '0'
	case b >= 'a':
		return b - 'a' + 10
	}
	return b - 'A' + 10
}

// highSurrogate reports whether an escape whose first two hex digits are
// worth v is the high half of a surrogate pair (D800–DBFF).
func highSurrogate(v byte) bool { return v >= 0xD8 && v <= 0xDB }

// ranged reports whether a number frame has minimum/maximum to keep.
func ranged(s *Schema) bool { return s != nil && (s.hasMin || s.hasMax) }

// numberNext is the state after b, or false when b cannot extend the
// number. Exponents are not offered to ranged numbers.
func numberNext(s *Schema, st uint8, b byte) (uint8, bool) {
	integer := s != nil && s.kind == kInteger
	exp := !integer && !ranged(s)
	digit := b >= '0' && b <= '9'
	switch st {
	case nStart:
		switch {
		case b == '-':
			return nSign, true
		case b == '0':
			return nZero, true
		case digit:
			return nInt, true
		}
	case nSign:
		switch {
		case b == '0':
			return nZero, true
		case digit:
			return nInt, true
		}
	case nZero, nInt:
		switch {
		case digit && st == nInt:
			return nInt, true
		case b == '.' && !integer:
			return nFracStart, true
		case (b == 'e' || b == 'E') && exp:
			return nExpStart, true
		}
	case nFracStart:
		if digit {
			return nFrac, true
		}
	case nFrac:
		switch {
		case digit:
			return nFrac, true
		case (b == 'e' || b == 'E') && exp:
			return nExpStart, true
		}
	case nExpStart:
		switch {
		case b == '+' || b == '-':
			return nExpSign, true
		case digit:
			return nExp, true
		}
	case nExpSign:
		if digit {
			return nExp, true
		}
	case nExp:
		if digit {
			return nExp, true
		}
	}
	return 0, false
}

// maxExpDigits caps the exponent, so that every number fits a float64
// (1e999 is JSON but overflows most parsers).
const maxExpDigits = 2

// expDigits counts the exponent digits at the end of t.
func expDigits(t []byte) int {
	n := 0
	for i := len(t) - 1; i >= 0 && t[i] >= '0' && t[i] <= '9'; i-- {
		n++
	}
	return n
}

// terminal states are those a number may end in.
func terminal(st uint8) bool { return st == nZero || st == nInt || st == nFrac || st == nExp }

func numberCanEnd(f *frame) bool {
	if !terminal(f.st) {
		return false
	}
	if !ranged(f.s) {
		return true
	}
	if ok, sure := inRangeFast(f.s, approx(f.num[:f.i])); sure {
		return ok
	}
	return inRange(f.s, decimal(string(f.num[:f.i])))
}

func inRange(s *Schema, v *big.Rat) bool {
	if s.hasMin {
		if c := v.Cmp(s.min); c < 0 || (s.exclMin && c == 0) {
			return false
		}
	}
	if s.hasMax {
		if c := v.Cmp(s.max); c > 0 || (s.exclMax && c == 0) {
			return false
		}
	}
	return true
}

// meets reports whether the interval from lo to hi (each end closed or
// open) holds a value within s's bounds.
func meets(s *Schema, lo *big.Rat, loIn bool, hi *big.Rat, hiIn bool) bool {
	if s.hasMin {
		if c := s.min.Cmp(lo); c > 0 {
			lo, loIn = s.min, !s.exclMin
		} else if c == 0 {
			loIn = loIn && !s.exclMin
		}
	}
	if s.hasMax {
		if c := s.max.Cmp(hi); c < 0 {
			hi, hiIn = s.max, !s.exclMax
		} else if c == 0 {
			hiIn = hiIn && !s.exclMax
		}
	}
	c := lo.Cmp(hi)
	return c < 0 || (c == 0 && loIn && hiIn)
}

// decimal is the value of the decimal text d (an optional minus, digits,
// maybe a point and more digits: what the recogniser writes for a ranged
// number), exactly. Read by hand: Rat.SetString cost most of a ranged
// number's step in allocations.
func decimal(d string) *big.Rat {
	neg := strings.HasPrefix(d, "-")
	intPart, frac, _ := strings.Cut(strings.TrimPrefix(d, "-"), ".")
	num := new(big.Int)
	if u, err := strconv.ParseUint(intPart+frac, 10, 64); err == nil {
		num.SetUint64(u)
	} else {
		num.SetString(intPart+frac, 10) // digits only: cannot fail
	}
	if neg {
		num.Neg(num)
	}
	return new(big.Rat).SetFrac(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil))
}

// pow10 is 10^k.
func pow10(k int) *big.Rat {
	return new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))
}

// feasible reports whether the number text t (in state st, no exponent)
// can still be completed to a value within s's bounds, within
// maxNumberBytes. Integer schemas have integer bounds (see Compile), for
// which these half-open intervals are exact.
func feasible(s *Schema, t []byte, st uint8) bool {
	return feasibleIn(s, t, st, maxNumberBytes-len(t))
}

// feasibleIn is feasible with at most room more bytes: an integer part
// grows by at most room digits. The intervals are exact decimals, as the
// bounds are; float64s decide first where they are far enough from the
// bounds to be sure (feasibleFast), since the exact test allocates big.Rats
// on every byte of every token Mask tries: a ranged number's Mask took 30
// times as long, with 450000 allocations.
func feasibleIn(s *Schema, t []byte, st uint8, room int) bool {
	if ok, sure := feasibleFast(s, t, st, room); sure {
		return ok
	}
	return feasibleExact(s, t, st, room)
}

// feasibleExact is feasibleIn in exact decimals.
func feasibleExact(s *Schema, t []byte, st uint8, room int) bool {
	if st == nStart {
		return true
	}
	neg := t[0] == '-'
	digits := string(t)
	if neg {
		digits = digits[1:]
	}
	// meetsMag tests the magnitudes from a (closed) to b (closed with
	// shut) with the sign.
	meetsMag := func(a, b *big.Rat, shut bool) bool {
		if neg {
			return meets(s, new(big.Rat).Neg(b), shut, new(big.Rat).Neg(a), true)
		}
		return meets(s, a, true, b, shut)
	}
	// below is x less one unit in the 10^-k place: the largest number a
	// fraction reaches with k digits to go.
	below := func(x *big.Rat, k int) *big.Rat {
		return x.Sub(x, new(big.Rat).Inv(pow10(k)))
	}
	integer := s.kind == kInteger
	switch st {
	case nSign:
		return meetsMag(new(big.Rat), pow10(room), false)
	case nZero:
		if integer || room < 2 {
			return meetsMag(new(big.Rat), new(big.Rat), true) // just 0
		}
		return meetsMag(new(big.Rat), below(big.NewRat(1, 1), room-1), true)
	case nInt:
		// [I·10^k, (I+1)·10^k) for k more digits, k up to room.
		lo := decimal(digits)
		hi := new(big.Rat).Add(lo, big.NewRat(1, 1))
		ten := big.NewRat(10, 1)
		for k := 0; k <= room; k++ {
			if k > 0 {
				lo.Mul(lo, ten)
				hi.Mul(hi, ten)
			}
			if meetsMag(lo, hi, false) {
				return true
			}
		}
		return false
	case nFracStart:
		if room == 0 {
			return false
		}
		I := decimal(digits[:len(digits)-1])
		return meetsMag(I, below(new(big.Rat).Add(I, big.NewRat(1, 1)), room), true)
	case nFrac:
		// The top is digits plus one in their last place, less one in the
		// last place room allows: "0.29" reaches [0.29, 0.2999] with two
		// bytes to go (a top of 0.30, open, took "0.2" under a minimum of
		// 0.29999 and left no byte to reach it).
		_, frac, _ := strings.Cut(digits, ".")
		return meetsMag(decimal(digits), below(decimal(nextInLastPlace(digits)), len(frac)+room), true)
	}
	return false
}

// feasibleFast is feasibleExact in float64s, the same intervals: sure
// only when every comparison with a bound is sure (cmpF), so that the
// rounding of the text and of the bounds cannot change its answer.
func feasibleFast(s *Schema, t []byte, st uint8, room int) (ok, sure bool) {
	if st == nStart {
		return true, true
	}
	neg := t[0] == '-'
	digits := t
	if neg {
		digits = digits[1:]
	}
	meetsMag := func(a, b approxNum, shut bool) (bool, bool) {
		if neg {
			return meetsFast(s, b.neg(), shut, a.neg(), true)
		}
		return meetsFast(s, a, true, b, shut)
	}
	zero := approxNum{0, true}
	switch st {
	case nSign:
		return meetsMag(zero, approxNum{math.Pow10(room), room <= 22}, false)
	case nZero:
		if s.kind == kInteger || room < 2 {
			return meetsMag(zero, zero, true)
		}
		return meetsMag(zero, fracTop(0, 0, room-1), true)
	case nInt:
		v, _ := mantissa(digits)
		lo, hi := approxNum{v, v < 1<<53}, approxNum{v + 1, v+1 < 1<<53}
		for k := 0; k <= room; k++ {
			if k > 0 {
				lo, hi = lo.times10(), hi.times10()
			}
			ok, sure := meetsMag(lo, hi, false)
			if !sure || ok {
				return ok, sure
			}
		}
		return false, true
	case nFracStart:
		if room == 0 {
			return false, true
		}
		v, _ := mantissa(digits[:len(digits)-1])
		return meetsMag(approxNum{v, v < 1<<53}, fracTop(v, 0, room), true)
	case nFrac:
		v, frac := mantissa(digits)
		return meetsMag(scaled(v, frac), fracTop(v, frac, room), true)
	}
	return false, true
}

// fracTop is the largest number a fraction whose digits read v, frac of
// them after the point, reaches with room more digits: (v+1)/10^frac less
// 10^-(frac+room).
func fracTop(v float64, frac, room int) approxNum {
	w := (v+1)*math.Pow10(room) - 1
	if w >= 1<<53 {
		return approxNum{w / math.Pow10(frac+room), false}
	}
	return scaled(w, frac+room)
}

// approxNum is a float64 within a few units in the last place of an
// exact decimal, or, with exact, that decimal itself.
type approxNum struct {
	f     float64
	exact bool
}

func (a approxNum) neg() approxNum { return approxNum{-a.f, a.exact} }

func (a approxNum) times10() approxNum {
	r := a.f * 10
	return approxNum{r, a.exact && math.FMA(a.f, 10, -r) == 0}
}

// scaled is v/10^frac, exact when v is (below 2^53) and the quotient is.
func scaled(v float64, frac int) approxNum {
	p := math.Pow10(frac) // exact up to 10^22
	q := v / p
	return approxNum{q, v < 1<<53 && frac <= 22 && math.FMA(q, p, -v) == 0}
}

// mantissa reads the unsigned decimal text d (digits, maybe a point and
// more digits) as its digits' integer and the count after the point. It
// allocates nothing, unlike strconv on a byte slice.
func mantissa(d []byte) (v float64, frac int) {
	point := false
	for _, c := range d {
		if c == '.' {
			point = true
			continue
		}
		v = v*10 + float64(c-'0')
		if point {
			frac++
		}
	}
	return v, frac
}

// approx is the signed decimal text d (a ranged number's) as an approxNum.
func approx(d []byte) approxNum {
	if len(d) > 0 && d[0] == '-' {
		return approx(d[1:]).neg()
	}
	return scaled(mantissa(d))
}

// meetsFast is meets in float64s, for an interval from lo to hi that
// holds a value (as every state's does). It meets the bounds, which hold
// one too (Compile found a number within them), when neither interval
// ends before the other begins: lo against the maximum, the minimum
// against hi, so a bound near the end it does not meet (the top of
// "0.999…" near a maximum of 1) needs no exact test.
func meetsFast(s *Schema, lo approxNum, loIn bool, hi approxNum, hiIn bool) (ok, sure bool) {
	ok, sure = true, true
	before := func(a approxNum, aIn bool, b approxNum, bIn bool) {
		c, yes := cmpF(a, b)
		sure = sure && yes
		ok = ok && (c < 0 || (c == 0 && aIn && bIn))
	}
	if s.hasMax {
		before(lo, loIn, s.maxF, !s.exclMax)
	}
	if s.hasMin {
		before(s.minF, !s.exclMin, hi, hiIn)
	}
	if !ok && sure {
		return false, true
	}
	return ok, sure
}

// inRangeFast is inRange in float64s, sure unless a comparison is not.
func inRangeFast(s *Schema, v approxNum) (ok, sure bool) {
	if s.hasMin {
		c, sure := cmpF(v, s.minF)
		if !sure || c < 0 || (c == 0 && s.exclMin) {
			return false, sure
		}
	}
	if s.hasMax {
		c, sure := cmpF(v, s.maxF)
		if !sure || c > 0 || (c == 0 && s.exclMax) {
			return false, sure
		}
	}
	return true, true
}

// cmpF compares the decimals x and y stand for: sure when both are exact,
// or when they are so far apart that rounding cannot swap them.
func cmpF(x, y approxNum) (int, bool) {
	c := 0
	switch {
	case x.f < y.f:
		c = -1
	case x.f > y.f:
		c = 1
	}
	if x.exact && y.exact {
		return c, true
	}
	if math.Abs(x.f-y.f) <= 1e-9*max(math.Abs(x.f), math.Abs(y.f)) {
		return 0, false
	}
	return c, true
}

// nextInLastPlace is the unsigned decimal text d plus one unit in its last
// digit's place: "0.29" gives "0.30", "9.9" gives "10.0".
func nextInLastPlace(d string) string {
	b := []byte(d)
	for i := len(b) - 1; i >= 0; i-- {
		switch {
		case b[i] == '.':
			continue
		case b[i] < '9':
			b[i]++
			return string(b)
		}
		b[i] = '0'
	}
	return "1" + string(b)
}

// numberNeed is the fewest bytes that end a number in state st, ignoring
// any range.
func numberNeed(st uint8) int {
	if terminal(st) {
		return 0
	}
	return 1
}

func stepNumber(f *frame, b byte) result {
	ns, ok := numberNext(f.s, f.st, b)
	if ok && f.i+1+numberNeed(ns) > maxNumberBytes {
		ok = false
	}
	if ok && ns == nExp && f.st == nExp && expDigits(f.num[:f.i]) >= maxExpDigits {
		ok = false
	}
	if ok && ranged(f.s) {
		f.num[f.i] = b
		ok = feasible(f.s, f.num[:f.i+1], ns)
	}
	if !ok {
		if canEnd(f) {
			return pass
		}
		return reject
	}
	f.num[f.i] = b
	f.i++
	f.st = ns
	return accept
}

// minNumberBytes is the fewest bytes that complete the number frame f
// (nil: a number not yet started) within s's range, or -1 if none can.
func minNumberBytes(s *Schema, f *frame) int {
	start := frame{kind: fNumber, s: s}
	if f == nil {
		f = &start
	}
	if !ranged(s) {
		if f == &start {
			return 1
		}
		return numberNeed(f.st)
	}
	for k := 0; k <= maxNumberBytes-f.i; k++ {
		if numberReach(f, k) {
			return k
		}
	}
	return -1
}

// numberReach reports whether exactly k more bytes can end f in range.
// Prefixes that cannot reach the range in the bytes left are cut at once,
// so the search stays narrow: cut only by maxNumberBytes, a bound of 1e9
// had every digit string shorter than 10 bytes tried.
func numberReach(f *frame, k int) bool {
	if k == 0 {
		return numberCanEnd(f)
	}
	for _, b := range []byte("0123456789.-") {
		g := *f
		if stepNumber(&g, b) == accept && feasibleIn(g.s, g.num[:g.i], g.st, k-1) && numberReach(&g, k-1) {
			return true
		}
	}
	return false
}

// minBytes is the fewest bytes that complete the document from m (0 when
// it is complete). Each state's figure is exact, so at every state with
// minBytes > 0 some byte lowers it by one: following such bytes always
// ends the document in exactly minBytes bytes.
func (m *machine) minBytes() int {
	n := 0
	for k := range m.stack {
		n += frameRem(&m.stack[k])
	}
	return n
}

func schemaMin(s *Schema) int {
	if s == nil {
		return 1
	}
	return s.minLen
}

// frameRem is the fewest bytes frame f needs once the frames above it
// are complete.
func frameRem(f *frame) int {
	s := f.s
	switch f.kind {
	case fValue:
		return schemaMin(s)
	case fObject:
		switch f.st {
		case oOpen:
			return s.minLen
		case oAfterOpen, oAfterValue:
			return 1
		case oAfterKey:
			return 2 + schemaMin(s.values)
		case oAfterColon:
			return 1 + schemaMin(s.values)
		case oNeedKey:
			return 4 + schemaMin(s.values)
		case oSchemaValue:
			return s.props[f.i].schema.minLen + propsTail(s, f.i+1)
		case oSchemaAfter:
			return propsTail(s, f.i+1)
		}
	case fArray:
		minItems, items := 0, 1
		if s != nil {
			minItems, items = s.minItems, schemaMin(s.items)
		}
		switch f.st {
		case aOpen:
			if s == nil {
				return 2
			}
			return s.minLen
		case aAfterOpen, aNeedValue:
			if f.st == aAfterOpen && minItems == 0 {
				return 1
			}
			return items + max(0, minItems-f.n-1)*(1+items) + 1
		case aAfterValue:
			return max(0, minItems-f.n)*(1+items) + 1
		}
	case fString:
		minLength := 0
		if s != nil {
			minLength = s.minLength
		}
		short := max(0, minLength-f.n)
		switch f.st {
		case sOpen:
			return 2 + minLength
		case sIn:
			return f.i + short + 1
		case sEsc:
			return 1 + short + 1
		case sHex:
			if f.i >= 2 && highSurrogate(f.hex) {
				return 4 - f.i + len(`\udc00`) + short + 1
			}
			return 4 - f.i + short + 1
		case sPairEsc:
			return len(`\udc00`) + short + 1
		case sPairU:
			return len(`udc00`) + short + 1
		case sLowHex:
			return 4 - f.i + short + 1
		}
	case fNumber:
		if n := minNumberBytes(s, f); n >= 0 {
			return n
		}
		return maxNumberBytes // cannot happen: stepNumber keeps every prefix feasible
	case fLiteral:
		best := math.MaxInt
		for _, c := range f.cands {
			best = min(best, len(c)-f.i)
		}
		return best
	case fTagged:
		switch f.st {
		case tPrefix:
			best := math.MaxInt
			for _, c := range f.cands {
				k := s.cases[s.caseOf(c)]
				best = min(best, len(c)-f.i+k.Value.minLen+len(k.Suffix))
			}
			return best
		case tValue:
			return s.cases[f.n].Value.minLen + len(s.cases[f.n].Suffix)
		case tSuffix:
			return len(f.cands[0]) - f.i
		}
	}
	return 0
}

// propsTail is the fewest bytes of the properties from j on, with their
// commas, and the closing brace.
func propsTail(s *Schema, j int) int {
	n := 1
	for _, p := range s.props[j:] {
		n += 1 + len(p.key) + p.schema.minLen
	}
	return n
}
