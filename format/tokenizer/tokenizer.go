package tokenizer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hone-rl/hone/format/internal/tokconfig"
)

// AddedToken is one entry of tokenizer.json's "added_tokens".
type AddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// Tokenizer encodes text to token ids and decodes ids to text. Apart from
// its atomically updated word cache and whole table it is immutable after
// Load; it is safe for concurrent use.
type Tokenizer struct {
	norm      normalizer
	split     splitMode // pre-tokenizer pattern
	prefixSp  bool      // ByteLevel add_prefix_space
	bpe       bpeModel
	added     []AddedToken
	addedByID map[int]int // id → index into added
	rawSplit  *trie       // added tokens matched on the raw text (normalized=false, or no normalizer)
	normSplit *trie       // added tokens matched after normalization (normalized=true)
	vocabStr  map[string]int32
	tokBytes  [][]byte     // id → raw bytes of a model token (of an added token too, for pieces); nil for holes and byte-level added tokens
	pieces    *piecesModel // the BPE of a piece tokenizer (pieces.go); nil for byte-level ones
	spell     []string     // id → the token as tokenizer.json spells it, for pieces only
	special   []bool       // id → special added token
	isAdded   []bool       // id → added token
	prefix    []int        // ids the post-processor puts before a sequence
	suffix    []int        // ids it puts after
	strip     int          // leading spaces the decoder's Strip takes from a decoded text
	size      int
}

// FileName is the tokenizer's file in a model folder (FileName+".gz" when
// compressed, as testdata keeps them).
const FileName = "tokenizer.json"

// Load reads a tokenizer from path: a tokenizer.json file (optionally
// gzip-compressed), or a directory holding tokenizer.json or tokenizer.json.gz.
// A directory's tokenizer_config.json, when there is one, decides which
// special tokens Encode adds for the classes that rebuild the
// post-processor from add_bos_token and add_eos_token (ConfigFile,
// flagClass), as transformers loads the folder, with the bos_token and
// eos_token of special_tokens_map.json in a folder saved before
// transformers 4.34 (format/internal/tokconfig); a file path is read alone.
func Load(path string) (*Tokenizer, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	cfgPath := ""
	if fi.IsDir() {
		dir := path
		cfgPath = filepath.Join(dir, ConfigFile)
		path = filepath.Join(dir, FileName)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			path = filepath.Join(dir, FileName+".gz")
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("tokenizer: %s holds no %s (nor %s.gz): %w", dir, FileName, FileName, err)
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	defer f.Close()
	t, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if cfgPath == "" {
		return t, nil
	}
	// The config with special_tokens_map.json applied, as transformers
	// loads an old folder's pair (tokconfig).
	cfg, err := tokconfig.Read(cfgPath, filepath.Join(filepath.Dir(cfgPath), SpecialTokensMapFile))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if cfg == nil {
		return t, nil
	}
	if err := t.applyConfig(cfg); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", cfgPath, err)
	}
	return t, nil
}

// Parse reads a tokenizer.json document (plain or gzip-compressed) from r.
func Parse(r io.Reader) (*Tokenizer, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	f, ok := readFast(data)
	if !ok {
		if f, err = decodeJSONFile(data); err != nil {
			return nil, err
		}
	}
	return build(f)
}

// decodeJSONFile decodes a tokenizer.json document with encoding/json: the
// documents readFast does not accept, and its oracle in the tests. Like
// json.Decoder, it reads the first JSON value and ignores what follows.
func decodeJSONFile(data []byte) (*fileJSON, error) {
	var f fileJSON
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&f); err != nil {
		return nil, fmt.Errorf("decode json: %w", plainJSONError(err))
	}
	return &f, nil
}

type fileJSON struct {
	AddedTokens   []addedJSON     `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         modelJSON       `json:"model"`
}

type modelJSON struct {
	Type                    string            `json:"type"`
	Dropout                 *float64          `json:"dropout"`
	UnkToken                *string           `json:"unk_token"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	ByteFallback            bool              `json:"byte_fallback"`
	FuseUnk                 bool              `json:"fuse_unk"`
	IgnoreMerges            bool              `json:"ignore_merges"`
	Vocab                   map[string]idJSON `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`

	// The vocabulary as readFast reads it, instead of Vocab: in file order
	// and as a map.
	entries []vocabEntry
	ids     map[string]int32
}

// vocabEntry is a vocabulary token and its id, checked to be one.
type vocabEntry struct {
	tok string
	id  int32
}

