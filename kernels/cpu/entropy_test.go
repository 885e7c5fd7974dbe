package cpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/ref"
)

// TestEntropyMaskedLogits: a masked (−Inf) logit has probability 0 and
// adds nothing to the entropy (0·log 0 = 0, as torch's
// Categorical(logits=…).entropy()), so a row's entropy is that of the row
// with its masked entries left out, and its gradient is that row's, 0 at
// the masked entries. Written out, p·log p there is 0·(−Inf) = NaN, which
// both ref and the CPU backend returned. A NaN logit still gives NaN.
func TestEntropyMaskedLogits(t *testing.T) {
	backends := map[string]kernels.Backend{"ref": ref.New()}
	for _, gemm := range gemms() {
		b, err := cpu.New(cpu.Options{GEMM: gemm})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		backends["cpu/"+gemm] = b
	}
	r := rand.New(rand.NewPCG(7, 11))
	const V = 37
	inf := float32(math.Inf(-1))
	for name, b := range backends {
		for _, masked := range [][]int{{3}, {0, 5, 17, 36}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36}} {
			row := make([]float32, V)
			for i := range row {
				row[i] = float32(r.NormFloat64() * 3)
			}
			var kept []float32
			isMasked := make([]bool, V)
			for _, j := range masked {
				row[j], isMasked[j] = inf, true
			}
			for j, v := range row {
				if !isMasked[j] {
					kept = append(kept, v)
				}
			}
			got, want := make([]float32, 1), make([]float32, 1)
			b.EntropyForward(got, row, 1, V)
			b.EntropyForward(want, kept, 1, len(kept))
			if !(math.Abs(float64(got[0]-want[0])) <= 1e-5*(1+math.Abs(float64(want[0])))) {
				t.Errorf("%s, %d of %d masked: entropy %g, want %g (the unmasked entries')", name, len(masked), V, got[0], want[0])
			}
			dent := []float32{1.5}
			gd, wd := make([]float32, V), make([]float32, len(kept))
			b.EntropyBackward(gd, dent, row, 1, V)
			b.EntropyBackward(wd, dent, kept, 1, len(kept))
			k := 0
			for j, g := range gd {
				w := float32(0)
				if !isMasked[j] {
					w, k = wd[k], k+1
				}
				if !(math.Abs(float64(g-w)) <= 1e-5*(1+math.Abs(float64(w)))) {
					t.Errorf("%s, %d of %d masked: dinp[%d] = %g, want %g", name, len(masked), V, j, g, w)
				}
			}
		}
		row := []float32{1, float32(math.NaN()), inf, 2}
		got := make([]float32, 1)
		b.EntropyForward(got, row, 1, len(row))
		if !math.IsNaN(float64(got[0])) {
			t.Errorf("%s: entropy of a row with a NaN logit = %g, want NaN", name, got[0])
		}
	}
}
