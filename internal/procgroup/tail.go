package procgroup

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Tail is an io.Writer that keeps the last bytes written to it: a
// program's stderr, which the errors about the program quote (a
// traceback, a missing setting). Safe for concurrent use.
type Tail struct {
	mu  sync.Mutex
	max int
	b   []byte
	cut bool // bytes before b were dropped
}

// NewTail keeps the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b, t.cut = t.b[len(t.b)-t.max:], true
	}
	return len(p), nil
}

// Quote is "; stderr: " and the bytes kept, trimmed, or "" when there are
// none. The quote is UTF-8, as it may end up in a row's error string and
// a Parquet file holding a string that is not UTF-8 is refused by readers
// such as DuckDB: a character the cut fell inside is left out, and other
// bytes that are not UTF-8 (a program logging in Latin-1) are a U+FFFD
// each run.
func (t *Tail) Quote() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	for i := 0; t.cut && i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	if s := strings.ToValidUTF8(strings.TrimSpace(string(b)), "\uFFFD"); s != "" {
		return "; stderr: " + s
	}
	return ""
}
