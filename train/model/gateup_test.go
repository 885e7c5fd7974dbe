package model

import (
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestGateUpBF16CUDAEmulated: a LoRA step of the micro models on
// cuda.Backend on the emulated device with TrainOptions.GateUpBF16 and
// without. In PrecisionBF16, where every layer fuses the down projection's
// LoRA products (Model.actFused) and gate and up have LoRA updates of one
// rank or none, the gated kernels' _bf16in forms run (a layer's forward
// and backward, and the checkpointed backward's recompute), and the
// logprobs stay within 1% of the largest of the default's and the LoRA
// gradients within 5%, the bound the goldens hold the bf16 precision's
// gradients to against float32 compute (measured: 0.59% and 3.3% on
// qwen2; gate and up rounded to bfloat16 once more, and their LoRA terms
// before the base products add onto them), for SwiGLU (qwen2) and
// GeGLU (Gemma 3), with and without checkpointing, and with a LoRA on the
// attention and down alone. Where a layer cannot hold them (a LoRA on
// gate without up, no LoRA on down) and in PrecisionF32 the option changes
// nothing: the same bits. A pass holding them keeps 2·N·I bfloat16 values
// a layer for gate and up where it kept float32 ones: N·I float32s a layer
// less (one slot under checkpointing); Model.GateUpHeld says which.
func TestGateUpBF16CUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	bInit := func(i int) float32 { return float32(i%5) * 0.04 }
	held := func(k string) bool { return strings.HasPrefix(k, "gated_lora_") && strings.HasSuffix(k, "_bf16in") }
	for _, prec := range []kernels.Precision{kernels.PrecisionBF16, kernels.PrecisionF32} {
		b, drv := emulatedCUDABackendDriver(t, prec)
		for _, c := range []struct {
			name string
			s    microStep
			held bool
		}{
			{"qwen2", microStep{family: "qwen2", targets: AllModules(), alpha: 4, bInit: bInit}, true},
			{"qwen2 checkpointed", microStep{family: "qwen2", targets: AllModules(), alpha: 4, bInit: bInit, checkpoint: true}, true},
			{"gemma3_text", microStep{family: "gemma3_text", targets: AllModules(), alpha: 4, bInit: bInit}, true},
			{"llama q,v,down", microStep{family: "llama", targets: []Module{ModQ, ModV, ModDown}, alpha: 4, bInit: bInit}, true},
			{"llama q,v,gate,down", microStep{family: "llama", targets: []Module{ModQ, ModV, ModGate, ModDown}, alpha: 4, bInit: bInit}, false},
			{"llama q,v", microStep{family: "llama", targets: []Module{ModQ, ModV}, alpha: 4, bInit: bInit}, false},
		} {
			name := prec.String() + " " + c.name
			wlp, wg := microLoRAStepOf(t, b, c.s, nil)
			c.s.gateUpBF16 = true
			l0 := 0
			n := 0
			lp, g := microLoRAStepOf(t, b, c.s, func(end bool) {
				if !end {
					l0 = len(drv.Launches())
					return
				}
				for _, l := range drv.Launches()[l0:] {
					if held(l.Kernel) {
						n++
					}
				}
			})
			want := 0
			if c.held && prec == kernels.PrecisionBF16 {
				L := microConfig(c.s.family).Layers
				want = 2 * L
				if c.s.checkpoint {
					want += L
				}
			}
			if n != want {
				t.Errorf("%s: %d launches of the _bf16in kernels, want %d", name, n, want)
			}
			if want == 0 {
				sameStepBits(t, name, lp, wlp, g, wg)
				continue
			}
			const tol, lpTol = 5e-2, 1e-2
			if d := maxRelDiff(lp, wlp); d > lpTol {
				t.Errorf("%s: logprobs differ by %.3g of the largest (bound %g)", name, d, lpTol)
			}
			worst := 0.0
			for i := range wg {
				d := maxRelDiff(g[i], wg[i])
				worst = max(worst, d)
				if d > tol {
					t.Errorf("%s: LoRA gradient %d differs by %.3g of the largest (bound %g)", name, i, d, tol)
				}
			}
			t.Logf("%s: logprobs %.3g, LoRA gradients %.3g of the largest apart", name, maxRelDiff(lp, wlp), worst)
		}
		b.Close()
	}

	b, c, bt, NI := memoryCase(t)
	defer b.Close()
	for _, tc := range []struct {
		name    string
		targets []Module
		opt     TrainOptions
		less    int
	}{
		{"every module", AllModules(), TrainOptions{GateUpBF16: true}, c.Layers * NI},
		{"every module, checkpointed", AllModules(), TrainOptions{GateUpBF16: true, Checkpoint: true}, NI},
		{"no down", []Module{ModQ, ModV, ModGate, ModUp}, TrainOptions{GateUpBF16: true}, 0},
	} {
		if held := gateUpHeldFor(t, b, c, tc.targets); held != (tc.less > 0) {
			t.Errorf("%s: GateUpHeld %v, want %v", tc.name, held, tc.less > 0)
		}
		base := tc.opt
		base.GateUpBF16 = false
		if d := trainSlabWith(t, b, c, bt, tc.targets, base) - trainSlabWith(t, b, c, bt, tc.targets, tc.opt); d < tc.less || d >= tc.less+c.Layers*2*arenaAlign {
			t.Errorf("%s: the slab holds %d values less with GateUpBF16, want %d (and the arena's alignment)", tc.name, d, tc.less)
		}
	}
}

// gateUpHeldFor is Model.GateUpHeld of a bfloat16 micro model of config c
// on be with a rank-2 adapter on targets.
func gateUpHeldFor(t *testing.T, be kernels.Backend, c Config, targets []Module) bool {
	t.Helper()
	m, ad := bf16MicroModel(t, be, c, targets)
	defer m.Close()
	return m.GateUpHeld(ad)
}
