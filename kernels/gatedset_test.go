package kernels_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

// On a backend that is no GatedSetter (ref), SwiGLUBackwardSet and
// GeGLUBackwardSet give what the accumulating ops add to zeros, whatever
// dgate and dup held (NaN here).
func TestGatedBackwardSetFallback(t *testing.T) {
	const n = 19
	r := rand.New(rand.NewPCG(3, 4))
	vals := func() []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	dout, gate, up := vals(), vals(), vals()
	b := ref.New()
	for _, g := range []struct {
		name string
		acc  func(dgate, dup, dout, gate, up []float32, n int)
		set  func(b kernels.Backend, dgate, dup, dout, gate, up []float32, n int)
	}{
		{"SwiGLUBackwardSet", b.SwiGLUBackward, kernels.SwiGLUBackwardSet},
		{"GeGLUBackwardSet", b.GeGLUBackward, kernels.GeGLUBackwardSet},
	} {
		wg, wu := make([]float32, n), make([]float32, n)
		g.acc(wg, wu, dout, gate, up, n)
		dg, du := make([]float32, n), make([]float32, n)
		for i := range dg {
			dg[i], du[i] = float32(math.NaN()), float32(math.NaN())
		}
		g.set(b, dg, du, dout, gate, up, n)
		for i := range n {
			if dg[i] != wg[i] || du[i] != wu[i] {
				t.Fatalf("%s [%d]: dgate %g dup %g, want %g %g", g.name, i, dg[i], du[i], wg[i], wu[i])
			}
		}
	}
}
