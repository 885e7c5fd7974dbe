package tokenizer

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// readFast reads a tokenizer.json document without encoding/json's
// reflection for the two large fields: the vocabulary, read straight into
// the token → id map the tokenizer keeps (and a list in file order), and
// the merges, whose entries stay slices of data (so data must outlive
// build). encoding/json first scans
// the whole document to validate it and then decodes it with a second scan,
// one map assignment through reflect per token and one copied RawMessage
// per merge: for Qwen3's 11 MB file that was about half of Load.
//
// It accepts a subset of JSON, checked as strictly as encoding/json checks
// it, and on that subset gives what decoding into fileJSON gives: the small
// fields are decoded by encoding/json from their own text. Anything else
// answers ok=false and Parse decodes the document with encoding/json, which
// then gives its usual result or error: a vocabulary id that is not a plain
// integer in int32, a key repeated or spelled in another case than the
// field's (encoding/json matches keys case-insensitively), a document
// nested deeper than maxFastDepth, text after the document, or any field
// encoding/json would refuse.
func readFast(data []byte) (*fileJSON, bool) {
	r := &jsonReader{b: data}
	f := &fileJSON{}
	// The keys of fileJSON, as its json tags spell them.
	known := []string{"added_tokens", "normalizer", "pre_tokenizer", "post_processor", "decoder", "model"}
	ok := r.object(known, func(key string) (ok bool) {
		switch key {
		case "added_tokens":
			raw, ok := r.value()
			return ok && json.Unmarshal(raw, &f.AddedTokens) == nil
		case "normalizer":
			f.Normalizer, ok = r.value()
		case "pre_tokenizer":
			f.PreTokenizer, ok = r.value()
		case "post_processor":
			f.PostProcessor, ok = r.value()
		case "decoder":
			f.Decoder, ok = r.value()
		case "model":
			return r.model(&f.Model)
		default:
			_, ok = r.value()
		}
		return ok
	})
	r.space()
	return f, ok && r.i == len(r.b)
}

// maxFastDepth bounds the nesting readFast follows; encoding/json allows
// 10000 levels, and no tokenizer.json has more than a handful.
const maxFastDepth = 100

// jsonReader walks a JSON document; every method checks what it reads and
// reports false on anything it does not accept.
type jsonReader struct {
	b     []byte
	i     int
	depth int
}

