package tokenizer

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// checkLimited compares l.Encode with tk.Encode on text at limits around its
// true token count n: the same ids from n up, a *TooLongError whose AtLeast
// lies in (limit, n] below it.
func checkLimited(t *testing.T, tk *Tokenizer, l *Limited, text string) {
	t.Helper()
	for _, add := range []bool{false, true} {
		want := tk.Encode(text, add)
		n := len(want)
		for _, limit := range []int{n, n + 7} {
			got, err := l.Encode(text, add, limit)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("Encode(%.40q, %v, limit %d) = %v, %v; want %v", text, add, limit, got, err, want)
			}
		}
		for _, limit := range []int{0, n / 2, n - 1} {
			if limit < 0 || limit >= n {
				continue
			}
			_, err := l.Encode(text, add, limit)
			var tl *TooLongError
			if !errors.As(err, &tl) || tl.Limit != limit || tl.AtLeast <= limit || tl.AtLeast > n {
				t.Fatalf("Encode(%.40q, %v, limit %d) of %d tokens: error %v, want a TooLongError with AtLeast in (%d, %d]", text, add, limit, n, err, limit, n)
			}
		}
	}
}

// TestLimitedMatchesEncode: under its limit Limited gives Encode's ids, and
// over it a lower bound that never exceeds the true count, on the golden
// texts of Qwen3 (NFC normalizer), Llama 3 (a post-processor prefix) and
// the llama2 package (a Prepend normalizer, byte fallback).
func TestLimitedMatchesEncode(t *testing.T) {
	for _, name := range goldenNames {
		tk := testTokenizer(t, name)
		l := tk.Limited()
		texts := []string{"", "a", strings.Repeat("a", 5000), strings.Repeat("ab ", 700), "e\u0301\u0323 \U000107a5\U000107a5 \u1100\u1161\u11a8"}
		for _, c := range readGolden(t, name).Cases {
			texts = append(texts, c.Text)
		}
		for _, text := range texts {
			checkLimited(t, tk, l, text)
		}
	}
}

// TestLimitedTiny covers added tokens with lstrip/rstrip (no length bound
// holds: they swallow any run of spaces), a normalized added token, and a
// post-processor that adds a token on both sides.
func TestLimitedTiny(t *testing.T) {
	merges := []any{"h e", []string{"l", "l"}, "he ll", []string{"Ġ", "w"}, "o Ġ"}
	added := []AddedToken{
		{ID: 1000, Content: "<s>", Special: true},
		{ID: 1001, Content: "<pad>", Special: true, LStrip: true, RStrip: true},
		{ID: 1002, Content: "é!", Normalized: true},
	}
	extra := map[string]any{"post_processor": map[string]any{"type": "TemplateProcessing",
		"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>"}}, map[string]any{"Sequence": map[string]any{"id": "A"}}, map[string]any{"SpecialToken": map[string]any{"id": "<s>"}}},
		"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{1000}}}}}
	tk, err := Parse(strings.NewReader(tinyJSON(t, merges, added, extra)))
	if err != nil {
		t.Fatal(err)
	}
	l := tk.Limited()
	for _, text := range []string{"hello world", "x" + strings.Repeat(" ", 3000) + "<pad>" + strings.Repeat(" ", 3000) + "y", "e\u0301! hello<s>e\u0301!", strings.Repeat("hello ", 300)} {
		checkLimited(t, tk, l, text)
	}
}

// allocated returns the bytes f allocates: the least of three calls, since
// the count is the process's and the runtime allocates now and then on its
// own (a make test under -race on a loaded machine saw 5.6 kB for a call
// that allocates nothing).
func allocated(f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 3 {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		least = min(least, b.TotalAlloc-a.TotalAlloc)
	}
	return least
}

// TestLimitedStopsEarly: a text far over the limit costs work and memory
// of the order of the limit, not of the text. Each case is one way out: the
// length alone, the count passing the limit, and a pre-token too long for
// the tokens left (which is never run through BPE).
func TestLimitedStopsEarly(t *testing.T) {
	tk := testTokenizer(t, "qwen3")
	l := tk.Limited()
	const limit = 1000
	for _, c := range []struct {
		name      string
		text      string
		maxLeast  int    // the stop must come this early
		maxAlloc  uint64 // bytes
		fullAlloc uint64 // what encoding it all would allocate at least
	}{
		// 1 MB in 128-byte tokens is 8192 at least: refused unread.
		{"by length", strings.Repeat("the cat sat on the mat. ", 1<<16/24*16), 1 << 20 / 128, 1 << 10, 2 << 20},
		// About 30000 tokens in 120 kB, within the length bound: the
		// count stops the encoding a pre-token past the limit.
		{"by count", strings.Repeat("the cat sat on the mat. ", 5000), limit + 2, 64 << 10, 240 << 10},
		// 300 tokens, then a 100 kB run of letters (one pre-token) that
		// needs at least 782 more.
		{"long pre-token", strings.Repeat("hi ", 300) + strings.Repeat("a", 100_000), 300 + 782 + 1, 64 << 10, 2 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = l.Encode(c.text, false, limit) })
			var tl *TooLongError
			if !errors.As(err, &tl) || tl.AtLeast <= limit || tl.AtLeast > c.maxLeast {
				t.Fatalf("error %v, want a TooLongError with AtLeast in (%d, %d]", err, limit, c.maxLeast)
			}
			if n > c.maxAlloc {
				t.Fatalf("allocated %d bytes, want at most %d (encoding all of it allocates %d or more)", n, c.maxAlloc, c.fullAlloc)
			}
			if full := allocated(func() { tk.Encode(c.text, false) }); full < c.fullAlloc {
				t.Fatalf("encoding the whole text allocated only %d bytes; the case does not test the limit", full)
			}
		})
	}
}

// TestLimitedFusedUnknown: a piece tokenizer without byte_fallback and
// with fuse_unk spells a run of characters it lacks, however long, as one
// unknown token, so neither the text's length nor a pre-token's bounds
// its count: a short encoding of a long text is not refused.
func TestLimitedFusedUnknown(t *testing.T) {
	for _, fuse := range []bool{true, false} {
		tk, err := Parse(strings.NewReader(tinyPiecesJSON(t, "ab", nil, false, map[string]any{"fuse_unk": fuse})))
		if err != nil {
			t.Fatal(err)
		}
		l := tk.Limited()
		for _, text := range []string{"a" + strings.Repeat("€", 300) + "b", "a " + strings.Repeat("€", 300) + " b", strings.Repeat("€", 1000)} {
			checkLimited(t, tk, l, text)
		}
	}
}
