package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestBPEMatchesSlow checks the stack and heap forms of the BPE loop against
// the plain loop on seeded words: real pre-tokens, long runs and random bytes.
func TestBPEMatchesSlow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"hello", " world", "antidisestablishmentarianism", strings.Repeat(" ", 300), strings.Repeat("\n", 70),
		strings.Repeat("ab", 40), "自然语言处理是人工智能的一个重要分支", strings.Repeat("😀", 20), strings.Repeat("=", 100)}
	for range 300 {
		n := 2 + r.IntN(120)
		b := make([]byte, n)
		for i := range b {
			if r.IntN(3) == 0 {
				b[i] = byte(r.IntN(256))
			} else {
				b[i] = "etaoin shrdlu\n"[r.IntN(14)]
			}
		}
		words = append(words, string(b))
	}
	for _, name := range []string{"qwen3", "llama3"} {
		m := &testTokenizer(t, name).bpe
		for _, w := range words {
			want := m.encodeWordSlow(w)
			if len(w) <= shortWord {
				if got := m.encodeShort(w, nil); !slices.Equal(got, want) {
					t.Errorf("%s: encodeShort(%q) = %v, want %v", name, w, got, want)
				}
			}
			if got := m.encodeLong(w, nil); !slices.Equal(got, want) {
				t.Errorf("%s: encodeLong(%q) = %v, want %v", name, w, got, want)
			}
		}
	}
}

// TestEncodeWordMatchesSlow checks the one-token fast path of encodeWord
// (Qwen: no ignore_merges) against the plain loop on vocabulary entries,
// twice: the first call fills the word's entry of the whole table (single
// bytes skip it), the second reads it.
func TestEncodeWordMatchesSlow(t *testing.T) {
	m := testTokenizer(t, "qwen3").bpe
	m.whole = newWholeTable(len(m.whole) * 16) // fresh, whatever other tests encoded
	k, differ := 0, 0
	for raw, id := range m.byRaw {
		if k++; k%40 != 0 || len(raw) > 64 {
			continue
		}
		want := m.encodeWordSlow(raw)
		for pass := range 2 {
			if got := m.encodeWord(raw, nil); !slices.Equal(got, want) {
				t.Fatalf("pass %d: encodeWord(%q) = %v, want %v", pass, raw, got, want)
			}
		}
		if got := m.whole.get(id); len(raw) > 1 && (got == wholeUnknown || (got == wholeYes) != slices.Equal(want, []int{int(id)})) {
			t.Fatalf("whole table entry of %q (id %d) is %02b after encoding it to %v", raw, id, got, want)
		}
		if len(want) != 1 || want[0] != int(id) {
			differ++
		}
	}
	t.Logf("%d of the sampled vocabulary entries are not reached by BPE of their own bytes", differ)
}

func TestSplitMerge(t *testing.T) {
	cases := []struct{ raw, a, b string }{
		{`"Ġ t"`, "Ġ", "t"},
		{`["Ġ","t"]`, "Ġ", "t"},
		{`[ "a b" , "c" ]`, "a b", "c"},
		{`["\"","x"]`, `"`, "x"},
		{`"\u0120 \"x"`, "Ġ", `"x`},
	}
	for _, c := range cases {
		a, b, err := splitMerge([]byte(c.raw))
		if err != nil || string(a) != c.a || string(b) != c.b {
			t.Errorf("splitMerge(%s) = %q, %q, %v; want %q, %q", c.raw, a, b, err, c.a, c.b)
		}
	}
	for _, bad := range []string{`"ab"`, `["a"]`, `["a","b","c"]`, `"a b c"`, `3`} {
		if _, _, err := splitMerge([]byte(bad)); err == nil {
			t.Errorf("splitMerge(%s) accepted", bad)
		}
	}
}

// TestIgnoreMerges: Llama 3 takes a whole pre-token found in the vocabulary
// as is, even where the merges would split it.
func TestIgnoreMerges(t *testing.T) {
	tk := testTokenizer(t, "llama3")
	if !tk.bpe.ignoreMerges {
		t.Fatal("llama3 tokenizer.json sets ignore_merges, parsed as false")
	}
	n := 0
	for raw, id := range tk.bpe.byRaw {
		if len(raw) < 2 {
			continue
		}
		if got := tk.bpe.encodeWord(raw, nil); !slices.Equal(got, []int{int(id)}) {
			t.Fatalf("encodeWord(%q) = %v, want [%d]", raw, got, id)
		}
		if !slices.Equal(tk.bpe.encodeWordSlow(raw), []int{int(id)}) {
			n++
		}
	}
	if n == 0 {
		t.Error("no vocabulary entry where ignore_merges changes the result; the test does not test it")
	}
	t.Logf("%d vocabulary entries are reached only through ignore_merges", n)
}