// vocabIDs returns the vocabulary as token → id and as a list, every id
// checked to be one (in 0 … MaxInt32); the map has room for extra more
// entries. When several ids are not, the one named is the token first in
// string order, so that the message is the same on every run.
func (m *modelJSON) vocabIDs(extra int) (map[string]int32, []vocabEntry, error) {
	if m.ids != nil {
		return m.ids, m.entries, nil
	}
	var bad string
	var found bool
	for tok, id := range m.Vocab {
		if !id.ok() && (!found || tok < bad) {
			bad, found = tok, true
		}
	}
	if found {
		return nil, nil, badID("model.vocab: token", bad, m.Vocab[bad])
	}
	ids := make(map[string]int32, len(m.Vocab)+extra)
	entries := make([]vocabEntry, 0, len(m.Vocab))
	for tok, id := range m.Vocab {
		ids[tok] = int32(id.n)
		entries = append(entries, vocabEntry{tok, int32(id.n)})
	}
	return ids, entries, nil
}

// component is the part of every normalizer, pre-tokenizer, post-processor
// and decoder object that the parser dispatches on.
type component struct {
	Type string `json:"type"`
}

func isNull(m json.RawMessage) bool {
	s := bytes.TrimSpace(m)
	return len(s) == 0 || string(s) == "null"
}

func build(f *fileJSON) (*Tokenizer, error) {
	t := &Tokenizer{}
	var err error
	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	kind, strip, err := parseDecoder(f.Decoder)
	if err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	t.strip = strip
	if kind == decodePieces {
		err = parsePiecesPreTokenizer(f.PreTokenizer, t.norm)
	} else {
		t.split, t.prefixSp, err = parsePreTokenizer(f.PreTokenizer)
	}
	if err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}

	m := &f.Model
	if m.Type != "BPE" && m.Type != "" {
		return nil, fmt.Errorf("model: type %q is not supported (only BPE)", m.Type)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, fmt.Errorf("model: BPE dropout %v is not supported", *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" ||
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, errors.New("model: continuing_subword_prefix/end_of_word_suffix are not supported")
	}
	if m.ByteFallback && kind != decodePieces {
		return nil, errors.New("model: byte_fallback needs the decoder that reads byte tokens (a Sequence of Replace \"▁\" by \" \", ByteFallback and Fuse)")
	}

	// Size the id space over the model vocabulary and the added tokens,
	// once every id is known to be sane.
	vocab, entries, err := m.vocabIDs(len(f.AddedTokens))
	if err != nil {
		return nil, err
	}
	size, err := idSpace(vocab, f.AddedTokens)
	if err != nil {
		return nil, err
	}
	t.size = size
	t.tokBytes = make([][]byte, size)
	t.special = make([]bool, size)
	t.isAdded = make([]bool, size)
	t.vocabStr = vocab // the added tokens join it below

	if kind == decodePieces {
		if err := t.readPieces(m, vocab, entries); err != nil {
			return nil, err
		}
	} else {
		byRaw, err := t.readVocab(entries)
		if err != nil {
			return nil, err
		}
		if err := t.bpe.init(byRaw, t.vocabStr, m.Merges, m.IgnoreMerges); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		t.bpe.cache = newWordCache(1 << 16)
	}

	// Added tokens. An entry may repeat a vocabulary entry or an earlier
	// added token, with the same id and content, as Hugging Face's files
	// often do; an id given to two different tokens is refused, since
	// decoding it would give one token's text for the other.
	t.addedByID = make(map[int]int, len(f.AddedTokens))
	var raw, normed []string
	rawIdx, normIdx := map[string]int{}, map[string]int{}
	for _, aj := range f.AddedTokens {
		a := aj.token()
		if a.Content == "" {
			return nil, fmt.Errorf("added_tokens: id %d has empty content", a.ID)
		}
		if other, ok := t.idOwner(a.ID); ok && other != a.Content && string(t.tokBytes[a.ID]) != a.Content {
			return nil, fmt.Errorf("added_tokens: %q has id %d, which is already the id of %q; give it an id of its own", a.Content, a.ID, other)
		}
		i := len(t.added)
		t.added = append(t.added, a)
		t.addedByID[a.ID] = i
		t.isAdded[a.ID] = true
		t.special[a.ID] = a.Special
		t.tokBytes[a.ID] = nil
		if t.pieces != nil {
			// The reference runs the decoder over added tokens too:
			// Gemma's "▁▁" decodes to two spaces.
			t.spell[a.ID] = a.Content
			t.tokBytes[a.ID] = pieceBytes(a.Content)
		}
		t.vocabStr[a.Content] = int32(a.ID)
		if a.Normalized && t.norm != nil {
			c := t.norm.apply(a.Content)
			normed = append(normed, c)
			normIdx[c] = i
		} else {
			raw = append(raw, a.Content)
			rawIdx[a.Content] = i
		}
	}
	t.rawSplit = newTrie(raw, rawIdx)
	t.normSplit = newTrie(normed, normIdx)

	if err := t.parsePostProcessor(f.PostProcessor); err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	return t, nil
}

