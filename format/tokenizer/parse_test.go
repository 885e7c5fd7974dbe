package tokenizer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// tinyJSON builds a small byte-level tokenizer.json: the 256 byte tokens,
// the given merges (in order) and added tokens, with the Qwen2 Split.
func tinyJSON(t testing.TB, merges []any, added []AddedToken, extra map[string]any) string {
	t.Helper()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	for _, m := range merges {
		var a, b string
		switch m := m.(type) {
		case string:
			a, b, _ = strings.Cut(m, " ")
		case []string:
			a, b = m[0], m[1]
		}
		if _, ok := vocab[a+b]; !ok {
			vocab[a+b] = len(vocab)
		}
	}
	doc := map[string]any{
		"added_tokens": added,
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": PatternQwen2}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
	for k, v := range extra {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseTiny(t *testing.T) {
	merges := []any{"h e", []string{"l", "l"}, "he ll", []string{"Ġ", "w"}, "o Ġ"}
	added := []AddedToken{
		{ID: 1000, Content: "<s>", Special: true},
		{ID: 1001, Content: "<pad>", Special: true, LStrip: true, RStrip: true},
		{ID: 1002, Content: "é!", Normalized: true}, // matched after NFC
	}
	extra := map[string]any{"post_processor": map[string]any{"type": "TemplateProcessing",
		"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>"}}, map[string]any{"Sequence": map[string]any{"id": "A"}}, map[string]any{"SpecialToken": map[string]any{"id": "<s>"}}},
		"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{1000}}}}}
	tk, err := Parse(strings.NewReader(tinyJSON(t, merges, added, extra)))
	if err != nil {
		t.Fatal(err)
	}
	if tk.VocabSize() != 1003 {
		t.Errorf("VocabSize() = %d, want 1003", tk.VocabSize())
	}
	id := func(s string) int {
		i, ok := tk.TokenID(s)
		if !ok {
			t.Fatalf("TokenID(%q) missing", s)
		}
		return i
	}
	cases := []struct {
		text string
		add  bool
		want []int
	}{
		{"hello", false, []int{id("hell"), 'o'}},
		{"hello", true, []int{1000, id("hell"), 'o', 1000}},
		{" w", false, []int{id("Ġw")}},
		// lstrip/rstrip swallow the spaces around <pad>.
		{"he  <pad>  he", false, []int{id("he"), 1001, id("he")}},
		// "e\u0301!" is NFC "é!", a normalized added token.
		{"e\u0301!", false, []int{1002}},
		{"<s><s>", false, []int{1000, 1000}},
	}
	for _, c := range cases {
		if got := tk.Encode(c.text, c.add); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q, %v) = %v, want %v", c.text, c.add, got, c.want)
		}
	}
	if got := tk.Decode([]int{1000, id("hell"), 'o', 1001, 1002}, true); got != "helloé!" {
		t.Errorf("Decode(skip special) = %q, want %q", got, "helloé!")
	}
}

func TestParseErrors(t *testing.T) {
	base := func(extra map[string]any) string { return tinyJSON(t, []any{"h e"}, nil, extra) }
	cases := map[string]struct {
		doc  string
		want string
	}{
		"unknown regex": {base(map[string]any{"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\w+`}, "behavior": "Isolated"},
			map[string]any{"type": "ByteLevel", "use_regex": false}}}}), "not one of the known patterns"},
		"unigram":           {base(map[string]any{"model": map[string]any{"type": "Unigram"}}), `"Unigram" is not supported`},
		"wordpiece decoder": {base(map[string]any{"decoder": map[string]any{"type": "WordPiece"}}), `"WordPiece" is not supported`},
		"lowercase":         {base(map[string]any{"normalizer": map[string]any{"type": "Lowercase"}}), `"Lowercase" is not supported`},
		"bad merge":         {tinyJSON(t, []any{"h e", "x"}, nil, nil), "merges[1]"},
		"not json":          {"{", "decode json"},
	}
	for name, c := range cases {
		_, err := Parse(strings.NewReader(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse error %v, want one containing %q", name, err, c.want)
		}
	}
	if _, err := Load("no/such/dir"); err == nil {
		t.Error("Load of a missing path succeeded")
	}
}

