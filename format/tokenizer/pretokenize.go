package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The Split patterns this package runs, as they appear in tokenizer.json.
const (
	// PatternQwen2 is the Split regex of Qwen2, Qwen2.5 and Qwen3: digits one by one.
	PatternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternLlama3 is the Split regex of Llama 3: digits in groups of up to three.
	PatternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternGPT2 is the pattern the ByteLevel pre-tokenizer applies itself
	// when its use_regex is true.
	PatternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// splitMode selects the hand-written matcher for one of the known patterns.
type splitMode uint8

const (
	splitNone   splitMode = iota // the whole section is one piece
	splitQwen2                   // PatternQwen2
	splitLlama3                  // PatternLlama3
	splitGPT2                    // PatternGPT2
)

// normalizer is the normalizer's steps, applied in order: Unicode
// normalization forms, literal replacements, and text put before the whole.
type normalizer []normStep

// normStep is one step: a Unicode normalization form; the text prepend put
// before a text that is not empty (a Prepend normalizer, as Llama 2's "▁");
// or else the replacement of every from by to (a Replace normalizer with a
// String pattern, as Gemma's " " → "▁").
type normStep struct {
	form     *norm.Form
	prepend  string
	from, to string
}

func (n normalizer) apply(s string) string {
	for _, st := range n {
		switch {
		case st.form != nil:
			s = normForm(*st.form, s)
		case st.prepend != "":
			if s != "" {
				s = st.prepend + s
			}
		default:
			s = strings.ReplaceAll(s, st.from, st.to)
		}
	}
	return s
}

// isIdentity reports whether apply returns s unchanged (s is already in
// every form and holds nothing to replace, and nothing is put before it),
// without allocating.
func (n normalizer) isIdentity(s string) bool {
	for _, st := range n {
		switch {
		case st.form != nil:
			if !st.form.IsNormalString(s) {
				return false
			}
		case st.prepend != "":
			if s != "" {
				return false
			}
		default:
			if strings.Contains(s, st.from) {
				return false
			}
		}
	}
	return true
}

// lead splits n into the text its Prepend steps put before a text that is
// not empty, as the steps after them leave it, and the other steps, which
// normalize the text itself. parseNormalizer accepts Prepend steps only at
// the start and followed by charwise steps, so that apply(s) is lead +
// rest.apply(s) for every s but "".
func (n normalizer) lead() (lead string, rest normalizer) {
	i := 0
	for i < len(n) && n[i].prepend != "" {
		lead = n[i].prepend + lead
		i++
	}
	rest = n[i:]
	return rest.apply(lead), rest
}

// charwise reports whether n normalizes each character on its own: it has
// no Unicode form, puts nothing before the text and replaces single
// characters only, so that applying it character by character gives what
// apply gives.
func (n normalizer) charwise() bool {
	for _, st := range n {
		if st.form != nil || st.prepend != "" || utf8.RuneCountInString(st.from) != 1 {
			return false
		}
	}
	return true
}

// matchedInside marks, for each byte offset of s, whether it lies strictly
// inside a match in s of a Replace pattern of more than one character (any
// match, overlapping ones too): a cut there would split the match.
func (n normalizer) matchedInside(s string) []bool {
	inside := make([]bool, len(s)+1)
	for _, st := range n {
		if st.form != nil || st.prepend != "" || utf8.RuneCountInString(st.from) < 2 {
			continue
		}
		for i := 0; ; {
			j := strings.Index(s[i:], st.from)
			if j < 0 {
				break
			}
			for k := i + j + 1; k < i+j+len(st.from); k++ {
				inside[k] = true
			}
			_, w := utf8.DecodeRuneInString(s[i+j:])
			i += j + w
		}
	}
	return inside
}

// removes reports whether no text after n holds lit: the last step that
// can produce lit replaces it by text without it, and the steps after that
// replace nothing back in. A Split on lit after n splits nothing.
func (n normalizer) removes(lit string) bool {
	for i := len(n) - 1; i >= 0; i-- {
		st := n[i]
		if st.form != nil || strings.Contains(st.prepend, lit) {
			return false
		}
		if st.prepend != "" {
			continue
		}
		if strings.Contains(st.to, lit) {
			return false
		}
		if st.from == lit {
			return true
		}
	}
	return false
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c component
	if err := decodeJSON(raw, &c); err != nil {
		return nil, err
	}
	form := func(f norm.Form) (normalizer, error) { return normalizer{{form: &f}}, nil }
	switch c.Type {
	case "NFC":
		return form(norm.NFC)
	case "NFD":
		return form(norm.NFD)
	case "NFKC":
		return form(norm.NFKC)
	case "NFKD":
		return form(norm.NFKD)
	case "Replace":
		from, to, err := parseReplace(raw)
		if err != nil {
			return nil, err
		}
		// Text never shrinks then, which Limited's bound on the tokens of
		// a text by its length relies on.
		if len(to) < len(from) {
			return nil, fmt.Errorf("Replace of %q by the shorter %q is not supported", from, to)
		}
		return normalizer{{from: from, to: to}}, nil
	case "Prepend":
		var p struct {
			Prepend string `json:"prepend"`
		}
		if err := decodeJSON(raw, &p); err != nil {
			return nil, err
		}
		if p.Prepend == "" {
			return nil, nil
		}
		return normalizer{{prepend: p.Prepend}}, nil
	case "Sequence":
		var s struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := decodeJSON(raw, &s); err != nil {
			return nil, err
		}
		var out normalizer
		for i, r := range s.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, fmt.Errorf("normalizers[%d]: %w", i, err)
			}
			if len(n) > 0 && n[0].prepend != "" && len(out) > 0 && out[len(out)-1].prepend == "" {
				return nil, fmt.Errorf("normalizers[%d]: Prepend after another kind of normalizer is not supported (want it first)", i)
			}
			out = append(out, n...)
		}
		if _, rest := out.lead(); !rest.charwise() {
			if len(rest) < len(out) {
				return nil, errors.New("Prepend followed by a Unicode normalization form or a Replace of more than one character is not supported")
			}
		}
		if len(out) == 0 {
			return nil, nil
		}
		return out, nil
	default:
		return nil, fmt.Errorf("type %q is not supported", c.Type)
	}
}