func TestStreamDecodeSplitsEmoji(t *testing.T) {
	for _, name := range []string{"qwen3", "llama3"} {
		tk := testTokenizer(t, name)
		// One token per byte: every 4-byte emoji is split across 4 tokens.
		text := "a😀b🎉 中"
		var ids []int
		for i := 0; i < len(text); i++ {
			ids = append(ids, int(tk.bpe.byteID[text[i]]))
		}
		d := tk.NewStreamDecoder(false)
		var got []string
		for _, id := range ids {
			s := d.Add(id)
			if !utf8.ValidString(s) {
				t.Fatalf("%s: Add emitted invalid UTF-8 %q", name, s)
			}
			got = append(got, s)
		}
		want := []string{"a", "", "", "", "😀", "b", "", "", "", "🎉", " ", "", "", "中"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: stream pieces %q, want %q", name, got, want)
		}
		if rest := d.Flush(); rest != "" {
			t.Errorf("%s: Flush() = %q after complete text", name, rest)
		}
		// A character cut off by a special token and at the end.
		im := tk.Encode("<|end_of_text|><|im_end|>", false)[0]
		d.Add(ids[1])
		d.Add(ids[2])
		if d.Pending() != 2 {
			t.Errorf("%s: Pending() = %d, want 2", name, d.Pending())
		}
		got2 := d.Add(im)
		if want2 := "\uFFFD" + tk.Decode([]int{im}, false); got2 != want2 {
			t.Errorf("%s: Add(special) after half a character = %q, want %q", name, got2, want2)
		}
		d.Add(ids[1])
		if rest := d.Flush(); rest != "\uFFFD" {
			t.Errorf("%s: Flush() of half a character = %q, want U+FFFD", name, rest)
		}
	}
}

func TestAppendLossy(t *testing.T) {
	cases := []struct{ in, want string }{
		{"abc", "abc"},
		{"\xf0\x9f\x98", "\uFFFD"},             // truncated 4-byte: one maximal subpart
		{"\xf0\x9f\x98x", "\uFFFDx"},           // ... followed by ASCII
		{"\xe2\x82", "\uFFFD"},                 // truncated 3-byte
		{"\xc0\xaf", "\uFFFD\uFFFD"},           // overlong: both bytes invalid
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogate
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\x80\xbf", "\uFFFD\uFFFD"},
		{"a\xe2\x82\xacb", "a€b"},
	}
	for _, c := range cases {
		got, n := appendLossy(nil, []byte(c.in), true)
		if string(got) != c.want || n != len(c.in) {
			t.Errorf("appendLossy(%q) = %q, %d; want %q, %d", c.in, got, n, c.want, len(c.in))
		}
	}
	if got, n := appendLossy(nil, []byte("ab\xf0\x9f\x98"), false); string(got) != "ab" || n != 2 {
		t.Errorf("appendLossy(not final) = %q, %d; want \"ab\", 2", got, n)
	}
}

func TestTokenLookups(t *testing.T) {
	tk := testTokenizer(t, "qwen3")
	for _, s := range []string{"<|im_start|>", "<|im_end|>", "<think>", "Ġthe", "hello"} {
		id, ok := tk.TokenID(s)
		if !ok {
			t.Fatalf("TokenID(%q) not found", s)
		}
		if back, ok := tk.Token(id); !ok || back != s {
			t.Errorf("Token(TokenID(%q)=%d) = %q, %v", s, id, back, ok)
		}
	}
	im, _ := tk.TokenID("<|im_start|>")
	think, _ := tk.TokenID("<think>")
	if !tk.IsSpecial(im) || tk.IsSpecial(think) {
		t.Errorf("IsSpecial(<|im_start|>)=%v, IsSpecial(<think>)=%v; want true, false", tk.IsSpecial(im), tk.IsSpecial(think))
	}
	if _, ok := tk.TokenID("no such token"); ok {
		t.Error("TokenID of a missing token reported ok")
	}
	if got := tk.EncodeOrdinary("<|im_start|>"); slices.Contains(got, im) || tk.Decode(got, false) != "<|im_start|>" {
		t.Errorf("EncodeOrdinary(<|im_start|>) = %v", got)
	}
	if b, ok := tk.TokenBytes(tk.Encode(" the", false)[0]); !ok || string(b) != " the" {
		t.Errorf("TokenBytes(\" the\") = %q, %v", b, ok)
	}
}