// TestAddedTokenNormalizedDefault: an added token written without
// "normalized" (or with null) is normalized unless it is special, as the
// reference and transformers' AddedToken default it. The Angstrom sign
// U+212B is NFC "Å" (U+00C5): a normalized token spelled with it matches
// "Å" in the text, and the sign itself after NFC.
func TestAddedTokenNormalizedDefault(t *testing.T) {
	doc := tinyJSON(t, nil, nil, map[string]any{"added_tokens": []any{
		map[string]any{"id": 1000, "content": "\u212b", "special": false},
		map[string]any{"id": 1001, "content": "\u212b!", "special": true},
		map[string]any{"id": 1002, "content": "\u212b?", "special": false, "normalized": nil},
		map[string]any{"id": 1003, "content": "\u212b.", "special": false, "normalized": false},
	}})
	tk, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range tk.AddedTokens() {
		if want := a.ID != 1001 && a.ID != 1003; a.Normalized != want {
			t.Errorf("added token %d %q: Normalized = %v, want %v", a.ID, a.Content, a.Normalized, want)
		}
	}
	// The ids Hugging Face's JavaScript tokenizers give for this file
	// (node, @huggingface/tokenizers 0.2.0); 33 is "!", 46 ".".
	cases := []struct {
		text string
		want []int
	}{
		{"\u00c5", []int{1000}},
		{"\u212b", []int{1000}},
		{"\u00c5?", []int{1002}},
		{"x\u212b?y", []int{'x', 1002, 'y'}},
		// Special, so not normalized: matched on the raw text only.
		{"\u212b!", []int{1001}},
		{"\u00c5!", []int{1000, 33}},
		// "normalized": false, as written.
		{"\u212b.", []int{1003}},
		{"\u00c5.", []int{1000, 46}},
	}
	for _, c := range cases {
		if got := tk.Encode(c.text, false); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

// TestDuplicateMergeLastRankWins: a merge listed twice takes the rank of
// its last entry, as Hugging Face's Rust BPE (a HashMap collected from the
// merges) and its JavaScript port (a Map) give it. With "b c" at ranks 0
// and 2 and "a b" at 1, "abc" merges "a b" first: the reference (node,
// @huggingface/tokenizers 0.2.0) encodes it as ["ab", "c"] in both merge
// spellings.
func TestDuplicateMergeLastRankWins(t *testing.T) {
	for _, merges := range [][]any{
		{"b c", "a b", "b c"},
		{[]string{"b", "c"}, []string{"a", "b"}, []string{"b", "c"}},
	} {
		tk, err := Parse(strings.NewReader(tinyJSON(t, merges, nil, nil)))
		if err != nil {
			t.Fatal(err)
		}
		ab, ok := tk.TokenID("ab")
		if !ok {
			t.Fatal(`no token "ab"`)
		}
		want := []int{ab, 'c'}
		if got := tk.Encode("abc", false); !slices.Equal(got, want) {
			t.Errorf("merges %v: Encode(\"abc\") = %v, want %v", merges, got, want)
		}
		// The slow loop reads the same table; both must agree.
		if got := tk.bpe.encodeWordSlow("abc"); !slices.Equal(got, want) {
			t.Errorf("merges %v: encodeWordSlow(\"abc\") = %v, want %v", merges, got, want)
		}
	}
}

// TestOffsetsReplaceAcrossCharacters: a Replace of several characters
// matches across the segments EncodeWithOffsets normalizes one by one, yet
// its ids must be Encode's: "ab" replaced by "xyz" is x, y, z there, each
// token spanning the "ab" it came from. Where Replaces chain ("a" by "bb",
// then "bc" by "xyz") a match appears only in the normalized text; the ids
// are still Encode's, and every token spans the whole text.
func TestOffsetsReplaceAcrossCharacters(t *testing.T) {
	replace := func(from, to string) map[string]any {
		return map[string]any{"type": "Replace", "pattern": map[string]any{"String": from}, "content": to}
	}
	seq := func(steps ...any) map[string]any { return map[string]any{"type": "Sequence", "normalizers": steps} }
	cases := []struct {
		norm  any
		text  string
		spans []Span
	}{
		{replace("ab", "xyz"), "ab", []Span{{0, 2}, {0, 2}, {0, 2}}},
		{replace("ab", "xyz"), "cab d", []Span{{0, 1}, {1, 3}, {1, 3}, {1, 3}, {3, 4}, {4, 5}}},
		{seq(map[string]any{"type": "NFC"}, replace("ab", "xyz")), "e\u0301ab", []Span{{0, 3}, {0, 3}, {3, 5}, {3, 5}, {3, 5}}},
		{seq(replace("a", "bb"), replace("bc", "xyz")), "ac", []Span{{0, 2}, {0, 2}, {0, 2}, {0, 2}}},
	}
	for _, c := range cases {
		tk, err := Parse(strings.NewReader(tinyJSON(t, nil, nil, map[string]any{"normalizer": c.norm})))
		if err != nil {
			t.Fatal(err)
		}
		want := tk.Encode(c.text, false)
		ids, spans := tk.EncodeWithOffsets(c.text, false)
		if !slices.Equal(ids, want) {
			t.Errorf("%v: EncodeWithOffsets(%q) ids %v, want Encode's %v", c.norm, c.text, ids, want)
			continue
		}
		if !slices.Equal(spans, c.spans) {
			t.Errorf("%v: EncodeWithOffsets(%q) spans %v, want %v", c.norm, c.text, spans, c.spans)
		}
	}
}
