package hugepage

import (
	"testing"
)

func TestInterior(t *testing.T) {
	for _, c := range []struct {
		p         uintptr
		n         int
		off, size int
	}{
		{0, Size, 0, Size},
		{0, Size - 1, 0, 0},
		{1, Size, 0, 0},                              // straddles one boundary, holds no whole page
		{1, 2 * Size, Size - 1, Size},                // one whole page after the first boundary
		{Size - 4096, 3*Size + 8192, 4096, 3 * Size}, // ends past the last boundary by 12 KiB
		{5 * Size, 0, 0, 0},
	} {
		off, size := interior(c.p, c.n)
		if off != c.off || size != c.size {
			t.Errorf("interior(%#x, %d) = %d, %d; want %d, %d", c.p, c.n, off, size, c.off, c.size)
		}
		if size > 0 && ((c.p+uintptr(off))%Size != 0 || off+size > c.n) {
			t.Errorf("interior(%#x, %d) = %d, %d: not an aligned range inside the buffer", c.p, c.n, off, size)
		}
	}
}

// TestAdviseKeepsContents advises a written buffer (which, on Linux with THP
// available, collapses its pages into huge ones) and checks every value.
func TestAdviseKeepsContents(t *testing.T) {
	s := make([]float32, 3*Size/4+1234) // 3 huge pages' worth, not aligned
	for i := range s {
		s[i] = float32(i)
	}
	n := Float32s(s)
	if n < 0 || n > len(s)*4 || n%Size != 0 {
		t.Fatalf("advised %d bytes of %d: want a multiple of %d inside the buffer", n, len(s)*4, Size)
	}
	for i, v := range s {
		if v != float32(i) {
			t.Fatalf("s[%d] = %v after Advise, want %d", i, v, i)
		}
	}
	u := make([]uint16, 5)
	if got := Uint16s(u); got != 0 {
		t.Errorf("a 10-byte buffer advised %d bytes, want 0", got)
	}
	if Float32s(nil) != 0 || Uint16s(nil) != 0 || Advise(nil) != 0 {
		t.Error("empty buffers must advise nothing")
	}
}
