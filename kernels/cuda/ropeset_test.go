package cuda_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestRoPEBackwardSet: on the emulated device RoPEBackwardSet (partial
// rotary: 3 of 4 pairs rotated, two dims passed through) writes over
// NaN exactly what RoPEBackward adds to zeros.
func TestRoPEBackwardSet(t *testing.T) {
	t.Parallel()
	b, drv, _ := emulatedBackend(t)
	defer b.Close()
	const N, H, D = 5, 3, 8
	n := N * H * D
	r := rand.New(rand.NewPCG(28, 14))
	var bufs [][]float32
	mk := func(host []float32) []float32 {
		x, err := b.AllocF32(len(host))
		if err != nil {
			t.Fatal(err)
		}
		copy(x, host)
		bufs = append(bufs, x)
		return x
	}
	defer func() {
		for _, x := range bufs {
			b.FreeF32(x)
		}
	}()
	pos := []int32{0, 3, 1, 7, 2}
	invFreq := mk([]float32{1, 0.1, 0.01})
	dout := mk(randn(r, n))
	nan := make([]float32, n)
	for i := range nan {
		nan[i] = float32(math.NaN())
	}
	want, got := mk(make([]float32, n)), mk(nan)
	b.RoPEBackward(want, dout, pos, invFreq, N, H, D)
	l0 := len(drv.Launches())
	kernels.RoPEBackwardSet(b, got, dout, pos, invFreq, N, H, D)
	kernels.Synchronize(b)
	for i := range n {
		if got[i] != want[i] {
			t.Fatalf("[%d] = %g, RoPEBackward onto zeros %g", i, got[i], want[i])
		}
	}
	if ls := drv.Launches()[l0:]; len(ls) != 1 || ls[0].Kernel != "rope_backward_set" {
		t.Errorf("launched %v, want rope_backward_set alone", ls)
	}
}
