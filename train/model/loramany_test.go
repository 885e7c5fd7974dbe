package model

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/ref"
)

// noLoRAMany is cuda.Backend without its kernels.LoRAManyBackwarder,
// kernels.LoRARoundedBackwarder, kernels.LoRAInputRounder and
// kernels.NormInputRounder: the fields hide the promoted methods, so the
// model runs each projection's LoRA backward on its own, as before
// LoRABackwardMany.
type noLoRAMany struct {
	*cuda.Backend
	LoRABackwardMany          struct{}
	LoRABackwardManyRounded   struct{}
	MatmulBF16                struct{}
	LoRABackwardManyInputBF16 struct{}
}

// noRoundedLoRANorNormInput is noRoundedLoRA that also takes the normed
// input as float32 only (kernels.NormInputRounder): every LoRA backward
// of q, k, v and gate, up is LoRABackwardMany.
type noRoundedLoRANorNormInput struct{ noRoundedLoRA }

func (noRoundedLoRANorNormInput) RoundsNormInput() bool { return false }

// TestLoRAManyCUDAEmulated: a LoRA step (all seven projections, a rank
// and scale 2·1.5/2 that is no power of two) of a bfloat16 micro qwen2
// model on cuda.Backend on the emulated device, in both precisions, with
// the LoRA backward of q, k, v and of gate, up as one LoRABackwardMany
// each (5 axpy launches a layer; noRoundedLoRANorNormInput, so that gate
// and up take it on float32 douts, and both groups on the float32 normed
// input) and without (noLoRAMany: none): the
// logprobs are the same bits (the forward is untouched), the LoRA
// gradients within 1e-5 of each other by maxRelDiff (float32 reorderings:
// the scale's place, dx's one sum over the concatenated rank; the micro
// shapes take no TF32 product), and in the exact precision both within
// 1e-5 of kernels/ref's. The differences are logged.
func TestLoRAManyCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	step := func(be kernels.Backend, launches func() int) (lp []float32, grads []float32, n int) {
		t.Helper()
		lp, gs := microLoRAStep(t, be, "", 3, func(i int) float32 { return float32(i%7-3) * 0.05 }, func(end bool) {
			if !end {
				n = -launches()
				return
			}
			n += launches()
		})
		return lp, slices.Concat(gs...), n
	}
	none := func() int { return 0 }
	wantLP, wantG, _ := step(ref.New(), none)
	for _, p := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		b, drv := emulatedCUDABackendDriver(t, p)
		axpys := func() int {
			n := 0
			for _, l := range drv.Launches() {
				if l.Kernel == "axpy" {
					n++
				}
			}
			return n
		}
		lp, g, n := step(noRoundedLoRANorNormInput{noRoundedLoRA{b}}, axpys)
		olp, og, on := step(noLoRAMany{Backend: b}, axpys)
		layers := microConfig("qwen2").Layers
		if n != 5*layers || on != 0 {
			t.Errorf("%v: %d axpy launches with LoRABackwardMany, %d without; want %d (5 a layer) and 0", p, n, on, 5*layers)
		}
		for i := range lp {
			if lp[i] != olp[i] {
				t.Fatalf("%v: logprob [%d] = %g with LoRABackwardMany, %g without", p, i, lp[i], olp[i])
			}
		}
		d := maxRelDiff(g, og)
		msg := fmt.Sprintf("%v: LoRA gradients %.2g from the one-at-a-time path's", p, d)
		if d > 1e-5 {
			t.Errorf("%s, over 1e-5", msg)
		}
		if p == kernels.PrecisionF32 {
			dr, odr := maxRelDiff(g, wantG), maxRelDiff(og, wantG)
			msg += fmt.Sprintf("; from ref's %.2g (one at a time: %.2g); logprobs %.2g", dr, odr, maxRelDiff(lp, wantLP))
			if dr > 1e-5 || odr > 1e-5 {
				t.Errorf("%s, over 1e-5", msg)
			}
		}
		t.Log(msg)
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
