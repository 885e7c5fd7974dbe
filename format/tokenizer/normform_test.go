package tokenizer

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// TestNormalizeLongMarkRuns: a run of more than 30 combining marks (Zalgo
// text) is normalized as Unicode defines the forms, as the references do
// (Rust's unicode-normalization, JavaScript's String.prototype.normalize):
// all its marks sorted by combining class and nothing inserted. x/text's
// norm, which follows the Stream-Safe Text Format, put U+034F after every
// 30 marks and sorted them only within each 30, so Qwen's NFC gave other
// tokens than the reference and a decode with a character the text lacked.
func TestNormalizeLongMarkRuns(t *testing.T) {
	const (
		acute = "\u0301" // class 230
		below = "\u0323" // class 220
		ogon  = "\u0328" // class 202
	)
	// The wanted texts are String.prototype.normalize's (node 20).
	mixed := strings.Repeat(acute+below+ogon, 15)
	sorted := strings.Repeat(ogon, 15) + strings.Repeat(below, 15) + strings.Repeat(acute, 15)
	cases := []struct {
		name string
		f    norm.Form
		in   string
		want string
	}{
		// e + ogonek composes (ę, U+0119); the other marks are blocked
		// by it or have no composite with ę.
		{"NFC", norm.NFC, "xe" + mixed + "y", "x\u0119" + sorted[len(ogon):] + "y"},
		{"NFD", norm.NFD, "xe" + mixed + "y", "xe" + sorted + "y"},
		{"NFD of a composite", norm.NFD, "\u00e9" + strings.Repeat(below, 35), "e" + strings.Repeat(below, 35) + acute},
		// é decomposes to e + acute, which sorts after the 35 dots below;
		// e + dot below composes (ẹ, U+1EB9) and the acute is blocked.
		{"NFC of a composite", norm.NFC, "\u00e9" + strings.Repeat(below, 35), "\u1eb9" + strings.Repeat(below, 34) + acute},
		{"NFKC", norm.NFKC, "\ufb01" + strings.Repeat(acute, 32) + "\u1100\u1161\u11a8", "f\u00ed" + strings.Repeat(acute, 31) + "\uac01"},
		{"NFKD", norm.NFKD, "\u2460" + strings.Repeat(acute+below, 20), "1" + strings.Repeat(below, 20) + strings.Repeat(acute, 20)},
		{"marks first", norm.NFC, strings.Repeat(acute+below, 20) + "a", strings.Repeat(below, 20) + strings.Repeat(acute, 20) + "a"},
		{"a joiner of its own", norm.NFC, "a" + cgj + strings.Repeat(acute, 31), "a" + cgj + strings.Repeat(acute, 31)},
	}
	for _, c := range cases {
		n := normalizer{{form: &c.f}}
		if got := n.apply(c.in); got != c.want {
			t.Errorf("%s: got %+q, want %+q", c.name, got, c.want)
		}
	}

	// On the real Qwen3 tokenizer (an NFC normalizer): the ids of Zalgo
	// text are those of its normalization (Z + dot below is Ẓ, o + acute
	// ó), which decodes without U+034F.
	tk := testTokenizer(t, "qwen3")
	zalgo := "Z" + mixed + "algo" + strings.Repeat(acute, 40)
	want := "\u1e92" + strings.Repeat(ogon, 15) + strings.Repeat(below, 14) + strings.Repeat(acute, 15) + "alg\u00f3" + strings.Repeat(acute, 39)
	ids := tk.Encode(zalgo, false)
	if got := tk.Decode(ids, false); got != want {
		t.Errorf("Qwen3 decode of the ids of Zalgo text: got %+q, want %+q", got, want)
	}
	if ids2, _ := tk.EncodeWithOffsets(zalgo, false); !slices.Equal(ids2, ids) {
		t.Errorf("EncodeWithOffsets gave %v, Encode %v", ids2, ids)
	}
}
