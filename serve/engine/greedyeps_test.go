package engine

import (
	"math"
	"testing"
)

// TestGreedyBelowSamplingEps: a temperature below vLLM's _SAMPLING_EPS
// (1e-5) is greedy, as vLLM's SamplingType decides: over a row whose best
// entries tie, every choice is the lower id and no uniform is drawn, where
// sampling at that temperature would split the ties.
func TestGreedyBelowSamplingEps(t *testing.T) {
	be := rowBackend(t)
	row := []float32{1, 3, 3, float32(math.Inf(-1)), 2}
	for _, temp := range []float64{0, 5e-6, 9.9e-6} {
		s := newSampler(be, Params{Temperature: temp, Seed: 5, HasSeed: true}, 0)
		for i := range 64 {
			if got := s.choose(append([]float32(nil), row...)); got != 1 {
				t.Fatalf("temperature %g, draw %d: picked %d, want the greedy 1", temp, i, got)
			}
		}
		if inv, ok := s.deviceInv(nil, len(row)); !ok || inv != 0 {
			t.Errorf("temperature %g: device choice (%v, %v), want greedy (0, true)", temp, inv, ok)
		}
	}
}
