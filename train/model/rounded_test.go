package model

import (
	"context"
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
		c := microConfig("qwen2")
		c.Act = act
		m, err := New(c, be)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		randomize(m, 5)
		if err := m.ToBF16(); err != nil {
			t.Fatal(err)
		}
		ad, err := NewAdapter(&m.Config, AdapterConfig{Rank: 2, Alpha: 4, Targets: AllModules()}, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, layer := range ad.Layers {
			for _, lr := range layer {
				for i := range lr.B {
					lr.B[i] = float32(i%7) * 0.05
				}
			}
		}
		if err := ad.Place(be); err != nil {
			t.Fatal(err)
		}
		defer ad.Free()
		bt := packed(c.Vocab, []int{4, 6}, 2)
		dlp := make([]float32, len(bt.IDs))
		for i := range dlp {
			dlp[i] = -1 / float32(len(dlp))
		}
		l0 := len(drv.Launches())
		ad.ZeroGrad()
		p, err := m.Forward(context.Background(), bt, ad, TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lp = append([]float32(nil), p.Logprob...)
		if err := p.Backward(context.Background(), dlp, nil); err != nil {
			t.Fatal(err)
		}
		p.Release()
		kernels.Synchronize(be)
		for _, l := range drv.Launches()[l0:] {
			if l.Kernel == "swiglu_backward_set_bf16" || l.Kernel == "geglu_backward_set_bf16" {
				roundedLaunches++
			}
		}
		ad.Params(func(_ string, _, g []float32) { grads = append(grads, append([]float32(nil), g...)) })
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
