package trainer

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/train/model"
	"github.com/hone-rl/hone/train/tinymodel"
)

// TestGradNormWaits: GradNorm and checkWeights take every LoRA tensor's sum
// of squares by one kernels.SumSquaresSegments over the placed adapter's
// flat memory. On cuda.Backend, stream-ordered over the deferred emulated
// device, each is one sum_squares_segments launch (SumSquaresMany's would
// be two a tensor: 56 on this adapter) and waits for the device once (one
// SumSquares a tensor waited once each: 28 times), and gives the bits of
// the per-tensor sums; on the CPU backend (SumSquaresMany's loop) the
// same bits. checkWeights names the tensor holding a NaN. Waits are
// counted as in train/model's TestStreamOrderedWaits.
func TestGradNormWaits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sums on the CPU emulation of the CUDA device")
	}
	b, drv := emulatedBackend(t, true)
	defer b.Close()
	c, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	cfg, err := tinymodel.Options{Hidden: 16, Layers: 2, Heads: 2, KVHeads: 1}.Config()
	if err != nil {
		t.Fatal(err)
	}
	waits := func() int {
		return drv.Calls("cuCtxSynchronize") + drv.Calls("cuMemcpyHtoD_v2") + drv.Calls("cuMemcpyDtoH_v2")
	}
	for _, be := range []kernels.Backend{b, c} {
		ad, err := model.NewAdapter(&cfg, model.AdapterConfig{Rank: 2, Alpha: 2, Targets: model.AllModules()}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := ad.Place(be); err != nil {
			t.Fatal(err)
		}
		kernels.Synchronize(be)
		r := rand.New(rand.NewPCG(28, 4))
		tensors := 0
		ad.Params(func(_ string, p, g []float32) {
			for i := range g {
				p[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			tensors++
		})
		each := func(param bool) (float64, int) { // the sums a tensor at a time
			w0, s := waits(), 0.0
			ad.Params(func(_ string, p, g []float32) {
				if param {
					s += be.SumSquares(p, len(p))
				} else {
					s += be.SumSquares(g, len(g))
				}
			})
			return s, waits() - w0
		}
		GradNorm(be, ad) // grows the backend's scratch (a wait) before the counts
		wantG, eachWaits := each(false)
		w0, l0 := waits(), len(drv.Launches())
		got := GradNorm(be, ad)
		gradWaits, gradLaunches := waits()-w0, drv.Launches()[l0:]
		if math.Float64bits(got) != math.Float64bits(math.Sqrt(wantG)) {
			t.Errorf("%s: GradNorm %.17g, the per-tensor sums give %.17g", be.Name(), got, math.Sqrt(wantG))
		}
		wantW, _ := each(true)
		w0, l0 = waits(), len(drv.Launches())
		gotW := sumSquares(be, ad, false)
		if err := checkWeights(be, ad); err != nil {
			t.Errorf("%s: checkWeights on finite weights: %v", be.Name(), err)
		}
		checkWaits, checkLaunches := waits()-w0, drv.Launches()[l0:]
		sw := 0.0
		for _, v := range gotW {
			sw += v
		}
		if math.Float64bits(sw) != math.Float64bits(wantW) {
			t.Errorf("%s: the weights' sums add to %.17g, the per-tensor sums to %.17g", be.Name(), sw, wantW)
		}
		if be == kernels.Backend(b) {
			// checkWeights' and the sums' before it: one launch and one wait each.
			if gradWaits != 1 || checkWaits != 2 || eachWaits != tensors {
				t.Errorf("%s: GradNorm waited %d times, checkWeights and sumSquares %d, a SumSquares a tensor %d; want 1, 2 and %d", be.Name(), gradWaits, checkWaits, eachWaits, tensors)
			}
			if len(gradLaunches) != 1 || gradLaunches[0].Kernel != "sum_squares_segments" || len(checkLaunches) != 2 {
				t.Errorf("%s: GradNorm launched %v, checkWeights and sumSquares %v; want one sum_squares_segments each", be.Name(), gradLaunches, checkLaunches)
			}
			t.Logf("%s: %d LoRA tensors: GradNorm and checkWeights launch %d and %d kernels and wait %d and %d times, a SumSquares a tensor waits %d", be.Name(), tensors, len(gradLaunches), len(checkLaunches)/2, gradWaits, checkWaits/2, eachWaits)
		}
		kernels.Synchronize(be)
		var name string
		i := 0
		ad.Params(func(n string, p, _ []float32) {
			if i == 9 {
				name, p[len(p)-1] = n, float32(math.NaN())
			}
			i++
		})
		if err := checkWeights(be, ad); err == nil || !strings.Contains(err.Error(), name+" holds a NaN") {
			t.Errorf("%s: checkWeights with a NaN in %s: %v", be.Name(), name, err)
		}
		ad.Free()
	}
}