// parseReplace reads a Replace normalizer or decoder whose pattern is a
// literal string ({"String": …}); a Regex pattern is refused.
func parseReplace(raw json.RawMessage) (from, to string, err error) {
	var r struct {
		Pattern struct {
			String *string `json:"String"`
			Regex  *string `json:"Regex"`
		} `json:"pattern"`
		Content *string `json:"content"`
	}
	if err := decodeJSON(raw, &r); err != nil {
		return "", "", err
	}
	switch {
	case r.Pattern.String == nil:
		return "", "", errors.New("Replace pattern is not a String (a Regex pattern is not supported)")
	case *r.Pattern.String == "":
		return "", "", errors.New("Replace pattern is empty")
	case r.Content == nil:
		return "", "", errors.New("Replace has no content")
	}
	return *r.Pattern.String, *r.Content, nil
}

// parsePreTokenizer accepts ByteLevel alone, or a Sequence of an Isolated
// Split with a known pattern followed by ByteLevel with use_regex false.
func parsePreTokenizer(raw json.RawMessage) (splitMode, bool, error) {
	if isNull(raw) {
		return 0, false, errors.New("missing; byte-level BPE needs a ByteLevel pre-tokenizer")
	}
	var c component
	if err := decodeJSON(raw, &c); err != nil {
		return 0, false, err
	}
	switch c.Type {
	case "ByteLevel":
		useRegex, prefix, err := parseByteLevel(raw)
		if err != nil {
			return 0, false, err
		}
		if useRegex {
			return splitGPT2, prefix, nil
		}
		return splitNone, prefix, nil
	case "Sequence":
		var s struct {
			Pretokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := decodeJSON(raw, &s); err != nil {
			return 0, false, err
		}
		if len(s.Pretokenizers) == 1 {
			return parsePreTokenizer(s.Pretokenizers[0])
		}
		if len(s.Pretokenizers) != 2 {
			return 0, false, fmt.Errorf("Sequence of %d pre-tokenizers is not supported (want Split, ByteLevel)", len(s.Pretokenizers))
		}
		mode, err := parseSplit(s.Pretokenizers[0])
		if err != nil {
			return 0, false, fmt.Errorf("pretokenizers[0]: %w", err)
		}
		var bl component
		if err := decodeJSON(s.Pretokenizers[1], &bl); err != nil {
			return 0, false, fmt.Errorf("pretokenizers[1]: %w", err)
		}
		if bl.Type != "ByteLevel" {
			return 0, false, fmt.Errorf("pretokenizers[1]: type %q is not supported (want ByteLevel)", bl.Type)
		}
		useRegex, prefix, err := parseByteLevel(s.Pretokenizers[1])
		if err != nil {
			return 0, false, fmt.Errorf("pretokenizers[1]: %w", err)
		}
		if useRegex {
			return 0, false, errors.New("pretokenizers[1]: ByteLevel with use_regex after Split is not supported")
		}
		return mode, prefix, nil
	default:
		return 0, false, fmt.Errorf("type %q is not supported", c.Type)
	}
}

func parseByteLevel(raw json.RawMessage) (useRegex, addPrefixSpace bool, err error) {
	var bl struct {
		AddPrefixSpace bool  `json:"add_prefix_space"`
		UseRegex       *bool `json:"use_regex"`
	}
	if err := decodeJSON(raw, &bl); err != nil {
		return false, false, err
	}
	useRegex = true // Hugging Face's default
	if bl.UseRegex != nil {
		useRegex = *bl.UseRegex
	}
	return useRegex, bl.AddPrefixSpace, nil
}

func parseSplit(raw json.RawMessage) (splitMode, error) {
	var s struct {
		Type    string `json:"type"`
		Pattern struct {
			Regex  *string `json:"Regex"`
			String *string `json:"String"`
		} `json:"pattern"`
		Behavior string `json:"behavior"`
		Invert   bool   `json:"invert"`
	}
	if err := decodeJSON(raw, &s); err != nil {
		return 0, err
	}
	if s.Type != "Split" {
		return 0, fmt.Errorf("type %q is not supported (want Split)", s.Type)
	}
	if s.Behavior != "Isolated" || s.Invert {
		return 0, fmt.Errorf("Split behavior %q invert=%v is not supported (want Isolated, false)", s.Behavior, s.Invert)
	}
	if s.Pattern.Regex == nil {
		return 0, errors.New("Split pattern is not a Regex")
	}
	switch *s.Pattern.Regex {
	case PatternQwen2:
		return splitQwen2, nil
	case PatternLlama3:
		return splitLlama3, nil
	case PatternGPT2:
		return splitGPT2, nil
	default:
		return 0, fmt.Errorf("Split regex %q is not one of the known patterns (Qwen2/3, Llama 3, GPT-2)", *s.Pattern.Regex)
	}
}

// Character classes of the patterns. \s is Unicode White_Space, as in the
// Oniguruma engine Hugging Face's Rust tokenizers use (and as the JavaScript
// port rewrites it).
const (
	clsOther  uint8 = iota // [^\s\p{L}\p{N}]
	clsLetter              // \p{L}
	clsNumber              // \p{N}
	clsSpace               // \s other than \r and \n
	clsNL                  // \r or \n
)

var asciiClass = func() (t [128]uint8) {
	for c := 0; c < 128; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			t[c] = clsLetter
		case c >= '0' && c <= '9':
			t[c] = clsNumber
		case c == '\r' || c == '\n':
			t[c] = clsNL
		case c == ' ', c >= '\t' && c <= '\f':
			t[c] = clsSpace
		default:
			t[c] = clsOther
		}
	}
	return t
}()

