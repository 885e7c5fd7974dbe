package hugepage

import (
	"os"
	"strings"
	"testing"
)

// TestAdviseAccepted checks that the kernel takes the advice where
// transparent huge pages are on ("always" or "madvise"): a refused madvise
// would silently cost decode its bandwidth gain.
func TestAdviseAccepted(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skipf("transparent huge pages are off here (%q, %v)", mode, err)
	}
	s := make([]uint16, 4*Size/2)
	if n := Uint16s(s); n < 3*Size {
		t.Errorf("advised %d bytes of an %d-byte buffer, want at least %d", n, len(s)*2, 3*Size)
	}
}