// readVocab fills the tables with the model vocabulary, keeping the raw
// bytes behind each byte-level spelling, and returns the raw bytes → id
// map BPE works on. Two tokens with one id are refused, naming both (the
// pair first in string order, so the message is the same on every run).
//
// The raw bytes of all tokens share one block, and the map's keys one
// string: two allocations rather than two for each of 151k tokens.
func (t *Tokenizer) readVocab(vocab []vocabEntry) (map[string]int32, error) {
	ends := make([]int, len(vocab))      // where each token's bytes end in raw
	raw := make([]byte, 0, 8*len(vocab)) // Qwen3's tokens average 6.6 bytes
	for i, e := range vocab {
		var ok bool
		if raw, ok = appendUnmapped(raw, e.tok); !ok {
			return nil, fmt.Errorf("model.vocab: token %q (id %d) is not a byte-level string", e.tok, e.id)
		}
		ends[i] = len(raw)
	}
	keys := string(raw)
	// Distinct spellings have distinct bytes (the ByteLevel table is one to
	// one), so every token adds a key.
	byRaw := make(map[string]int32, len(vocab))
	var dup bool
	var dupA, dupB string
	var dupID int32
	// A bit per id says which ids are taken, rather than reading tokBytes
	// before writing it: the first read of a fresh page maps the zero page
	// and the write then faults the page in again (900 pages for Qwen3).
	taken := make([]uint64, (len(t.tokBytes)+63)/64)
	start := 0
	for i, e := range vocab {
		end := ends[i]
		word, bit := e.id/64, uint64(1)<<(e.id%64)
		if taken[word]&bit != 0 {
			prev := t.tokBytes[e.id]
			a, b := min(e.tok, mapByteLevel(prev)), max(e.tok, mapByteLevel(prev))
			if !dup || a < dupA || a == dupA && b < dupB {
				dup, dupA, dupB, dupID = true, a, b, e.id
			}
		}
		taken[word] |= bit
		t.tokBytes[e.id] = raw[start:end:end]
		byRaw[keys[start:end]] = e.id
		start = end
	}
	if dup {
		return nil, fmt.Errorf("model.vocab: tokens %q and %q have the same id %d; each token needs an id of its own", dupA, dupB, dupID)
	}
	return byRaw, nil
}

// idOwner returns the token id already stands for while the tables are
// being filled: an added token's content or a vocabulary entry's spelling.
func (t *Tokenizer) idOwner(id int) (string, bool) {
	if i, ok := t.addedByID[id]; ok {
		return t.added[i].Content, true
	}
	if t.pieces != nil {
		return t.spell[id], t.spell[id] != ""
	}
	if b := t.tokBytes[id]; b != nil {
		return mapByteLevel(b), true
	}
	return "", false
}

// VocabSize is one more than the largest token id (model vocabulary and added
// tokens together). Model embeddings are often padded beyond it.
func (t *Tokenizer) VocabSize() int { return t.size }

// TokenID returns the id of a token given as it is spelled in tokenizer.json:
// an added token's content (e.g. "<|im_start|>") or a vocabulary entry in its
// byte-level spelling (e.g. "Ġthe").
func (t *Tokenizer) TokenID(s string) (int, bool) {
	id, ok := t.vocabStr[s]
	return int(id), ok
}

// Token returns the tokenizer.json spelling of id (added token content, the
// byte-level spelling of a vocabulary entry, or a piece token as the file
// spells it, "▁the" or "<0x0A>").
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= t.size {
		return "", false
	}
	if i, ok := t.addedByID[id]; ok {
		return t.added[i].Content, true
	}
	if t.pieces != nil {
		return t.spell[id], t.spell[id] != ""
	}
	if b := t.tokBytes[id]; b != nil {
		return mapByteLevel(b), true
	}
	return "", false
}

// TokenBytes returns the raw bytes id stands for: the UTF-8 content of an added
// token, or the bytes of a vocabulary entry (possibly part of a character).
// For a piece tokenizer these are what the decoder makes of the token: a
// space for "▁", one byte for "<0xAB>".
func (t *Tokenizer) TokenBytes(id int) ([]byte, bool) {
	if id < 0 || id >= t.size {
		return nil, false
	}
	if i, ok := t.addedByID[id]; ok && t.pieces == nil {
		return []byte(t.added[i].Content), true
	}
	if b := t.tokBytes[id]; b != nil {
		return append([]byte(nil), b...), true
	}
	return nil, false
}

// IsSpecial reports whether id is an added token marked special (these are
// dropped by Decode with skipSpecial).
func (t *Tokenizer) IsSpecial(id int) bool {
	return id >= 0 && id < t.size && t.special[id]
}

