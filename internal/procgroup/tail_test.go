package procgroup

import (
	"testing"
	"unicode/utf8"
)

// A tail keeps the last bytes and quotes them as UTF-8: a cut inside a
// character leaves that character out, other stray bytes become U+FFFD.
func TestTailQuote(t *testing.T) {
	for _, c := range []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"nothing", 8, nil, ""},
		{"blank", 8, []string{" \n"}, ""},
		{"whole", 16, []string{"boom\n"}, "; stderr: boom"},
		{"last bytes", 4, []string{"ab", "cdef"}, "; stderr: cdef"},
		// "é" is 2 bytes: keeping 5 of "aéé" + "xy" cuts the first é.
		{"cut inside a character", 5, []string{"a\u00e9\u00e9", "xy"}, "; stderr: \u00e9xy"},
		{"latin-1", 16, []string{"caf\xe9"}, "; stderr: caf\uFFFD"},
	} {
		tl := NewTail(c.max)
		for _, w := range c.writes {
			if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write = %d, %v", c.name, n, err)
			}
		}
		got := tl.Quote()
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
