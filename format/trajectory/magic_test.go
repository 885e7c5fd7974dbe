package trajectory

import (
	"strings"
	"testing"
)

// TestStartsWithMagic: only a text that begins with all of "PAR1" is
// Parquet; JSON lines, an empty input and a cut-off magic are not.
func TestStartsWithMagic(t *testing.T) {
	for text, want := range map[string]bool{"PAR1\x15\x04": true, "PAR1": true, `{"id":"a"}`: false, "": false, "PA": false} {
		if got := StartsWithMagic(strings.NewReader(text)); got != want {
			t.Errorf("StartsWithMagic(%q) = %v, want %v", text, got, want)
		}
	}
}
