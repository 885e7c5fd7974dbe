package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkContinuationCuts cuts text at each token boundary of ref, the
// reference's ids of the whole text, that is a pre-token boundary too
// (pieceCut), where prev, the text before the cut,
// encodes on its own as ref's ids before it, and requires
// EncodeContinuation(prev, rest) to be ref's ids after it. It returns the
// cuts checked and, of those, the cuts where Encode(rest) differs, where a
// text after prev is not one of its own; ok is false where one disagreed.
func checkContinuationCuts(t *testing.T, tk *Tokenizer, text string, ref []int) (cuts, differ int, ok bool) {
	t.Helper()
	ok = true
	ids, spans := tk.EncodeWithOffsets(text, false)
	if !slices.Equal(ids, ref) {
		t.Fatalf("Encode(%+q) is not the reference's", text)
	}
	for k := 1; k < len(spans); k++ {
		p := spans[k].Start
		if spans[k-1].End != p || p <= 0 || p >= len(text) || !utf8.RuneStart(text[p]) || !pieceCut(tk, text, p) {
			continue
		}
		prev, rest := text[:p], text[p:]
		if !slices.Equal(tk.Encode(prev, false), ref[:k]) {
			continue
		}
		cuts++
		if got := tk.EncodeContinuation(prev, rest); !slices.Equal(got, ref[k:]) {
			t.Errorf("EncodeContinuation(%+q, %+q):\n got  %v\n want %v (the reference's ids of the whole text from there)", prev, rest, got, ref[k:])
			ok = false
		}
		if !slices.Equal(tk.Encode(rest, false), ref[k:]) {
			differ++
		}
	}
	return cuts, differ, ok
}

// pieceCut reports whether byte p of text is where the pre-tokenizer
// starts a piece (a Split's, or a section's between added tokens): a token
// boundary elsewhere, inside a piece, may move when the text is cut there
// ("√(" then "x" in the whole text, "(x" in the text cut before "(").
// Without a Split every token boundary is one. A section the normalizer
// changes is passed over, its pieces being where offsets no longer say.
func pieceCut(tk *Tokenizer, text string, p int) bool {
	secs := []section{{text, -1, 0}}
	if !tk.rawSplit.empty() {
		secs = tk.rawSplit.split(text, tk.added, nil)
	}
	for _, sec := range secs {
		end := sec.start + len(sec.text)
		if p <= sec.start || p >= end {
			continue
		}
		if tk.split == splitNone {
			return true
		}
		if tk.norm != nil && !tk.norm.isIdentity(sec.text) {
			return false
		}
		for i := 0; i < len(sec.text); i = nextPiece(sec.text, i, tk.split) {
			if sec.start+i == p {
				return true
			}
		}
		return false
	}
	return true
}

// TestEncodeContinuationGolden: on the real tokenizer files, the texts of
// the golden files cut at the reference's token boundaries give, after the
// cut, the reference's ids of the whole text. On Llama 2's kind (Prepend
// "▁") many of those cuts differ from the rest encoded on its own; on the
// byte-level ones (no prefix space) none may.
func TestEncodeContinuationGolden(t *testing.T) {
	for _, name := range append(slices.Clone(goldenNames), "gemma3") {
		t.Run(name, func(t *testing.T) {
			var tk *Tokenizer
			if name == "gemma3" {
				tk, _ = gemmaTokenizer(t)
			} else {
				tk = testTokenizer(t, name)
			}
			g := readGolden(t, name)
			dropJSOnly(tk, g)
			cuts, differ := 0, 0
			for _, c := range g.Cases {
				n, d, _ := checkContinuationCuts(t, tk, c.Text, c.IDsNoSpecial)
				cuts, differ = cuts+n, differ+d
			}
			t.Logf("%d cuts, %d where the rest encoded alone differs", cuts, differ)
			if cuts < 100 {
				t.Errorf("only %d cuts checked", cuts)
			}
			if name == "llama2" && differ < cuts/4 {
				t.Errorf("%d of %d cuts differ from the rest encoded alone: the Prepend normalizer's \"▁\" should make most differ", differ, cuts)
			}
			if name != "llama2" && differ > 0 {
				t.Errorf("%d of %d cuts differ from the rest encoded alone, on a tokenizer that puts nothing before a text", differ, cuts)
			}
		})
	}
}

// checkJoin requires Encode(prev) followed by EncodeContinuation(prev, text)
// to be Encode(prev+text), for a boundary no token crosses, and returns
// the continuation's ids.
func checkJoin(t *testing.T, tk *Tokenizer, prev, text string) []int {
	t.Helper()
	got := append(tk.Encode(prev, false), tk.EncodeContinuation(prev, text)...)
	if want := tk.Encode(prev+text, false); !slices.Equal(got, want) {
		t.Errorf("Encode(%q) + EncodeContinuation(%q, %q) = %v, want Encode(%q) = %v", prev, prev, text, got, prev+text, want)
	}
	return tk.EncodeContinuation(prev, text)
}

