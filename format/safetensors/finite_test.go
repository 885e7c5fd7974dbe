package safetensors

import (
	"math"
	"testing"
)

func TestFirstNonFinite(t *testing.T) {
	vals := []float32{0, -1, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 3}
	if got := FirstNonFinite(vals); got != -1 {
		t.Fatalf("finite values: got %d", got)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		for p := range vals {
			w := append([]float32(nil), vals...)
			w[p] = bad
			w = append(w, bad)
			if got := FirstNonFinite(w); got != p {
				t.Errorf("%v at %d: got %d", bad, p, got)
			}
		}
	}
}