func (r *jsonReader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// consume skips white space and then c.
func (r *jsonReader) consume(c byte) bool {
	r.space()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// object reads an object whose keys are decoded and handed to field,
// positioned at the key's value, which field must read. Keys must be
// distinct among the known ones, and a key that encoding/json would match
// to a known one must be spelled as it is.
func (r *jsonReader) object(known []string, field func(key string) bool) bool {
	if !r.consume('{') {
		return false
	}
	r.depth++
	if r.depth > maxFastDepth {
		return false
	}
	seen := make([]bool, len(known))
	if r.consume('}') {
		r.depth--
		return true
	}
	for {
		r.space()
		key, ok := r.key()
		if !ok || !r.consume(':') {
			return false
		}
		for k, name := range known {
			if strings.EqualFold(key, name) {
				if key != name || seen[k] {
					return false
				}
				seen[k] = true
			}
		}
		r.space()
		if !field(key) {
			return false
		}
		if r.consume('}') {
			r.depth--
			return true
		}
		if !r.consume(',') {
			return false
		}
	}
}

// model reads the model object: the vocabulary into m.entries and m.ids,
// the merges as slices of the document, the rest decoded by encoding/json.
func (r *jsonReader) model(m *modelJSON) bool {
	// The keys of modelJSON, as its json tags spell them.
	known := []string{"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback", "fuse_unk", "ignore_merges", "vocab", "merges"}
	return r.object(known, func(key string) bool {
		switch key {
		case "vocab":
			return r.vocab(m)
		case "merges":
			return r.merges(m)
		}
		raw, ok := r.value()
		if !ok {
			return false
		}
		var dst any
		switch key {
		case "type":
			dst = &m.Type
		case "dropout":
			dst = &m.Dropout
		case "unk_token":
			dst = &m.UnkToken
		case "continuing_subword_prefix":
			dst = &m.ContinuingSubwordPrefix
		case "end_of_word_suffix":
			dst = &m.EndOfWordSuffix
		case "byte_fallback":
			dst = &m.ByteFallback
		case "fuse_unk":
			dst = &m.FuseUnk
		case "ignore_merges":
			dst = &m.IgnoreMerges
		default:
			return true // a field fileJSON does not keep
		}
		return json.Unmarshal(raw, dst) == nil
	})
}

// vocab reads the vocabulary object into m.entries and m.ids. Ids must be
// plain non-negative integers that fit in int32 (every id of a real file),
// so that these hold exactly what vocabIDs makes of m.Vocab.
func (r *jsonReader) vocab(m *modelJSON) bool {
	var entries []vocabEntry
	ok := r.object(nil, func(tok string) bool {
		id, ok := r.id()
		entries = appendDoubling(entries, vocabEntry{tok, id})
		return ok
	})
	if !ok {
		return false
	}
	m.entries = entries
	m.ids = make(map[string]int32, len(entries))
	for _, e := range entries {
		m.ids[e.tok] = e.id
	}
	return len(m.ids) == len(entries) // a repeated token: encoding/json keeps the last
}

// appendDoubling is append that doubles a full slice's capacity: append
// grows large slices by a quarter, and filling one of 151k entries that
// way allocates and copies it about five times over.
func appendDoubling[T any](s []T, v T) []T {
	if len(s) == cap(s) {
		s = slices.Grow(s, max(len(s), 64))
	}
	return append(s, v)
}

// id reads a vocabulary id: 0 or a digit string without a leading zero,
// at most math.MaxInt32.
func (r *jsonReader) id() (int32, bool) {
	start := r.i
	var n int64
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' && r.i-start < 11 {
		n = n*10 + int64(r.b[r.i]-'0')
		r.i++
	}
	digits := r.i - start
	if digits == 0 || digits > 1 && r.b[start] == '0' || n > math.MaxInt32 {
		return 0, false
	}
	return int32(n), true // a fraction, exponent or twelfth digit fails the ',' or '}' that must follow
}

// merges reads the merges array, each entry kept as its JSON text (splitMerge
// reads it later, as it reads encoding/json's RawMessage).
func (r *jsonReader) merges(m *modelJSON) bool {
	if !r.consume('[') {
		return false
	}
	m.Merges = []json.RawMessage{} // an empty array decodes to an empty slice, not nil
	if r.consume(']') {
		return true
	}
	for {
		r.space()
		raw, ok := r.value()
		if !ok {
			return false
		}
		m.Merges = appendDoubling(m.Merges, raw)
		if r.consume(']') {
			return true
		}
		if !r.consume(',') {
			return false
		}
	}
}

// key reads an object key (a string) and decodes it. A key without escapes
// in valid UTF-8 is its own text; the rest are decoded by encoding/json,
// which also replaces invalid UTF-8 as it does in keys it decodes itself.
func (r *jsonReader) key() (string, bool) {
	raw, plain, ok := r.str()
	if !ok {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if plain && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// value reads any JSON value and returns its text, checked as strictly as
// encoding/json checks it.
func (r *jsonReader) value() ([]byte, bool) {
	start := r.i
	if r.i >= len(r.b) {
		return nil, false
	}
	var ok bool
	switch c := r.b[r.i]; {
	case c == '"':
		_, _, ok = r.str()
	case c == '{':
		ok = r.object(nil, func(string) bool { _, ok := r.value(); return ok })
	case c == '[':
		ok = r.array()
	case c == '-' || c >= '0' && c <= '9':
		ok = r.number()
	default:
		ok = r.literal("true") || r.literal("false") || r.literal("null")
	}
	return r.b[start:r.i], ok
}

func (r *jsonReader) array() bool {
	r.i++ // '['
	r.depth++
	if r.depth > maxFastDepth {
		return false
	}
	if r.consume(']') {
		r.depth--
		return true
	}
	for {
		r.space()
		if _, ok := r.value(); !ok {
			return false
		}
		if r.consume(']') {
			r.depth--
			return true
		}
		if !r.consume(',') {
			return false
		}
	}
}

func (r *jsonReader) literal(word string) bool {
	end := r.i + len(word)
	if end > len(r.b) || string(r.b[r.i:end]) != word {
		return false
	}
	r.i = end
	return true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (r *jsonReader) number() bool {
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(r.b) && r.b[r.i] == '0':
		r.i++
	case !r.digits():
		return false
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if !r.digits() {
			return false
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if !r.digits() {
			return false
		}
	}
	return true
}

// digits reads one or more decimal digits.
func (r *jsonReader) digits() bool {
	start := r.i
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		r.i++
	}
	return r.i > start
}

// str reads a string and returns its text with the quotes; plain reports
// that it holds no escape. Control characters must be escaped, and an
// escape must be one JSON defines.
func (r *jsonReader) str() (raw []byte, plain, ok bool) {
	start := r.i
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false, false
	}
	r.i++
	plain = true
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return r.b[start:r.i], plain, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			plain = false
			if !r.escape() {
				return nil, false, false
			}
		default:
			r.i++
		}
	}
	return nil, false, false
}

// escape reads one escape sequence, from its backslash.
func (r *jsonReader) escape() bool {
	r.i++ // '\\'
	if r.i >= len(r.b) {
		return false
	}
	switch r.b[r.i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		r.i++
		return true
	case 'u':
		if r.i+5 > len(r.b) {
			return false
		}
		for _, h := range r.b[r.i+1 : r.i+5] {
			if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
				return false
			}
		}
		r.i += 5
		return true
	}
	return false
}
