package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode"
)

func pieces(s string, mode splitMode) []string {
	var out []string
	preTokenize(s, mode, func(p string) { out = append(out, p) })
	return out
}

// TestPreTokenizeWhitespace spells out what the patterns' alternatives
// require on tricky whitespace: \s+(?!\S) leaves the last space of a run to
// the word after it, \s*[\r\n]+ ends at the last newline of a run.
func TestPreTokenizeWhitespace(t *testing.T) {
	cases := []struct {
		in   string
		want []string // the same for Qwen2 and Llama 3
	}{
		{"a   b", []string{"a", "  ", " b"}},
		{"a \n\n b", []string{"a", " \n\n", " b"}},
		{"trailing   ", []string{"trailing", "   "}},
		{"\t\t x", []string{"\t\t", " x"}},
		{"\t\tx", []string{"\t", "\tx"}},
		{"x\n", []string{"x", "\n"}},
		{"  \n  x", []string{"  \n", " ", " x"}},
		{"a\r\n\r\nb", []string{"a", "\r\n\r\n", "b"}},
		{" ", []string{" "}},
		{"  ", []string{"  "}},
		{" \t", []string{" \t"}},
		{"x \t ", []string{"x", " \t "}},
		{"a  !", []string{"a", " ", " !"}},
		{"a !!\n\nb", []string{"a", " !!\n\n", "b"}},
		{"a\u00a0\u00a0b", []string{"a", "\u00a0", "\u00a0b"}},
		{"\u3000\u3000", []string{"\u3000\u3000"}},
		{"x\u0085\u0085", []string{"x", "\u0085\u0085"}},
		{"it's", []string{"it", "'s"}},
		{"IT'S 'LL'Ve", []string{"IT", "'S", " '", "LL", "'Ve"}},
		{"'sup", []string{"'s", "up"}},
		{"'x", []string{"'x"}},
		{"''s", []string{"''", "s"}},
		{"$x", []string{"$x"}},
		{"\n\nfoo", []string{"\n\n", "foo"}},
		{"\nfoo", []string{"\n", "foo"}},
		{"\"hi\"", []string{"\"hi", "\""}},
		{"", nil},
	}
	for _, mode := range []splitMode{splitQwen2, splitLlama3} {
		for _, c := range cases {
			if got := pieces(c.in, mode); !slices.Equal(got, c.want) {
				t.Errorf("mode %d: pieces(%q) = %q, want %q", mode, c.in, got, c.want)
			}
		}
	}
}

func TestPreTokenizeDigits(t *testing.T) {
	in := "a1234567b 12"
	if got, want := pieces(in, splitQwen2), []string{"a", "1", "2", "3", "4", "5", "6", "7", "b", " ", "1", "2"}; !slices.Equal(got, want) {
		t.Errorf("Qwen2 pieces(%q) = %q, want %q", in, got, want)
	}
	if got, want := pieces(in, splitLlama3), []string{"a", "123", "456", "7", "b", " ", "12"}; !slices.Equal(got, want) {
		t.Errorf("Llama3 pieces(%q) = %q, want %q", in, got, want)
	}
	if got, want := pieces(in, splitGPT2), []string{"a", "1234567", "b", " 12"}; !slices.Equal(got, want) {
		t.Errorf("GPT2 pieces(%q) = %q, want %q", in, got, want)
	}
}

// A tiny backtracking regex engine, used only as the oracle for the
// hand-written matchers: each pattern below is the tokenizer.json regex
// written as combinators, matched leftmost-first with full backtracking.
type rx func(s []rune, i int, k func(int) bool) bool

func cls(pred func(rune) bool) rx {
	return func(s []rune, i int, k func(int) bool) bool { return i < len(s) && pred(s[i]) && k(i+1) }
}
func lit(r rune) rx     { return cls(func(c rune) bool { return c == r }) }
func litFold(r rune) rx { return cls(func(c rune) bool { return c == r || c == unicode.ToUpper(r) }) }
func seq(xs ...rx) rx {
	return func(s []rune, i int, k func(int) bool) bool {
		if len(xs) == 0 {
			return k(i)
		}
		return xs[0](s, i, func(j int) bool { return seq(xs[1:]...)(s, j, k) })
	}
}
func alt(xs ...rx) rx {
	return func(s []rune, i int, k func(int) bool) bool {
		for _, x := range xs {
			if x(s, i, k) {
				return true
			}
		}
		return false
	}
}
func rep(x rx, lo, hi int) rx { // greedy x{lo,hi}; hi < 0 is unbounded
	var m func(s []rune, i, n int, k func(int) bool) bool
	m = func(s []rune, i, n int, k func(int) bool) bool {
		if hi < 0 || n < hi {
			if x(s, i, func(j int) bool { return j > i && m(s, j, n+1, k) }) {
				return true
			}
		}
		return n >= lo && k(i)
	}
	return func(s []rune, i int, k func(int) bool) bool { return m(s, i, 0, k) }
}
func notAhead(x rx) rx {
	return func(s []rune, i int, k func(int) bool) bool {
		return !x(s, i, func(int) bool { return true }) && k(i)
	}
}

