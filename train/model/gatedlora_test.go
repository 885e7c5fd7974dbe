package model

import (
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// noGatedLoRA is cuda.Backend without the gated unit's fused LoRA
// products (kernels.GatedLoRAForwarder, kernels.GatedLoRABackwarder),
// hidden as noAddNorm hides its method: the MLP then writes act as float32
// for the down projection's LoRA forward (LinearForward, Scale), and its
// backward writes act's rounding for the DA product (MatmulBF16), as
// before.
type noGatedLoRA struct {
	*cuda.Backend
	hideGatedLoRA
}

type hideGatedLoRA struct{}

func (hideGatedLoRA) GatedLoRAForwardRounded(_ []uint16, _ []float32, _, _, _ []float32, _, _, _ int, _ float32, _ bool) {
}

func (hideGatedLoRA) GatedLoRABackwardRounded(_, _ []uint16, _, _, _ []float32, _ []uint16, _, _ []float32, _, _, _ int, _ bool) {
}

// TestGatedLoRACUDAEmulated: a LoRA step of the micro models on
// cuda.Backend on the emulated device in PrecisionBF16, the down
// projection's u = Scale·act·Aᵀ computed by the gated unit's kernel and
// its DA += gᵀ·act by the gated backward's (gated_lora.cu: two launches a
// layer, and one more a layer for the checkpointed backward's recompute;
// the forward's alone where gate and up do not both have a LoRA)
// and apart (noGatedLoRA): the logprobs agree within 1e-5 of the largest
// and the LoRA gradients within 1e-3 (u's and DA's sums run in another
// order than the emulated cuBLAS's one float64 sum a value, so their last
// bits move, and where u is rounded to bfloat16 a rounding may flip), for
// SwiGLU (qwen2) and GeGLU (Gemma 3),
// with and without checkpointing. Without a LoRA on down, and in
// PrecisionF32 (act not rounded), the kernel never runs and the step is
// the same bits.
func TestGatedLoRACUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	bInit := func(i int) float32 { return float32(i%5) * 0.04 }
	for _, prec := range []kernels.Precision{kernels.PrecisionBF16, kernels.PrecisionF32} {
		b, drv := emulatedCUDABackendDriver(t, prec)
		be := kernels.Backend(noGatedLoRA{Backend: b})
		if _, ok := be.(kernels.GatedLoRAForwarder); ok {
			b.Close()
			t.Fatal("noGatedLoRA still implements kernels.GatedLoRAForwarder")
		}
		if _, ok := be.(kernels.GatedLoRABackwarder); ok {
			b.Close()
			t.Fatal("noGatedLoRA still implements kernels.GatedLoRABackwarder")
		}
		step := countingStep(t, drv, "gated_lora_forward_swiglu", "gated_lora_forward_geglu", "gated_lora_backward_swiglu", "gated_lora_backward_geglu")
		for _, c := range []struct {
			name string
			s    microStep
			bwd  bool // the backward fuses too: the gated backward writes only dgate's and dup's roundings
		}{
			{"qwen2", microStep{family: "qwen2", targets: AllModules(), alpha: 4, bInit: bInit}, true},
			{"qwen2 checkpointed", microStep{family: "qwen2", targets: AllModules(), alpha: 4, bInit: bInit, checkpoint: true}, true},
			{"gemma3_text", microStep{family: "gemma3_text", targets: AllModules(), alpha: 4, bInit: bInit}, true},
			{"llama q,v", microStep{family: "llama", targets: []Module{ModQ, ModV}, alpha: 4, bInit: bInit}, false},
			// A LoRA on gate but not up: their group is mixed, the float32
			// dgate and dup are written (roundedLoRA), and the backward
			// runs unfused.
			{"llama q,v,gate,down", microStep{family: "llama", targets: []Module{ModQ, ModV, ModGate, ModDown}, alpha: 4, bInit: bInit}, false},
		} {
			name := prec.String() + " " + c.name
			lp, g, n := step(b, c.s)
			wlp, wg, wn := step(noGatedLoRA{Backend: b}, c.s)
			want := 0
			if L := microConfig(c.s.family).Layers; prec == kernels.PrecisionBF16 && slices.Contains(c.s.targets, ModDown) {
				want = L // the forward
				if c.bwd {
					want += L
				}
				if c.s.checkpoint {
					want += L // the recompute's forward
				}
			}
			if n != want || wn != 0 {
				t.Errorf("%s: %d gated_lora_forward launches fused, %d not; want %d and 0", name, n, wn, want)
			}
			if want == 0 {
				sameStepBits(t, name, lp, wlp, g, wg)
				continue
			}
			// u's last bits reach the gradients also through its bf16
			// rounding (the rounded LoRA backward's DB products): a value
			// whose rounding flips moves its term by up to 2⁻⁸, so the
			// gradients' bound is 1e-3 of the largest, the logprobs' 1e-5.
			const tol, lpTol = 1e-3, 1e-5
			if d := maxRelDiff(lp, wlp); d > lpTol {
				t.Errorf("%s: logprobs differ by %.3g of the largest (bound %g)", name, d, lpTol)
			}
			nonzero, worst := false, 0.0
			for i := range wg {
				d := maxRelDiff(g[i], wg[i])
				worst = max(worst, d)
				if d > tol {
					t.Errorf("%s: LoRA gradient %d differs by %.3g of the largest (bound %g)", name, i, d, tol)
				}
				for _, v := range wg[i] {
					nonzero = nonzero || v != 0
				}
			}
			if !nonzero {
				t.Errorf("%s: every LoRA gradient is zero", name)
			}
			t.Logf("%s: logprobs %.3g, LoRA gradients %.3g of the largest apart", name, maxRelDiff(lp, wlp), worst)
		}
		b.Close()
	}
}

// TestGatedLoRAMemory: a training pass of a bfloat16 micro model on
// cuda.Backend in PrecisionBF16 holds no act (N·I values less than with
// noGatedLoRA, give or take the arena's alignment) where every layer's
// MLP takes the down projection's LoRA products inside the gated unit
// both ways (Model.actFused), and as much as noGatedLoRA where a layer
// cannot: no LoRA on down, or one on gate without up (whose float32 dgate
// the fused backward does not write).
func TestGatedLoRAMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b, c, bt, NI := memoryCase(t)
	defer b.Close()
	for _, tc := range []struct {
		name    string
		targets []Module
		less    int
	}{
		{"every module", AllModules(), NI},
		{"down alone", []Module{ModDown}, NI},
		{"no down", []Module{ModQ, ModV, ModGate, ModUp}, 0},
		{"gate without up", []Module{ModGate, ModDown}, 0},
	} {
		slabLess(t, tc.name+", against noGatedLoRA", noGatedLoRA{Backend: b}, b, c, bt, tc.targets, tc.less)
	}
}
