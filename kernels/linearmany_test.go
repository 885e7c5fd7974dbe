package kernels_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

// On a backend that is no LinearManyBF16er (ref), LinearForwardBF16Many is
// one LinearForwardBF16 a weight (nil biases: none), and mismatched lists
// panic naming it.
func TestLinearForwardBF16ManyFallback(t *testing.T) {
	const N, C = 3, 5
	OCs := []int{4, 2}
	r := rand.New(rand.NewPCG(5, 6))
	vals := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	inp := vals(N * C)
	b := ref.New()
	var outs, want [][]float32
	var weights [][]uint16
	for _, oc := range OCs {
		w := make([]uint16, oc*C)
		kernels.ToBF16(w, vals(oc*C))
		weights = append(weights, w)
		outs, want = append(outs, make([]float32, N*oc)), append(want, make([]float32, N*oc))
	}
	for i, oc := range OCs {
		b.LinearForwardBF16(want[i], inp, weights[i], nil, N, C, oc)
	}
	kernels.LinearForwardBF16Many(b, outs, inp, weights, nil, N, C, OCs)
	for i := range OCs {
		for j := range outs[i] {
			if outs[i][j] != want[i][j] {
				t.Fatalf("output %d [%d] = %g, want %g", i, j, outs[i][j], want[i][j])
			}
		}
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "LinearForwardBF16Many") {
			t.Errorf("mismatched lists: panic %v, want one naming LinearForwardBF16Many", p)
		}
	}()
	kernels.LinearForwardBF16Many(b, outs, inp, weights[:1], nil, N, C, OCs)
}