var (
	isL   = unicode.IsLetter
	isN   = unicode.IsNumber
	isS   = func(r rune) bool { return unicode.Is(unicode.White_Space, r) }
	isNL  = func(r rune) bool { return r == '\r' || r == '\n' }
	notS  = func(r rune) bool { return !isS(r) }
	other = func(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }
)

func oracle(digits rx, fold bool) rx {
	l := lit
	if fold {
		l = litFold
	}
	q := lit('\'')
	return alt(
		alt(seq(q, l('s')), seq(q, l('t')), seq(q, l('r'), l('e')), seq(q, l('v'), l('e')), seq(q, l('m')), seq(q, l('l'), l('l')), seq(q, l('d'))),
		seq(rep(cls(func(r rune) bool { return !isNL(r) && !isL(r) && !isN(r) }), 0, 1), rep(cls(isL), 1, -1)),
		digits,
		seq(rep(lit(' '), 0, 1), rep(cls(other), 1, -1), rep(cls(isNL), 0, -1)),
		seq(rep(cls(isS), 0, -1), rep(cls(isNL), 1, -1)),
		seq(rep(cls(isS), 1, -1), notAhead(cls(notS))),
		rep(cls(isS), 1, -1),
	)
}

var oracles = map[splitMode]rx{
	splitQwen2:  oracle(cls(isN), true),
	splitLlama3: oracle(rep(cls(isN), 1, 3), true),
	splitGPT2: alt(
		seq(lit('\''), alt(lit('s'), lit('t'), seq(lit('r'), lit('e')), seq(lit('v'), lit('e')), lit('m'), seq(lit('l'), lit('l')), lit('d'))),
		seq(rep(lit(' '), 0, 1), rep(cls(isL), 1, -1)),
		seq(rep(lit(' '), 0, 1), rep(cls(isN), 1, -1)),
		seq(rep(lit(' '), 0, 1), rep(cls(other), 1, -1)),
		seq(rep(cls(isS), 1, -1), notAhead(cls(notS))),
		rep(cls(isS), 1, -1),
	),
}

// oraclePieces splits like Split(Isolated): matches and the gaps between them.
func oraclePieces(s string, mode splitMode) []string {
	rs := []rune(s)
	var out []string
	gap := 0
	for i := 0; i < len(rs); {
		end := -1
		oracles[mode](rs, i, func(j int) bool { end = j; return true })
		if end <= i {
			i++
			continue
		}
		if gap < i {
			out = append(out, string(rs[gap:i]))
		}
		out = append(out, string(rs[i:end]))
		i, gap = end, end
	}
	if gap < len(rs) {
		out = append(out, string(rs[gap:]))
	}
	return out
}

// pretokAlphabet mixes every class the patterns distinguish.
var pretokAlphabet = []rune("aZé中ſK19٣½ \t\n\r\u00a0\u3000\u0085'sStTrReEvVmMlLdD.!$-\u0301😀")

func randomText(r *rand.Rand, alphabet []rune, n int) string {
	out := make([]rune, n)
	for i := range out {
		out[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(out)
}

// TestPreTokenizeOracle compares the matchers with the backtracking oracle on
// seeded random strings over an alphabet of all the classes.
func TestPreTokenizeOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, mode := range []splitMode{splitQwen2, splitLlama3, splitGPT2} {
		for n := range 3000 {
			s := randomText(r, pretokAlphabet, 1+n%23)
			if got, want := pieces(s, mode), oraclePieces(s, mode); !slices.Equal(got, want) {
				t.Fatalf("mode %d: pieces(%q)\n got  %q\n want %q", mode, s, got, want)
			}
		}
	}
}

func FuzzPreTokenize(f *testing.F) {
	for _, s := range []string{"a   b", "a \n\n b", "trailing   ", "\t\t x", "it'S 12345", " !!\r\n", "\u00a0\u0085x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = validUTF8(s)
		if len(s) > 200 {
			return
		}
		for _, mode := range []splitMode{splitQwen2, splitLlama3, splitGPT2} {
			if got, want := pieces(s, mode), oraclePieces(s, mode); !slices.Equal(got, want) {
				t.Fatalf("mode %d: pieces(%q)\n got  %q\n want %q", mode, s, got, want)
			}
		}
	})
}

func ExampleTokenizer_Encode() {
	tk, err := Load("../../testdata/tokenizers/qwen3")
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tk.Encode("<|im_start|>user\nHi!<|im_end|>", false)
	fmt.Println(ids, tk.Decode(ids, true))
	// Output: [151644 872 198 13048 0 151645] user
	// Hi!
}