// TestConcurrentEncode runs Encode and Decode from many goroutines over
// texts full of multi-token words, so that they race on the word cache (run
// it with -race), and compares with a tokenizer that has no cache.
func TestConcurrentEncode(t *testing.T) {
	tk := testTokenizer(t, "qwen3")
	plain := *tk
	plain.bpe.cache = nil
	texts := []string{"Hello, world!", "<|im_start|>user\nHi<|im_end|>", strings.Repeat("a  b\n", 50), "自然语言 😀 123456"}
	r := rand.New(rand.NewPCG(7, 8))
	for range 40 {
		texts = append(texts, randomText(r, []rune("qxzjkv wyé中文'"), 20+r.IntN(80)))
	}
	want := make([][]int, len(texts))
	for i, s := range texts {
		want[i] = plain.Encode(s, true)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 400 {
				i := (g*7 + k) % len(texts)
				if got := tk.Encode(texts[i], true); !slices.Equal(got, want[i]) {
					errs <- texts[i]
					return
				}
				if got := tk.Decode(want[i], false); got != norm.NFC.String(texts[i]) {
					errs <- texts[i]
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("concurrent Encode/Decode of %q differs from sequential", s)
	}
}

// FuzzEncodeDecode: decoding the encoding gives the text back (NFC for Qwen,
// unchanged for Llama), with and without the post-processor's tokens skipped.
func FuzzEncodeDecode(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "a   b", "a \n\n b", "trailing   ", "\t\t x", "e\u0301", "😀🎉",
		"<|im_start|>user\nhi<|im_end|>", "<|begin_of_text|>x<|eot_id|>", "it'S 1234567", "\u1100\u1161", "\u212b", "\ufeff\u200d"} {
		f.Add(s)
	}
	// Load before fuzzing: a fuzz worker must answer within seconds.
	tks := []*Tokenizer{testTokenizer(f, "qwen3"), testTokenizer(f, "llama3")}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		for i, name := range []string{"qwen3", "llama3"} {
			tk := tks[i]
			want := s
			if tk.norm != nil {
				want = tk.norm.apply(s)
			}
			ids := tk.Encode(s, false)
			if got := tk.Decode(ids, false); got != want {
				t.Fatalf("%s: Decode(Encode(%q)) = %q, want %q (ids %v)", name, s, got, want, ids)
			}
			if oids, spans := tk.EncodeWithOffsets(s, false); !slices.Equal(oids, ids) || len(spans) != len(ids) {
				t.Fatalf("%s: EncodeWithOffsets(%q) = %v, Encode %v", name, s, oids, ids)
			}
			if got := streamDecode(tk, ids, false); got != want {
				t.Fatalf("%s: stream decode of Encode(%q) = %q, want %q", name, s, got, want)
			}
			if got := tk.Decode(tk.EncodeOrdinary(s), false); got != want {
				t.Fatalf("%s: Decode(EncodeOrdinary(%q)) = %q, want %q", name, s, got, want)
			}
		}
	})
}

// TestWordCache: encoding with a warm cache, and with no cache at all, gives
// the same ids as a first encoding.
func TestWordCache(t *testing.T) {
	for _, name := range []string{"qwen3", "llama3"} {
		tk := testTokenizer(t, name)
		if tk.bpe.cache == nil {
			t.Fatalf("%s: no word cache", name)
		}
		plain := *tk
		plain.bpe.cache = nil
		r := rand.New(rand.NewPCG(5, 6))
		for range 200 {
			s := randomText(r, []rune("abcdefgh ijk'sé中文😀\n12"), 1+r.IntN(60))
			want := plain.Encode(s, true)
			for pass := range 2 {
				if got := tk.Encode(s, true); !slices.Equal(got, want) {
					t.Fatalf("%s: pass %d: Encode(%q) = %v, without cache %v", name, pass, s, got, want)
				}
			}
		}
	}
}

// TestWholeTable: a vocabulary word that BPE of its own bytes does not
// reach ("hel": e+l merges before h+e, and h+el is no merge) is split the
// same way on every call, before and after its whole table entry is known.
func TestWholeTable(t *testing.T) {
	tk, err := Parse(strings.NewReader(tinyJSON(t, []any{"e l", "h e", "he l"}, nil, nil)))
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int {
		i, ok := tk.TokenID(s)
		if !ok {
			t.Fatalf("TokenID(%q) missing", s)
		}
		return i
	}
	cases := []struct {
		word  string
		want  []int
		whole uint32
	}{
		{"hel", []int{'h', id("el")}, wholeNo},
		{"he", []int{id("he")}, wholeYes},
		{"el", []int{id("el")}, wholeYes},
	}
	for _, c := range cases {
		for pass := range 2 {
			if got := tk.bpe.encodeWord(c.word, nil); !slices.Equal(got, c.want) {
				t.Errorf("pass %d: encodeWord(%q) = %v, want %v", pass, c.word, got, c.want)
			}
		}
		if got := tk.bpe.whole.get(int32(id(c.word))); got != c.whole {
			t.Errorf("whole table entry of %q is %02b, want %02b", c.word, got, c.whole)
		}
	}
}

// TestByteLevelTable: every byte's character maps back to the byte, all 256
// in one spelling too, and characters outside the table are refused.
func TestByteLevelTable(t *testing.T) {
	all := make([]byte, 256)
	for b := range all {
		all[b] = byte(b)
		got, ok := appendUnmapped(nil, mapByteLevel([]byte{byte(b)}))
		if !ok || !slices.Equal(got, []byte{byte(b)}) {
			t.Errorf("byte 0x%02x: spelled %q, read back as %v, %v", b, byteToRune[b], got, ok)
		}
	}
	if got, ok := appendUnmapped([]byte("x"), mapByteLevel(all)); !ok || string(got) != "x"+string(all) {
		t.Errorf("all 256 bytes read back as %q, %v", got, ok)
	}
	for _, s := range []string{" ", "\n", "\x7f", "\u00a0", "\u00ad", "\u0144", "\ufffd", "\xff", "Ġ\u0144"} {
		if got, ok := appendUnmapped(nil, s); ok {
			t.Errorf("appendUnmapped(%q) = %v, accepted", s, got)
		}
	}
}