// TestEncodeContinuationPrepend: with a Prepend normalizer, a text after
// plain text gets no "▁"; after an added token, or after nothing, it
// starts a section, and gets it, as in the whole text.
func TestEncodeContinuationPrepend(t *testing.T) {
	doc := llama2Form(t, tinyPiecesJSON(t, "ab", [][2]string{{"▁", "a"}, {"▁", "b"}}, true, nil), func(m map[string]any) {
		m["added_tokens"] = []AddedToken{{ID: 0, Content: "<unk>", Special: true}, {ID: 999, Content: "<s>", Special: true}}
		delete(m["model"].(map[string]any)["vocab"].(map[string]any), "<s>")
		m["model"].(map[string]any)["vocab"].(map[string]any)["<s>"] = 999.0
	})
	tk, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int {
		v, ok := tk.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return v
	}
	for _, c := range []struct {
		prev, text string
		want       []int
	}{
		{"a", "b", []int{id("b")}},
		{"a", " b", []int{id("▁b")}},
		{"a", "b<s>a", []int{id("b"), 999, id("▁a")}},
		{"<s>", "b", []int{id("▁b")}},
		{"a<s>", "b", []int{id("▁b")}},
		{"", "b", []int{id("▁b")}},
		{"a", "<s>b", []int{999, id("▁b")}},
	} {
		if got := checkJoin(t, tk, c.prev, c.text); !slices.Equal(got, c.want) {
			t.Errorf("EncodeContinuation(%q, %q) = %v, want %v", c.prev, c.text, got, c.want)
		}
	}
	if got, want := tk.EncodeContinuation("a", "b"), tk.Encode("b", false); slices.Equal(got, want) {
		t.Errorf("test premise: Encode(%q) = %v should start with the Prepend's \"▁\"", "b", want)
	}
}

// TestEncodeContinuationByteLevelPrefix: ByteLevel's add_prefix_space puts
// a space before a text, without a Split before it (use_regex true or
// false), but not before a text that continues plain text; after an added
// token, raw or matched after normalization, the text starts again and
// gets it. With a Split before it, ByteLevel puts one before every piece,
// in the whole text too.
func TestEncodeContinuationByteLevelPrefix(t *testing.T) {
	byteLevel := func(useRegex bool) map[string]any {
		return map[string]any{"type": "ByteLevel", "add_prefix_space": true, "use_regex": useRegex}
	}
	split := map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": PatternQwen2}, "behavior": "Isolated", "invert": false},
		byteLevel(false),
	}}
	merges := []any{"h e", "l l", "he ll", "Ġ h", "Ġh e", "Ġ w"}
	added := []AddedToken{{ID: 1000, Content: "<s>", Special: true}, {ID: 1001, Content: "é!", Normalized: true}}
	for _, c := range []struct {
		name     string
		pre      any
		cases    [][2]string // prev, text whose continuation has no prefix space
		prefixed [][2]string // prev, text whose continuation has one
	}{
		{"use_regex", byteLevel(true), [][2]string{{"hell", "o!"}, {"w", "he"}, {"e\u0301! w", "he"}}, [][2]string{{"<s>", "he"}, {"wé!", "he"}, {"", "he"}}},
		{"no regex", byteLevel(false), [][2]string{{"hell", "o!"}, {"w", "he"}}, [][2]string{{"<s>", "he"}, {"wé!", "he"}, {"", "he"}}},
		{"split", split, nil, [][2]string{{"hell", " o!"}, {"w", ".he"}, {"<s>", "he"}, {"wé!", "he"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk, err := Parse(strings.NewReader(tinyJSON(t, merges, added, map[string]any{"pre_tokenizer": c.pre})))
			if err != nil {
				t.Fatal(err)
			}
			for _, pt := range c.cases {
				got := checkJoin(t, tk, pt[0], pt[1])
				if want := tk.EncodeOrdinary(pt[1]); slices.Equal(got, want) {
					t.Errorf("EncodeContinuation(%q, %q) = %v, the text on its own, with the prefix space", pt[0], pt[1], got)
				}
			}
			for _, pt := range c.prefixed {
				if got, want := checkJoin(t, tk, pt[0], pt[1]), tk.Encode(pt[1], false); !slices.Equal(got, want) {
					t.Errorf("EncodeContinuation(%q, %q) = %v, want Encode(%q) = %v, with its prefix space", pt[0], pt[1], got, pt[1], want)
				}
			}
		})
	}
}

// FuzzEncodeContinuation: on the llama2 package's tokenizer, wherever
// prev's own ids begin Encode(prev+text) and the next token starts at the
// boundary, EncodeContinuation gives the rest of Encode(prev+text).
func FuzzEncodeContinuation(f *testing.F) {
	for _, s := range [][2]string{{"<s>[INST] Hi [/INST]", "]] ok</s>"}, {"a", " b"}, {"<s>", "x"}, {"Hello", ", world"}, {"x\n", "\ny"}} {
		f.Add(s[0], s[1])
	}
	tk := testTokenizer(f, "llama2")
	f.Fuzz(func(t *testing.T, prev, text string) {
		if !utf8.ValidString(prev) || !utf8.ValidString(text) {
			return
		}
		whole, spans := tk.EncodeWithOffsets(prev+text, false)
		p := tk.Encode(prev, false)
		k := len(p)
		if k >= len(whole) || !slices.Equal(whole[:k], p) || spans[k].Start != len(prev) {
			return
		}
		if got := tk.EncodeContinuation(prev, text); !slices.Equal(got, whole[k:]) {
			t.Fatalf("EncodeContinuation(%q, %q) = %v, want %v", prev, text, got, whole[k:])
		}
	})
}
