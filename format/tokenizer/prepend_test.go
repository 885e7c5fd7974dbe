package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// llama2Form rewrites a tiny piece tokenizer.json into the Llama 2 kind:
// normalizer Prepend "▁" then Replace " " by "▁", no pre-tokenizer, and a
// decoder that ends with a Strip of one leading space. edit, when not nil,
// changes the document before it is written.
func llama2Form(t *testing.T, doc string, edit func(map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{
		map[string]any{"type": "Prepend", "prepend": "▁"},
		map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
	}}
	m["pre_tokenizer"] = nil
	dec := m["decoder"].(map[string]any)
	dec["decoders"] = append(dec["decoders"].([]any), map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0})
	m["added_tokens"] = []AddedToken{{ID: 0, Content: "<unk>", Special: true}, {ID: 1, Content: "<s>", Special: true}}
	vocab := m["model"].(map[string]any)["vocab"].(map[string]any)
	vocab["<s>"] = 1.0
	vocab["<unk>"] = 0.0
	if edit != nil {
		edit(m)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPiecesPrependStrip: a Prepend normalizer puts "▁" before each text
// between added tokens that is not empty (aligned, in the offsets, with its
// first character), and the decoder's Strip takes one leading space off a
// whole decode but not off a stream, which continues earlier text.
func TestPiecesPrependStrip(t *testing.T) {
	merges := [][2]string{{"▁", "a"}, {"▁", "b"}}
	doc := llama2Form(t, tinyPiecesJSON(t, "ab", merges, true, nil), func(m map[string]any) {
		// tinyPiecesJSON gave <unk> id 0 and the byte tokens 1…256; <s>
		// takes an id of its own.
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
		text string
		want []int
	}{
		{"", nil},
		{"a", []int{id("▁a")}},
		{"a b", []int{id("▁a"), id("▁b")}},
		{" a", []int{id("▁"), id("▁a")}}, // "▁" put before the space's own "▁"
		{"a<s>b", []int{id("▁a"), 999, id("▁b")}},
		{"<s>", []int{999}}, // nothing around it: nothing put there
		{"<s> b", []int{999, id("▁"), id("▁b")}},
	} {
		if got := tk.Encode(c.text, false); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	ids := tk.Encode("a<s>b", false)
	if got := tk.Decode(ids, false); got != "a<s> b" {
		t.Errorf("Decode = %q, want %q (one leading space stripped)", got, "a<s> b")
	}
	if got := tk.Decode(ids, true); got != "a b" {
		t.Errorf("Decode(skip special) = %q, want %q", got, "a b")
	}
	if got := tk.Decode(tk.Encode("  a", false), false); got != "  a" {
		t.Errorf("Decode(Encode(%q)) = %q: Strip takes one space, the one Prepend put", "  a", got)
	}
	if got := streamDecode(tk, ids, false); got != " a<s> b" {
		t.Errorf("stream = %q, want %q (a continuation keeps its space)", got, " a<s> b")
	}
	_, spans := tk.EncodeWithOffsets("ab b", false)
	if want := []Span{{0, 1}, {1, 2}, {2, 4}}; !slices.Equal(spans, want) {
		t.Errorf("offsets of %q = %v, want %v", "ab b", spans, want)
	}
}

// TestPiecesPrependRefused: a Prepend after another normalizer, or before
// one that does not work character by character, and a Strip that takes
// anything but leading spaces are refused by name.
func TestPiecesPrependRefused(t *testing.T) {
	base := tinyPiecesJSON(t, "ab", nil, true, nil)
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"prepend after replace", func(m map[string]any) {
			n := m["normalizer"].(map[string]any)["normalizers"].([]any)
			n[0], n[1] = n[1], n[0]
		}, "normalizers[1]: Prepend after"},
		{"prepend then NFC", func(m map[string]any) {
			n := m["normalizer"].(map[string]any)
			n["normalizers"] = append(n["normalizers"].([]any), map[string]any{"type": "NFC"})
		}, "Prepend followed by a Unicode normalization form"},
		{"strip at the end", func(m map[string]any) {
			d := m["decoder"].(map[string]any)["decoders"].([]any)
			d[3] = map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 1}
		}, "decoders[3]: Strip"},
		{"strip of another character", func(m map[string]any) {
			d := m["decoder"].(map[string]any)["decoders"].([]any)
			d[3] = map[string]any{"type": "Strip", "content": "▁", "start": 1, "stop": 0}
		}, "decoders[3]: Strip"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(llama2Form(t, base, c.edit)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse: %v, want an error naming %q", err, c.want)
			}
		})
	}
}

// TestLlama2RoundTrip: on the llama2 package's real file, a text without
// added tokens decodes back to itself ("▁" read as a space): the Strip takes
// exactly the space Prepend put; a stream keeps it.
func TestLlama2RoundTrip(t *testing.T) {
	tk := testTokenizer(t, "llama2")
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []rune("abc XYZ 012 \n\n\t é中文😀𝔘\U000E0041 ▁.,[]/")
	texts := []string{"", " ", "  ", "▁", strings.Repeat("word ", 2000), strings.Repeat("\n", 70), "\U0001D518\U0001D518 x"}
	for range 100 {
		texts = append(texts, randomText(r, alphabet, 1+r.IntN(80)))
	}
	for _, s := range texts {
		want := strings.ReplaceAll(s, "▁", " ")
		ids := tk.Encode(s, false)
		if got := tk.Decode(ids, false); got != want {
			t.Fatalf("Decode(Encode(%q)) = %q (ids %v)", s, got, ids)
		}
		if s != "" {
			want = " " + want
		}
		if got := streamDecode(tk, ids, false); got != want {
			t.Fatalf("stream decode of Encode(%q) = %q, want %q", s, got, want)
		}
		oids, spans := tk.EncodeWithOffsets(s, false)
		if !slices.Equal(oids, ids) || len(spans) != len(ids) || len(spans) > 0 && spans[len(spans)-1].End != len(s) {
			t.Fatalf("EncodeWithOffsets(%q) = %v %v, Encode %v", s, oids, spans, ids)
		}
	}
}

// FuzzLlama2RoundTrip: on the Llama 2-kind tokenizer (Prepend "▁",
// decoder Strip), Decode gives back any text without added tokens, as
// Hugging Face's decode does, and a stream decoder the same text after the
// one space the Prepend put before it (vLLM's detokenizer keeps it). A
// "▁" in the text is a space once normalized, and decodes as one there
// too, so such texts are passed over.
func FuzzLlama2RoundTrip(f *testing.F) {
	for _, s := range []string{"", "Hello", " Hello", "a  b ", "\n\nx", "é😀𝔘", "\x00\t", "[INST] hi [/INST]", "  "} {
		f.Add(s)
	}
	tk := testTokenizer(f, "llama2")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.Contains(s, "<s>") || strings.Contains(s, "</s>") || strings.Contains(s, "<unk>") || strings.Contains(s, "▁") {
			return
		}
		ids := tk.Encode(s, false)
		if got := tk.Decode(ids, false); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q (ids %v)", s, got, ids)
		}
		want := ""
		if s != "" {
			want = " " + s
		}
		if got := streamDecode(tk, ids, false); got != want {
			t.Fatalf("stream decode of Encode(%q) = %q, want %q", s, got, want)
		}
		if oids, spans := tk.EncodeWithOffsets(s, false); !slices.Equal(oids, ids) || len(spans) != len(ids) {
			t.Fatalf("EncodeWithOffsets(%q) = %v, Encode %v", s, oids, ids)
		}
	})
}
