package constrain

// The recogniser is a pushdown automaton over bytes: a stack of frames, one
// per JSON value being read. It accepts compact JSON only (no whitespace),
// which every JSON parser reads, and which keeps a sampling model from
// padding with blanks forever.

type frameKind uint8

const (
	fValue   frameKind = iota // a value of schema s starts with the next byte
	fObject                   // inside {…}
	fArray                    // inside […]
	fString                   // inside "…"
	fNumber                   // a number
	fLiteral                  // one of several literal texts (enum, true, keys)
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
	sHex
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
	i     int      // property index, literal position, bytes read; fString: UTF-8 continuation bytes due
	cands []string // fLiteral: texts still possible (never mutated in place)
	n     int      // fString: characters between the quotes
}

type result uint8

const (
	reject    result = iota
	accept           // byte consumed, frame stays
	acceptPop        // byte consumed, frame complete
	pass             // frame complete before this byte; give it to the parent
)

// machine is the parser state; copy is cheap (the stack is small).
type machine struct {
	stack []frame
	done  bool // the top-level value is complete
}

func newMachine(s *Schema) machine {
	return machine{stack: []frame{{kind: fValue, s: s}}}
}

func (m *machine) clone() machine {
	return machine{stack: append(make([]frame, 0, len(m.stack)+4), m.stack...), done: m.done}
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
		return f.st == nZero || f.st == nInt || f.st == nFrac || f.st == nExp
	case fLiteral:
		for _, c := range f.cands {
			if len(c) == f.i {
				return true
			}
		}
	}
	return false
}

// feed advances by one byte; false means b cannot come next.
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
		*f = nf
		return m.step(f, b)
	case fObject:
		return m.stepObject(f, b)
	case fArray:
		switch f.st {
		case aOpen:
			if b == '[' {
				f.st = aAfterOpen
				return accept
			}
		case aAfterOpen, aNeedValue:
			if f.st == aAfterOpen && b == ']' {
				return acceptPop
			}
			f.st = aAfterValue
			return m.pushAndStep(frame{kind: fValue, s: itemSchema(f.s)}, b)
		case aAfterValue:
			switch b {
			case ',':
				f.st = aNeedValue
				return accept
			case ']':
				return acceptPop
			}
		}
		return reject
	case fString:
		return stepString(f, b)
	case fNumber:
		return stepNumber(f, b)
	case fLiteral:
		var next []string
		for _, c := range f.cands {
			if len(c) > f.i && c[f.i] == b {
				next = append(next, c)
			}
		}
		if len(next) == 0 {
			if canEnd(f) {
				return pass
			}
			return reject
		}
		f.cands = next
		f.i++
		for _, c := range next {
			if len(c) > f.i {
				return accept
			}
		}
		return acceptPop
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

func itemSchema(s *Schema) *Schema {
	if s == nil {
		return nil
	}
	return s.items
}

// startValue picks the frame for a value of schema s starting with b.
func startValue(s *Schema, b byte) (frame, bool) {
	k := kAny
	if s != nil {
		k = s.kind
	}
	isNum := b == '-' || (b >= '0' && b <= '9')
	switch k {
	case kAny:
		switch {
		case b == '{':
			return frame{kind: fObject, s: Object()}, true
		case b == '[':
			return frame{kind: fArray}, true
		case b == '"':
			return frame{kind: fString}, true
		case isNum:
			return frame{kind: fNumber, s: &Schema{kind: kNumber}}, true
		case b == 't' || b == 'f' || b == 'n':
			return frame{kind: fLiteral, cands: []string{"true", "false", "null"}}, true
		}
	case kObject:
		return frame{kind: fObject, s: s}, b == '{'
	case kArray:
		return frame{kind: fArray, s: s}, b == '['
	case kString:
		return frame{kind: fString, s: s}, b == '"'
	case kNumber, kInteger:
		return frame{kind: fNumber, s: s}, isNum
	case kBool, kNull, kEnum:
		return frame{kind: fLiteral, cands: s.enum}, true
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
		return m.pushAndStep(frame{kind: fValue}, b)
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
	switch f.st {
	case sOpen:
		if b == '"' {
			f.st = sIn
			return accept
		}
	case sIn:
		if f.i > 0 { // inside a multi-byte UTF-8 character
			if b&0xC0 != 0x80 {
				return reject
			}
			f.i--
			return accept
		}
		switch {
		case b == '"':
			return acceptPop
		case b < 0x20:
			return reject
		}
		if f.s != nil && f.s.maxLength > 0 && f.n >= f.s.maxLength {
			return reject // maxLength counts characters, as JSON Schema does
		}
		switch {
		case b < 0x80:
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
		if isHex(b) {
			f.i++
			if f.i == 4 {
				f.st, f.i = sIn, 0
			}
			return accept
		}
	}
	return reject
}

func stepNumber(f *frame, b byte) result {
	integer := f.s != nil && f.s.kind == kInteger
	digit := b >= '0' && b <= '9'
	if f.i >= maxNumberBytes {
		if canEnd(f) {
			return pass
		}
		return reject
	}
	r := reject
	switch f.st {
	case nStart:
		switch {
		case b == '-':
			f.st, r = nSign, accept
		case b == '0':
			f.st, r = nZero, accept
		case digit:
			f.st, r = nInt, accept
		}
	case nSign:
		switch {
		case b == '0':
			f.st, r = nZero, accept
		case digit:
			f.st, r = nInt, accept
		}
	case nZero, nInt:
		switch {
		case digit && f.st == nInt:
			r = accept
		case b == '.' && !integer:
			f.st, r = nFracStart, accept
		case (b == 'e' || b == 'E') && !integer:
			f.st, r = nExpStart, accept
		default:
			return pass
		}
	case nFracStart:
		if digit {
			f.st, r = nFrac, accept
		}
	case nFrac:
		switch {
		case digit:
			r = accept
		case b == 'e' || b == 'E':
			f.st, r = nExpStart, accept
		default:
			return pass
		}
	case nExpStart:
		switch {
		case b == '+' || b == '-':
			f.st, r = nExpSign, accept
		case digit:
			f.st, r = nExp, accept
		}
	case nExpSign:
		if digit {
			f.st, r = nExp, accept
		}
	case nExp:
		if digit {
			r = accept
		} else {
			return pass
		}
	}
	if r == accept {
		f.i++
	}
	return r
}
