package model

import (
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// noAddNorm is cuda.Backend without its fused residual add and norm
// (kernels.ResidualNormer): hideAddNorm's method of the same name, at the
// same depth, makes the selector ambiguous, so neither is promoted and the
// model's blocks run Add and then the norm, as before the fused kernel.
type noAddNorm struct {
	*cuda.Backend
	hideAddNorm
}

type hideAddNorm struct{}

func (hideAddNorm) AddRMSNormForward(_, _, _ []float32, _ []uint16, _, _, _ []float32, _, _ int, _ float32) {
}

// TestAddNormCUDAEmulated: a LoRA step of the micro models on cuda.Backend
// on the emulated device, each block adding its attention's output into
// the residual stream and normalising the sum in one launch
// (rmsnorm_forward_add, a layer a forward; with checkpointing the
// backward's recompute adds one more) and as Add then the norm
// (noAddNorm): the same logprobs and LoRA gradients, bit for bit, in both
// precisions, for a pre-norm family and for Gemma 3's sandwich norms, with
// and without checkpointing.
func TestAddNormCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	for _, prec := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		b, drv := emulatedCUDABackendDriver(t, prec)
		if _, ok := kernels.Backend(noAddNorm{Backend: b}).(kernels.ResidualNormer); ok {
			b.Close()
			t.Fatal("noAddNorm still implements kernels.ResidualNormer")
		}
		fused := countingStep(t, drv, "rmsnorm_forward_add")
		adds := countingStep(t, drv, "add")
		for _, family := range []string{"qwen3", "gemma3_text"} {
			for _, ckpt := range []bool{false, true} {
				name := prec.String() + " " + family
				if ckpt {
					name += " checkpointed"
				}
				s := microStep{family: family, targets: AllModules(), alpha: 4, bInit: func(i int) float32 { return float32(i%5) * 0.04 }, checkpoint: ckpt}
				lp, g, n := fused(b, s)
				wlp, wg, wn := fused(noAddNorm{Backend: b}, s)
				_, _, na := adds(b, s)
				_, _, wna := adds(noAddNorm{Backend: b}, s)
				layers := microConfig(family).Layers
				if n < layers || wn != 0 {
					t.Errorf("%s: %d rmsnorm_forward_add launches fused, %d not; want at least %d (a layer) and 0", name, n, wn, layers)
				}
				if wna-na != n {
					t.Errorf("%s: %d add launches fused, %d not: want %d fewer (one a fused launch)", name, na, wna, n)
				}
				sameStepBits(t, name, lp, wlp, g, wg)
			}
		}
		b.Close()
	}
}
