package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"unicode/utf8"
)

// Piece tokenizers: the BPE of SentencePiece-trained models converted to
// tokenizer.json (Gemma 3's). Their vocabulary is spelled in Unicode with
// "▁" (U+2581) for a space, the normalizer turns each space into "▁", BPE
// starts from characters rather than bytes, a character the vocabulary
// lacks is spelled by byte tokens "<0x00>" … "<0xFF>" (byte_fallback), and
// the decoder undoes both: Replace "▁" by " ", ByteFallback, Fuse. Byte-level
// tokenizers (Qwen's, Llama 3's) are the other kind; the decoder says which
// a file is.

// metaspace is the character a piece vocabulary spells a space with.
const metaspace = "▁"

// decoderKind is what a tokenizer.json's decoder makes of tokens.
type decoderKind uint8

const (
	decodeByteLevel decoderKind = iota // ByteLevel: tokens spell bytes
	decodePieces                       // Replace "▁"→" ", ByteFallback, Fuse
)

// parseDecoder accepts the ByteLevel decoder, and the Sequence of Replace
// ("▁" by " "), ByteFallback and Fuse that piece tokenizers use, which may
// end with a Strip of leading spaces (Llama 2's: the one its Prepend
// normalizer put there). strip is how many leading spaces that Strip takes
// from a decoded text.
func parseDecoder(raw json.RawMessage) (kind decoderKind, strip int, err error) {
	const want = `ByteLevel, or a Sequence of Replace "▁" by " ", ByteFallback, Fuse and an optional Strip of leading " "`
	if isNull(raw) {
		return 0, 0, fmt.Errorf("missing; want %s", want)
	}
	var c component
	if err := decodeJSON(raw, &c); err != nil {
		return 0, 0, err
	}
	switch c.Type {
	case "ByteLevel":
		return decodeByteLevel, 0, nil
	case "Sequence":
		var s struct {
			Decoders []json.RawMessage `json:"decoders"`
		}
		if err := decodeJSON(raw, &s); err != nil {
			return 0, 0, err
		}
		var types []string
		for _, d := range s.Decoders {
			var c component
			if err := decodeJSON(d, &c); err != nil {
				return 0, 0, err
			}
			types = append(types, c.Type)
		}
		if seq := strings.Join(types, ","); seq != "Replace,ByteFallback,Fuse" && seq != "Replace,ByteFallback,Fuse,Strip" {
			return 0, 0, fmt.Errorf("Sequence of %s is not supported (want %s)", strings.Join(types, ", "), want)
		}
		from, to, err := parseReplace(s.Decoders[0])
		if err != nil {
			return 0, 0, fmt.Errorf("decoders[0]: %w", err)
		}
		if from != metaspace || to != " " {
			return 0, 0, fmt.Errorf("decoders[0]: Replace of %q by %q is not supported (want %q by \" \")", from, to, metaspace)
		}
		if len(s.Decoders) == 4 {
			if strip, err = parseStrip(s.Decoders[3]); err != nil {
				return 0, 0, fmt.Errorf("decoders[3]: %w", err)
			}
		}
		return decodePieces, strip, nil
	default:
		return 0, 0, fmt.Errorf("type %q is not supported (want %s)", c.Type, want)
	}
}

// parseStrip reads a Strip decoder that takes up to start spaces from the
// front of the decoded text and nothing from its end. After Fuse the
// decoder has one text, so that is the front of the whole decode.
func parseStrip(raw json.RawMessage) (int, error) {
	var s struct {
		Content string `json:"content"`
		Start   int    `json:"start"`
		Stop    int    `json:"stop"`
	}
	if err := decodeJSON(raw, &s); err != nil {
		return 0, err
	}
	if s.Content != " " || s.Stop != 0 || s.Start < 0 {
		return 0, fmt.Errorf("Strip of %q, start %d, stop %d is not supported (want \" \" from the start only)", s.Content, s.Start, s.Stop)
	}
	return s.Start, nil
}

// parsePiecesPreTokenizer accepts what a piece tokenizer may have before
// BPE: none, or a Split on a literal that the normalizer has already
// replaced everywhere (Gemma 3 splits on " " after turning every " " into
// "▁"), which splits nothing.
func parsePiecesPreTokenizer(raw json.RawMessage, n normalizer) error {
	if isNull(raw) {
		return nil
	}
	var s struct {
		Type    string `json:"type"`
		Pattern struct {
			String *string `json:"String"`
		} `json:"pattern"`
		Invert bool `json:"invert"`
	}
	if err := decodeJSON(raw, &s); err != nil {
		return err
	}
	if s.Type == "Split" && !s.Invert && s.Pattern.String != nil && n.removes(*s.Pattern.String) {
		return nil
	}
	return fmt.Errorf("type %q is not supported with the ByteFallback decoder (want none, or a Split on a literal the normalizer replaces)", s.Type)
}