// AddedTokens returns a copy of the added tokens, sorted by id.
func (t *Tokenizer) AddedTokens() []AddedToken {
	out := append([]AddedToken(nil), t.added...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// parsePostProcessor accepts ByteLevel (no effect on ids), TemplateProcessing
// and Sequences of them, and records the ids a single sequence is wrapped in.
func (t *Tokenizer) parsePostProcessor(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c component
	if err := decodeJSON(raw, &c); err != nil {
		return err
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		var s struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := decodeJSON(raw, &s); err != nil {
			return err
		}
		for i, p := range s.Processors {
			if err := t.parsePostProcessor(p); err != nil {
				return fmt.Errorf("processors[%d]: %w", i, err)
			}
		}
		return nil
	case "TemplateProcessing":
		var tp struct {
			Single []struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			} `json:"single"`
			SpecialTokens map[string]struct {
				IDs []idJSON `json:"ids"`
			} `json:"special_tokens"`
		}
		if err := decodeJSON(raw, &tp); err != nil {
			return err
		}
		if len(t.prefix)+len(t.suffix) > 0 {
			return errors.New("more than one TemplateProcessing")
		}
		seen := false
		for i, p := range tp.Single {
			switch {
			case p.Sequence != nil:
				if seen {
					return fmt.Errorf("single[%d]: second sequence", i)
				}
				seen = true
			case p.SpecialToken != nil:
				st, ok := tp.SpecialTokens[p.SpecialToken.ID]
				if !ok {
					return fmt.Errorf("single[%d]: special token %q not in special_tokens", i, p.SpecialToken.ID)
				}
				for _, id := range st.IDs {
					if !id.ok() || id.n >= int64(t.size) {
						return fmt.Errorf("single[%d]: special token %q has id %s, not one of the file's ids (0 to %d)", i, p.SpecialToken.ID, id, t.size-1)
					}
					if seen {
						t.suffix = append(t.suffix, int(id.n))
					} else {
						t.prefix = append(t.prefix, int(id.n))
					}
				}
			default:
				return fmt.Errorf("single[%d]: neither SpecialToken nor Sequence", i)
			}
		}
		if !seen {
			return errors.New("single has no Sequence")
		}
		return nil
	default:
		return fmt.Errorf("type %q is not supported", c.Type)
	}
}

// splitMerge reads one merges entry, spelled "a b" or ["a","b"]. The parts
// may be slices of raw.
func splitMerge(raw json.RawMessage) (a, b []byte, err error) {
	s := bytes.TrimSpace(raw)
	if a, b, ok := splitMergeFast(s); ok {
		return a, b, nil
	}
	if len(s) > 0 && s[0] == '"' {
		var str string
		if err := decodeJSON(s, &str); err != nil {
			return nil, nil, err
		}
		a, b, ok := strings.Cut(str, " ")
		if !ok || a == "" || b == "" || strings.Contains(b, " ") {
			return nil, nil, fmt.Errorf("merge %q is not two space-separated parts", str)
		}
		return []byte(a), []byte(b), nil
	}
	var pair []string
	if err := decodeJSON(s, &pair); err != nil {
		return nil, nil, err
	}
	if len(pair) != 2 {
		return nil, nil, fmt.Errorf("merge %s has %d parts, want 2", s, len(pair))
	}
	return []byte(pair[0]), []byte(pair[1]), nil
}

// splitMergeFast handles the entries without escapes, which are nearly all,
// without the reflection of json.Unmarshal (it dominates loading otherwise).
func splitMergeFast(s []byte) (a, b []byte, ok bool) {
	if bytes.IndexByte(s, '\\') >= 0 || len(s) < 2 {
		return nil, nil, false
	}
	if s[0] == '"' && s[len(s)-1] == '"' {
		pa, pb, found := bytes.Cut(s[1:len(s)-1], []byte(" "))
		if !found || len(pa) == 0 || len(pb) == 0 || bytes.IndexByte(pb, ' ') >= 0 || bytes.IndexByte(pb, '"') >= 0 || bytes.IndexByte(pa, '"') >= 0 {
			return nil, nil, false
		}
		return pa, pb, true
	}
	if s[0] != '[' || s[len(s)-1] != ']' {
		return nil, nil, false
	}
	// ["a","b"] with optional white space around the parts.
	var parts [2][]byte
	rest := s[1 : len(s)-1]
	for k := 0; k < 2; k++ {
		rest = bytes.TrimSpace(rest)
		if len(rest) == 0 || rest[0] != '"' {
			return nil, nil, false
		}
		end := bytes.IndexByte(rest[1:], '"')
		if end < 0 {
			return nil, nil, false
		}
		parts[k] = rest[1 : 1+end]
		rest = bytes.TrimSpace(rest[2+end:])
		if k == 0 {
			if len(rest) == 0 || rest[0] != ',' {
				return nil, nil, false
			}
			rest = rest[1:]
		}
	}
	if len(rest) != 0 {
		return nil, nil, false
	}
	return parts[0], parts[1], true
}
