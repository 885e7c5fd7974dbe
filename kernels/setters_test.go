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

// On ref RoPEBackwardSet gives what RoPEBackward adds to zeros, whatever
// dinp held.
func TestRoPEBackwardSetFallback(t *testing.T) {
	const N, H, D = 3, 2, 6
	r := rand.New(rand.NewPCG(3, 5))
	dout := make([]float32, N*H*D)
	for i := range dout {
		dout[i] = float32(r.NormFloat64())
	}
	pos, invFreq := []int32{0, 2, 5}, []float32{1, 0.3}
	b := ref.New()
	want, got := make([]float32, N*H*D), make([]float32, N*H*D)
	for i := range got {
		got[i] = float32(math.NaN())
	}
	b.RoPEBackward(want, dout, pos, invFreq, N, H, D)
	kernels.RoPEBackwardSet(b, got, dout, pos, invFreq, N, H, D)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("[%d] = %g, want %g", i, got[i], want[i])
		}
	}
}