// pieceBytes is the text a piece token decodes to: the byte of "<0xAB>",
// else the token with "▁" read as a space.
func pieceBytes(tok string) []byte {
	if b, ok := fallbackByte(tok); ok {
		return []byte{b}
	}
	return []byte(strings.ReplaceAll(tok, metaspace, " "))
}

// fallbackByte reads a byte token, "<0x" two upper- or lower-case hex
// digits ">".
func fallbackByte(tok string) (byte, bool) {
	if len(tok) != 6 || !strings.HasPrefix(tok, "<0x") || tok[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range []byte(tok[3:5]) {
		switch {
		case c >= '0' && c <= '9':
			b = b<<4 | (c - '0')
		case c >= 'a' && c <= 'f':
			b = b<<4 | (c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			b = b<<4 | (c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return b, true
}

// piecesModel is the BPE of a piece tokenizer: symbols start as the
// characters of the normalized text.
type piecesModel struct {
	merges       pairTable
	vocab        map[string]int32 // the model's vocabulary (not the added tokens), by spelling
	ascii        [utf8.RuneSelf]int32
	fallback     [256]int32 // the token "<0xAB>" of each byte, or -1
	byteFallback bool
	unk          int32 // the unknown token, or -1
	fuseUnk      bool  // unknown characters in a row make one unknown token
	ignoreMerges bool  // a whole pre-token in the vocabulary is taken as is
	cache        *wordCache
	// cuts says encodeWord may cut a text before a "▁": the vocabulary has
	// "▁" as a token and ignore_merges is off (with it, the whole text
	// found in the vocabulary is one token). beforeSpace holds each
	// character that some token has right before a "▁", where it may not.
	cuts        bool
	beforeSpace map[rune]bool
}

// readPieces fills the tables of a piece tokenizer from its vocabulary:
// each token's spelling, and the text it decodes to.
func (t *Tokenizer) readPieces(m *modelJSON, vocab map[string]int32, entries []vocabEntry) error {
	t.spell = make([]string, t.size)
	for _, e := range entries {
		if prev := t.spell[e.id]; prev != "" {
			a, b := min(prev, e.tok), max(prev, e.tok)
			return fmt.Errorf("model.vocab: tokens %q and %q have the same id %d; each token needs an id of its own", a, b, e.id)
		}
		t.spell[e.id] = e.tok
		t.tokBytes[e.id] = pieceBytes(e.tok)
	}
	p := &piecesModel{vocab: maps.Clone(vocab), unk: -1, fuseUnk: m.FuseUnk, ignoreMerges: m.IgnoreMerges, cache: newWordCache(1 << 16)}
	var err error
	if p.merges, err = buildMerges(vocab, m.Merges); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	for c := range p.ascii {
		p.ascii[c] = -1
		if id, ok := vocab[string(rune(c))]; ok {
			p.ascii[c] = id
		}
	}
	p.byteFallback = m.ByteFallback
	for b := range p.fallback {
		p.fallback[b] = -1
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			p.fallback[b] = id
		}
	}
	if m.UnkToken != nil {
		id, ok := vocab[*m.UnkToken]
		if !ok {
			return fmt.Errorf("model: unk_token %q is not in the vocabulary", *m.UnkToken)
		}
		p.unk = id
	}
	_, hasSpace := vocab[metaspace]
	p.cuts = hasSpace && !p.ignoreMerges
	p.beforeSpace = map[rune]bool{}
	for tok := range vocab {
		for i := 1; i < len(tok); i++ {
			if strings.HasPrefix(tok[i:], metaspace) {
				if r, _ := utf8.DecodeLastRuneInString(tok[:i]); r != '▁' {
					p.beforeSpace[r] = true
				}
			}
		}
	}
	if !p.byteFallback && p.unk < 0 {
		return errors.New("model: neither byte_fallback nor an unk_token, so a character the vocabulary lacks could not be encoded")
	}
	t.pieces = p
	return nil
}

// encodeWord appends the tokens of one pre-token (normalized text) to out.
// lens, when not nil, gets the bytes of word each token covers.
//
// A piece tokenizer has no pre-tokenizer to cut a text into words, so a
// whole text between added tokens is one pre-token, which BPE would take in
// one piece, and no word cache would help. But no merge can cross a point
// where no token does: before a "▁" that follows a character c whose
// token is c itself, when no token of the vocabulary holds c followed by
// "▁" (Gemma 3's one such token is ">▁</"). A merge there would make a
// token holding c"▁". So the text is cut at those points (cutsBefore) and
// each piece encoded on its own, with the same result (BPE merges within
// each piece in the order it would merge them in the whole) and most
// pieces, words with their leading "▁", met again in the cache.
func (p *piecesModel) encodeWord(word string, out []int, lens *[]int32) []int {
	if !p.cuts || len(word) <= maxCachedWord {
		return p.encodePiece(word, out, lens)
	}
	start := 0
	for i := 1; i < len(word); i++ {
		if word[i] == metaspace[0] && strings.HasPrefix(word[i:], metaspace) && p.cutsBefore(word[:i]) {
			out = p.encodePiece(word[start:i], out, lens)
			start = i
		}
	}
	return p.encodePiece(word[start:], out, lens)
}

// cutsBefore reports whether BPE can merge nothing across the end of
// before, where a "▁" follows: its last character is its own token, not
// "▁", and no token holds it followed by "▁".
func (p *piecesModel) cutsBefore(before string) bool {
	r, w := utf8.DecodeLastRuneInString(before)
	if r == utf8.RuneError && w <= 1 || strings.HasSuffix(before, metaspace) || p.beforeSpace[r] {
		return false
	}
	if w == 1 {
		return p.ascii[before[len(before)-1]] >= 0
	}
	_, known := p.vocab[before[len(before)-w:]]
	return known
}

// encodePiece is encodeWord without the cuts.
//
// Each character is a symbol: its token, else (byte_fallback) the tokens
// of its bytes when the vocabulary has them all, else the unknown token
// (one for a run of such characters with fuse_unk), else nothing, as the
// reference drops it. Then the BPE loop merges them (pairTable.mergeList).
func (p *piecesModel) encodePiece(word string, out []int, lens *[]int32) []int {
	if word == "" {
		return out
	}
	if p.ignoreMerges {
		if id, ok := p.vocab[word]; ok {
			if lens != nil {
				*lens = append(*lens, int32(len(word)))
			}
			return append(out, int(id))
		}
	}
	cached := lens == nil && p.cache != nil && len(word) <= maxCachedWord
	var slot uint64
	if cached {
		var e *cacheEntry
		if e, slot = p.cache.get(word); e != nil {
			for _, id := range e.ids {
				out = append(out, int(id))
			}
			return out
		}
	}
	sym := make([]int32, 0, len(word))
	var symLens []int32
	if lens != nil {
		symLens = make([]int32, 0, len(word))
	}
	push := func(id int32, n int) {
		sym = append(sym, id)
		if lens != nil {
			symLens = append(symLens, int32(n))
		}
	}
	lastUnk := false
	for i := 0; i < len(word); {
		var id int32 = -1
		w := 1
		if c := word[i]; c < utf8.RuneSelf {
			id = p.ascii[c]
		} else {
			_, w = utf8.DecodeRuneInString(word[i:])
			if v, ok := p.vocab[word[i:i+w]]; ok {
				id = v
			}
		}
		ch := word[i : i+w]
		i += w
		if id >= 0 {
			push(id, w)
			lastUnk = false
			continue
		}
		if p.byteFallback && p.hasBytes(ch) {
			for k := 0; k < len(ch); k++ {
				push(p.fallback[ch[k]], 1)
			}
			lastUnk = false
			continue
		}
		if p.unk < 0 {
			continue
		}
		if p.fuseUnk && lastUnk {
			if lens != nil {
				symLens[len(symLens)-1] += int32(w)
			}
			continue
		}
		push(p.unk, w)
		lastUnk = true
	}
	if len(sym) == 0 {
		return out
	}
	n := len(out)
	var got []int32
	if lens != nil {
		got = *lens
	}
	out, got = p.merges.mergeList(sym, symLens, out, got)
	if lens != nil {
		*lens = got
	}
	if cached {
		p.cache.put(slot, word, out[n:])
	}
	return out
}

// hasAllBytes reports whether each of the 256 bytes has its byte token,
// so that byte_fallback spells every character the vocabulary lacks.
func (p *piecesModel) hasAllBytes() bool {
	for _, id := range p.fallback {
		if id < 0 {
			return false
		}
	}
	return true
}

// hasBytes reports whether every byte of ch has its byte token.
func (p *piecesModel) hasBytes(ch string) bool {
	for k := 0; k < len(ch); k++ {
		if p.fallback[ch[k]] < 0 {
			return false
		}
	}
	return true
}
