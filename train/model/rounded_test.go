package model

import (
	"math"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// noRounder is cuda.Backend saying it does not round the products' dout
// (kernels.DoutRounder): the model's MLP backward then lets
// LinearBackwardBF16 round dgate and dup itself, as before the rounded
// copies.
type noRounder struct{ *cuda.Backend }

func (noRounder) RoundsLinearDout() bool { return false }

// TestDoutRounderCUDAEmulated: a LoRA step of a bfloat16 micro model on
// cuda.Backend in PrecisionBF16 on the emulated device gives the same
// logprobs and LoRA gradients, bit for bit, whether the gated backward
// writes dgate's and dup's bf16 copies for the gate and up products
// (kernels.DoutRounder) or those products round them themselves
// (noRounder), for SwiGLU (qwen2) and GeGLU (qwen2's shape with
// gelu_tanh); and only the first launches the _bf16 kernels.
func TestDoutRounderCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b, drv := emulatedCUDABackendDriver(t, kernels.PrecisionBF16)
	defer b.Close()
	step := func(be kernels.Backend, act string) (lp []float32, grads [][]float32, roundedLaunches int) {
		t.Helper()
		l0 := 0
		lp, grads = microLoRAStep(t, be, act, 4, func(i int) float32 { return float32(i%7) * 0.05 }, func(end bool) {
			if !end {
				l0 = len(drv.Launches())
				return
			}
			for _, l := range drv.Launches()[l0:] {
				if l.Kernel == "swiglu_backward_set_bf16" || l.Kernel == "geglu_backward_set_bf16" {
					roundedLaunches++
				}
			}
		})
		return lp, grads, roundedLaunches
	}
	for _, act := range []string{"", "gelu_tanh"} {
		lp, g, n := step(b, act)
		wlp, wg, wn := step(noRounder{b}, act)
		if n != 2 || wn != 0 {
			t.Errorf("act %q: %d _bf16 launches with the rounded copies, %d without; want 2 (a layer) and 0", act, n, wn)
		}
		same := func(what string, got, want []float32) {
			t.Helper()
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Errorf("act %q: %s [%d] = %g with the rounded copies, %g without", act, what, i, got[i], want[i])
					return
				}
			}
		}
		same("logprob", lp, wlp)
		nonzero := false
		for i := range wg {
			same("gradient", g[i], wg[i])
			for _, v := range wg[i] {
				nonzero = nonzero || v != 0
			}
		}
		if !nonzero {
			t.Errorf("act %q: every gradient is zero", act)
		}
	}
}