// class returns the class of the character at s[i] and its width in bytes
// (0 at the end of s).
func class(s string, i int) (uint8, int) {
	if i >= len(s) {
		return 255, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return clsLetter, w
	case unicode.IsNumber(r):
		return clsNumber, w
	case unicode.Is(unicode.White_Space, r):
		return clsSpace, w
	}
	return clsOther, w
}

// runOf returns the end of the run of characters of classes in mask starting at i.
func runOf(s string, i int, mask uint8) int {
	for i < len(s) {
		c, w := class(s, i)
		if mask&(1<<c) == 0 {
			break
		}
		i += w
	}
	return i
}

const (
	mLetter = 1 << clsLetter
	mNumber = 1 << clsNumber
	mOther  = 1 << clsOther
	mSpace  = 1<<clsSpace | 1<<clsNL
	mNL     = 1 << clsNL
)

func lowerASCII(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// contraction returns the length of a match of 's|'t|'re|'ve|'m|'ll|'d at
// s[i] (s[i] == '\”), or 0. With fold, letters match in either ASCII case:
// the (?i:…) group, folded the way Hugging Face's JavaScript port folds it.
func contraction(s string, i int, fold bool) int {
	if i+1 >= len(s) {
		return 0
	}
	low := func(b byte) byte {
		if fold {
			return lowerASCII(b)
		}
		return b
	}
	switch low(s[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(s) && low(s[i+2]) == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(s) && low(s[i+2]) == 'l' {
			return 3
		}
	}
	return 0
}

// nextPiece returns the end of the pre-token that starts at s[i] (i < len(s))
// under mode. It reproduces the leftmost-first, backtracking semantics of the
// pattern alternative by alternative; see the Pattern constants.
func nextPiece(s string, i int, mode splitMode) int {
	c0, w0 := class(s, i)
	if mode == splitGPT2 {
		return nextPieceGPT2(s, i, c0, w0)
	}
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if s[i] == '\'' {
		if n := contraction(s, i, true); n > 0 {
			return i + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0 == clsLetter {
		return runOf(s, i+w0, mLetter)
	}
	if c0 == clsOther || c0 == clsSpace {
		if c1, w1 := class(s, i+w0); c1 == clsLetter {
			return runOf(s, i+w0+w1, mLetter)
		}
	}
	// \p{N} or \p{N}{1,3}
	if c0 == clsNumber {
		j := i + w0
		if mode == splitLlama3 {
			for k := 0; k < 2; k++ {
				c, w := class(s, j)
				if c != clsNumber {
					break
				}
				j += w
			}
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	if c0 == clsOther {
		return runOf(s, runOf(s, i+w0, mOther), mNL)
	}
	if s[i] == ' ' {
		if c1, w1 := class(s, i+1); c1 == clsOther {
			return runOf(s, runOf(s, i+1+w1, mOther), mNL)
		}
	}
	// What is left starts with whitespace.
	return whitespacePiece(s, i, true)
}

// whitespacePiece matches, at a whitespace character s[i],
// \s*[\r\n]+ (when newlines is set), then \s+(?!\S), then \s+.
func whitespacePiece(s string, i int, newlines bool) int {
	// Scan the whitespace run, remembering the last newline and where the
	// last character starts.
	j, lastNL, lastStart := i, -1, i
	for j < len(s) {
		c, w := class(s, j)
		if c != clsSpace && c != clsNL {
			break
		}
		if c == clsNL {
			lastNL = j
		}
		lastStart = j
		j += w
	}
	// \s*[\r\n]+: \s* gives back characters until a newline can follow; the
	// newline run then ends at the last newline of the whitespace run.
	if newlines && lastNL >= 0 {
		return lastNL + 1
	}
	// \s+(?!\S): the whole run at the end of the text, otherwise all but the
	// last character (which is followed by a non-space), if that leaves any.
	if j == len(s) {
		return j
	}
	if lastStart > i {
		return lastStart
	}
	// \s+
	return j
}

// nextPieceGPT2 runs PatternGPT2 (case-sensitive contractions, an optional
// space before letter, number and other runs).
func nextPieceGPT2(s string, i int, c0 uint8, w0 int) int {
	if s[i] == '\'' {
		if n := contraction(s, i, false); n > 0 {
			return i + n
		}
	}
	start, c, w := i, c0, w0
	if s[i] == ' ' {
		if c1, w1 := class(s, i+1); c1 == clsLetter || c1 == clsNumber || c1 == clsOther {
			start, c, w = i+1, c1, w1
		}
	}
	switch c {
	case clsLetter:
		return runOf(s, start+w, mLetter)
	case clsNumber:
		return runOf(s, start+w, mNumber)
	case clsOther:
		return runOf(s, start+w, mOther)
	}
	return whitespacePiece(s, i, false)
}

// preTokenize calls fn for each pre-token of s, in order.
func preTokenize(s string, mode splitMode, fn func(piece string)) {
	if mode == splitNone {
		if s != "" {
			fn(s)
		}
		return
	}
	for i := 0; i < len(s); {
		j := nextPiece(s, i, mode)
		fn(s[i:j])
		i = j
	}
}
