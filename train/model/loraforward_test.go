package model

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/ref"
)

// noLoRAForwardMany is cuda.Backend without its kernels.LoRAManyForwarder:
// the field hides the promoted method, so the model runs each
// projection's LoRA forward on its own (loraSet), as before
// LoRAForwardMany.
type noLoRAForwardMany struct {
	*cuda.Backend
	LoRAForwardMany struct{}
}

// TestLoRAForwardManyCUDAEmulated: a LoRA step (all seven projections, a
// scale 1.5/2 that is no power of two) of bfloat16 micro models on
// cuda.Backend on the emulated device, in both precisions, with the LoRA
// forward of q, k, v and of gate, up as one LoRAForwardMany each (a
// scale_cols launch a projection: 5 a layer, twice that with the
// checkpointed pass's recomputation) and without (noLoRAForwardMany:
// none): the logprobs and the LoRA gradients are the same bits (every
// step rounds as the ops one projection at a time do, and the fake cuBLAS
// sums the wider product's values as the narrow ones'), and in the exact
// precision both within 1e-5 of kernels/ref's, TestLoRAManyCUDAEmulated's
// bound. qwen2 carries q, k, v biases (the base products add onto the
// LoRA outputs before their bias); gemma3_text a GeGLU MLP, checkpointed.
// The differences from ref are logged.
func TestLoRAForwardManyCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	bInit := func(i int) float32 { return float32(i%7-3) * 0.05 }
	for _, s := range []microStep{
		{family: "qwen2", targets: AllModules(), alpha: 3, bInit: bInit},
		{family: "gemma3_text", targets: AllModules(), alpha: 3, bInit: bInit, checkpoint: true},
	} {
		step := func(be kernels.Backend, launches func() int) (lp []float32, grads []float32, n int) {
			t.Helper()
			lp, gs := microLoRAStepOf(t, be, s, func(end bool) {
				if !end {
					n = -launches()
					return
				}
				n += launches()
			})
			return lp, slices.Concat(gs...), n
		}
		wantLP, wantG, _ := step(ref.New(), func() int { return 0 })
		for _, p := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
			what := fmt.Sprintf("%s, %v", s.family, p)
			b, drv := emulatedCUDABackendDriver(t, p)
			splits := func() int {
				n := 0
				for _, l := range drv.Launches() {
					if l.Kernel == "scale_cols" {
						n++
					}
				}
				return n
			}
			lp, g, n := step(b, splits)
			olp, og, on := step(noLoRAForwardMany{Backend: b}, splits)
			want := 5 * microConfig(s.family).Layers
			if s.checkpoint {
				want *= 2
			}
			if n != want || on != 0 {
				t.Errorf("%s: %d scale_cols launches with LoRAForwardMany, %d without; want %d and 0", what, n, on, want)
			}
			if !slices.Equal(lp, olp) {
				t.Errorf("%s: logprobs %.2g from the one-at-a-time path's, want the same bits", what, maxRelDiff(lp, olp))
			}
			if !slices.Equal(g, og) {
				t.Errorf("%s: LoRA gradients %.2g from the one-at-a-time path's, want the same bits", what, maxRelDiff(g, og))
			}
			if p == kernels.PrecisionF32 {
				dr, dlp := maxRelDiff(g, wantG), maxRelDiff(lp, wantLP)
				if dr > 1e-5 || dlp > 1e-5 {
					t.Errorf("%s: LoRA gradients %.2g, logprobs %.2g from ref's, over 1e-5", what, dr, dlp)
				}
				t.Logf("%s: LoRA gradients %.2g, logprobs %.2g from ref's", what, dr, dlp)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
