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
// dgate and dup held (NaN here), and act the forward's output.
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
	nans := func() []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.NaN())
		}
		return x
	}
	dout, gate, up := vals(), vals(), vals()
	b := ref.New()
	for _, g := range []struct {
		name string
		acc  func(dgate, dup, dout, gate, up []float32, n int)
		fwd  func(out, gate, up []float32, n int)
		set  func(b kernels.Backend, dgate, dup, act, dout, gate, up []float32, n int)
	}{
		{"SwiGLUBackwardSet", b.SwiGLUBackward, b.SwiGLUForward, kernels.SwiGLUBackwardSet},
		{"GeGLUBackwardSet", b.GeGLUBackward, b.GeGLUForward, kernels.GeGLUBackwardSet},
	} {
		wg, wu, wa := make([]float32, n), make([]float32, n), make([]float32, n)
		g.acc(wg, wu, dout, gate, up, n)
		g.fwd(wa, gate, up, n)
		dg, du, da := nans(), nans(), nans()
		g.set(b, dg, du, da, dout, gate, up, n)
		for i := range n {
			if dg[i] != wg[i] || du[i] != wu[i] || da[i] != wa[i] {
				t.Fatalf("%s [%d]: dgate %g dup %g act %g, want %g %g %g", g.name, i, dg[i], du[i], da[i], wg[i], wu[i], wa[i])
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
