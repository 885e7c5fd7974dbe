package model

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// noRoundedLoRA is cuda.Backend saying its LoRA backward takes neither
// bfloat16 douts (kernels.LoRARoundedBackwarder) nor bfloat16 inputs
// (kernels.LoRAInputRounder): the model's MLP backward then writes the
// float32 dgate and dup for the gate and up projections'
// LoRABackwardMany, and act as float32 for the down projection's DA, as
// before those.
type noRoundedLoRA struct{ *cuda.Backend }

func (noRoundedLoRA) RoundsLoRADout() bool  { return false }
func (noRoundedLoRA) RoundsLoRAInput() bool { return false }

// TestLoRARoundedCUDAEmulated: a LoRA step of a bfloat16 micro model on
// cuda.Backend in PrecisionBF16 on the emulated device, with the gate and
// up projections' LoRA backward on the bfloat16 roundings of dgate and
// dup (kernels.LoRARoundedBackwarder: two f32_to_bf16 launches more a
// projection, rounding u and B) and the down projection's DA on act's
// (kernels.LoRAInputRounder; the gated backward adds it, rounding g in its
// kernel: kernels.GatedLoRABackwarder), and without (noRoundedLoRA), for
// SwiGLU and GeGLU: the logprobs are the same bits
// (the forward is untouched),
// the LoRA gradients within the bf16 precision's kernels.BF16ComputeTol of
// each other by maxRelDiff (logged), and some gradient differs (the
// rounded path ran). The model-level bound against the float32 model is
// TestBF16ComputeCUDAEmulated's.
func TestLoRARoundedCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b, drv := emulatedCUDABackendDriver(t, kernels.PrecisionBF16)
	defer b.Close()
	step := countingStep(t, drv, "f32_to_bf16")
	bInit := func(i int) float32 { return float32(i%7) * 0.05 }
	for _, act := range []string{"", "gelu_tanh"} {
		s := microStep{family: "qwen2", act: act, targets: AllModules(), alpha: 4, bInit: bInit}
		lp, g, n := step(b, s)
		wlp, wg, wn := step(noRoundedLoRA{b}, s)
		layers := microConfig("qwen2").Layers
		if n-wn != 4*layers {
			t.Errorf("act %q: %d f32_to_bf16 launches with the rounded LoRA backward, %d without; want %d more (4 a layer)", act, n, wn, 4*layers)
		}
		for i := range lp {
			if math.Float32bits(lp[i]) != math.Float32bits(wlp[i]) {
				t.Fatalf("act %q: logprob [%d] = %g with the rounded LoRA backward, %g without", act, i, lp[i], wlp[i])
			}
		}
		gs, ws := slices.Concat(g...), slices.Concat(wg...)
		d := maxRelDiff(gs, ws)
		t.Logf("act %q: LoRA gradients %.2g from the float32 douts' (maxRelDiff)", act, d)
		if d > kernels.BF16ComputeTol {
			t.Errorf("act %q: LoRA gradients %.2g from the float32 douts', bound %g", act, d, kernels.BF16ComputeTol)
		}
		if d == 0 {
			t.Errorf("act %q: the LoRA gradients are the float32 douts' bits: the rounded path did not run", act)
		}
	}
}

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
// gelu_tanh); and only the first launches the _bf16 kernels. Both without
// the rounded LoRA backward (noRoundedLoRA; TestLoRARoundedCUDAEmulated),
// which moves the gate and up projections' LoRA gradients, and with dact
// in float32 (noRoundedLoRANorDinp; TestDactRoundedCUDAEmulated), which
// noRounder keeps too (dact as bfloat16 needs the rounded gated
// backward).
func TestDoutRounderCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b, drv := emulatedCUDABackendDriver(t, kernels.PrecisionBF16)
	defer b.Close()
	step := countingStep(t, drv, "swiglu_backward_set_bf16", "geglu_backward_set_bf16")
	bInit := func(i int) float32 { return float32(i%7) * 0.05 }
	for _, act := range []string{"", "gelu_tanh"} {
		s := microStep{family: "qwen2", act: act, targets: AllModules(), alpha: 4, bInit: bInit}
		lp, g, n := step(noRoundedLoRANorDinp{noRoundedLoRA{b}}, s)
		wlp, wg, wn := step(noRounder{b}, s)
		if n != 2 || wn != 0 {
			t.Errorf("act %q: %d _bf16 launches with the rounded copies, %d without; want 2 (a layer) and 0", act, n, wn)
		}
		sameStepBits(t, "act "+act, lp, wlp, g, wg)
	}
}

// countingStep returns a micro LoRA step (microLoRAStepOf) that also
// counts the launches of the kernels named during it, on drv.
func countingStep(t *testing.T, drv *cudafake.Driver, names ...string) func(be kernels.Backend, s microStep) (lp []float32, grads [][]float32, launches int) {
	return func(be kernels.Backend, s microStep) (lp []float32, grads [][]float32, launches int) {
		t.Helper()
		l0 := 0
		lp, grads = microLoRAStepOf(t, be, s, func(end bool) {
			if !end {
				l0 = len(drv.Launches())
				return
			}
			for _, l := range drv.Launches()[l0:] {
				if slices.Contains(names, l.Kernel) {
					launches++
				}
			}
		})
		return lp, grads, launches
	}
}

// sameStepBits fails the test unless two micro steps' logprobs (lp, wlp)
// and LoRA gradients (g, wg) are the same bits, and some gradient is not
// zero (a step that trains nothing would agree trivially).
func sameStepBits(t *testing.T, name string, lp, wlp []float32, g, wg [][]float32) {
	t.Helper()
	same := func(what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%s: %s [%d] = %g with the rounded copies, %g without", name, what, i, got[i], want[i])
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
		t.Errorf("%s: every gradient is zero", name)
	}
}

// noInputRounder is cuda.Backend saying its products do not round their
// input (kernels.InputRounder): the model's forward then lets the linear
// products round the normed input and the gated unit's output
// themselves, as before the rounded copies. The gated unit's fused LoRA
// products are hidden too (noGatedLoRA), so that it compares with
// noGatedLoRA alone.
type noInputRounder struct{ noGatedLoRA }

func (noInputRounder) RoundsLinearInput() bool { return false }

// TestInputRounderCUDAEmulated: a LoRA step of a bfloat16 micro model on
// cuda.Backend in PrecisionBF16 on the emulated device gives the same
// logprobs and LoRA gradients, bit for bit, whether the norms and the
// gated unit write their outputs' bf16 copies for the products that
// follow (kernels.InputRounder) or those products round them themselves
// (noInputRounder): SwiGLU with q, k, v biases (qwen2, every module
// adapted), GeGLU with a LoRA on q, v and up only (each product group
// mixed, down without one) under Checkpoint (the backward's recomputed
// forward), and Gemma 3's sandwich norms. Both launch rmsnorm_forward_add
// (kernels.ResidualNormer) for every norm that adds a residual (the
// post-attention norms, the input norms after the first and the final
// norm; the checkpointed backward's recompute runs each block alone, its
// input norm plain), which writes the bf16 copy only for the first; only
// the first launches the other forward _bf16 kernels. Both launch
// rmsnorm_forward_bf16 for the backward's recomputes of the normed input
// whose only readers take its bf16 rounding (kernels.NormInputRounder:
// both a layer with a LoRA on every module; neither with q, v, up, whose
// groups are mixed). The gated unit's fused LoRA A product
// (kernels.GatedLoRAForwarder), which sums u in its own order, is hidden
// (noGatedLoRA): TestGatedLoRACUDAEmulated covers it.
func TestInputRounderCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b, drv := emulatedCUDABackendDriver(t, kernels.PrecisionBF16)
	defer b.Close()
	step := countingStep(t, drv, "rmsnorm_forward_bf16", "swiglu_forward_bf16", "geglu_forward_bf16", "rmsnorm_forward_add")
	bInit := func(i int) float32 { return float32(i%7) * 0.05 }
	for _, c := range []struct {
		name string
		s    microStep
		bwd  int // the backward's recomputes in bfloat16 a layer
	}{
		{"qwen2 SwiGLU", microStep{family: "qwen2", targets: AllModules(), alpha: 4, bInit: bInit}, 2},
		{"qwen2 GeGLU q,v,up Checkpoint", microStep{family: "qwen2", act: "gelu_tanh", targets: []Module{ModQ, ModV, ModUp}, alpha: 4, bInit: bInit, checkpoint: true}, 0},
		{"gemma3_text", microStep{family: "gemma3_text", targets: AllModules(), alpha: 4, bInit: bInit}, 2},
	} {
		lp, g, n := step(noGatedLoRA{Backend: b}, c.s)
		wlp, wg, wn := step(noInputRounder{noGatedLoRA{Backend: b}}, c.s)
		// The forward: 3 a layer (the norms and the gated unit) and the
		// final norm with the copies, and without them the adds: 2 a
		// layer but the first, and the final norm. The recompute: 3 a
		// layer, and the post-attention norm alone.
		L := microConfig(c.s.family).Layers
		want, wantW := 3*L+1, 2*L
		if c.s.checkpoint {
			want, wantW = want+3*L, wantW+L
		}
		want, wantW = want+c.bwd*L, wantW+c.bwd*L
		if n != want || wn != wantW {
			t.Errorf("%s: %d forward _bf16 and rmsnorm_forward_add launches with the rounded copies, %d without; want %d and %d", c.name, n, wn, want, wantW)
		}
		sameStepBits(t, c.name, lp, wlp, g, wg)
	}
}

// neitherRounder is cuda.Backend saying it rounds neither its products'
// input nor their dout.
type neitherRounder struct{ *cuda.Backend }

func (neitherRounder) RoundsLinearInput() bool { return false }
func (neitherRounder) RoundsLinearDout() bool  { return false }

// TestInputRounderMemory: a LoRA pass of a bfloat16 micro model on
// cuda.Backend in PrecisionBF16 holds the forward's bf16 copies (work.xbf)
// in the memory of the backward's (work.dgbf), so its slab is the size it
// was without them; on a backend that rounds the input but not dout they
// take N·max(C, I) bfloat16 values of their own.
func TestInputRounderMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b, c, bt, _ := memoryCase(t)
	defer b.Close()
	slab := func(be kernels.Backend) int { return trainSlab(t, be, c, bt, AllModules()) }
	// The gated unit's fused LoRA products hidden where they could run
	// (noGatedLoRA): with them the pass holds no act either
	// (TestGatedLoRAMemory).
	both, noInput, noDout, neither := slab(noGatedLoRA{Backend: b}), slab(noInputRounder{noGatedLoRA{Backend: b}}), slab(noRounder{b}), slab(neitherRounder{b})
	if both != noInput {
		t.Errorf("the slab holds %d values with the forward's bf16 copies, %d without: want them in dgbf's memory", both, noInput)
	}
	own := (len(bt.IDs)*max(c.Hidden, c.Intermediate) + 1) / 2
	if d := noDout - neither; d < own || d >= own+arenaAlign {
		t.Errorf("without dgbf the forward's bf16 copies take %d values, want %d (and the arena's alignment)", d, own)
	}
}

// trainSlab returns the values of the slab a training pass of a bfloat16
// micro model of config c on be holds for batch bt, with a LoRA adapter
// (rank 2) on targets.
func trainSlab(t *testing.T, be kernels.Backend, c Config, bt *Batch, targets []Module) int {
	return trainSlabWith(t, be, c, bt, targets, TrainOptions{})
}

// bf16MicroModel is a bfloat16 micro model of config c on be (the caller
// closes it) and a LoRA adapter of rank 2 on targets, not yet placed.
func bf16MicroModel(t *testing.T, be kernels.Backend, c Config, targets []Module) (*Model, *Adapter) {
	t.Helper()
	m, err := New(c, be)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ToBF16(); err != nil {
		m.Close()
		t.Fatal(err)
	}
	ad, err := NewAdapter(&m.Config, AdapterConfig{Rank: 2, Alpha: 4, Targets: targets}, 3)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	return m, ad
}

// trainSlabWith is trainSlab of a pass with options opt.
func trainSlabWith(t *testing.T, be kernels.Backend, c Config, bt *Batch, targets []Module, opt TrainOptions) int {
	t.Helper()
	m, ad := bf16MicroModel(t, be, c, targets)
	defer m.Close()
	if err := ad.Place(be); err != nil {
		t.Fatal(err)
	}
	defer ad.Free()
	p, err := m.Forward(context.Background(), bt, ad, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	return len(p.slab)
}

// slabLess fails t unless a training pass on with (trainSlab) holds
// `less` values fewer than one on without, give or take the arena's
// alignment.
func slabLess(t *testing.T, what string, without, with kernels.Backend, c Config, bt *Batch, targets []Module, less int) {
	t.Helper()
	if d := trainSlab(t, without, c, bt, targets) - trainSlab(t, with, c, bt, targets); d < less || d >= less+arenaAlign {
		t.Errorf("%s: the slab holds %d values less, want %d (and the arena's alignment)", what, d, less)
	}
}

// memoryCase is the memory tests' set-up: cuda.Backend in PrecisionBF16
// on the emulated device (the caller closes it), the micro qwen2 config, a
// packed batch of two sequences and its N·I (tokens times the MLP's
// width).
func memoryCase(t *testing.T) (b *cuda.Backend, c Config, bt *Batch, NI int) {
	t.Helper()
	b, _ = emulatedCUDABackendDriver(t, kernels.PrecisionBF16)
	c = microConfig("qwen2")
	bt = packed(c.Vocab, []int{4, 6}, 2)
	return b, c, bt, len(bt.IDs) * c.Intermediate
}

// TestLoRARoundedMemory: a training pass of a bfloat16 micro model on
// cuda.Backend in PrecisionBF16 holds no float32 dgate and dup (2·N·I
// values less than with noRoundedLoRA, give or take the arena's
// alignment) where every layer's gate and up LoRA backward takes their
// roundings (Model.gatedGradsRounded), and as much as noRoundedLoRA where
// one projection of the two has a LoRA update and the other none (the
// one-at-a-time backward reads the float32 dout), or where neither has one
// (both passes then do without them).
func TestLoRARoundedMemory(t *testing.T) {
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
		// With every module adapted the pass also holds no act: the
		// gated unit and its backward take the down projection's LoRA
		// products (Model.actFused), which noRoundedLoRA's backward does
		// not (it takes float32 operands).
		{"every module", AllModules(), 3 * NI},
		{"gate without up", []Module{ModQ, ModGate}, 0},
		{"no MLP module", []Module{ModQ, ModV}, 0},
	} {
		slabLess(t, tc.name+", against noRoundedLoRA", noRoundedLoRA{b}, b, c, bt, tc.targets, tc.less)
	}
}

// noDinpRounder is cuda.Backend saying it writes no bfloat16 input
// gradients (kernels.DinpRounder): the model's MLP backward then writes
// dact as float32, as before that.
type noDinpRounder struct{ *cuda.Backend }

func (noDinpRounder) RoundsLinearDinp() bool { return false }

// noRoundedLoRANorDinp is noRoundedLoRA that is also noDinpRounder.
type noRoundedLoRANorDinp struct{ noRoundedLoRA }

func (noRoundedLoRANorDinp) RoundsLinearDinp() bool { return false }

// TestDactRoundedCUDAEmulated: a LoRA step of a bfloat16 micro model on
// cuda.Backend in PrecisionBF16 on the emulated device, with dact written
// as bfloat16 only (kernels.DinpRounder: the down projection's two
// products store a bfloat16 C, the gated backward reads it; two
// f32_to_bf16 launches more a layer with a LoRA on down, rounding g and
// A) and without (noDinpRounder), for SwiGLU and GeGLU, with a LoRA on
// every module and with none on down (the base product alone writes
// dact, at beta 0): the logprobs are the same bits (the forward is
// untouched), the LoRA gradients within the bf16 precision's
// kernels.BF16ComputeTol of each other by maxRelDiff (logged), and some
// gradient differs (the rounded path ran). The model-level bound against
// the float32 model is TestBF16ComputeCUDAEmulated's.
func TestDactRoundedCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b, drv := emulatedCUDABackendDriver(t, kernels.PrecisionBF16)
	defer b.Close()
	step := countingStep(t, drv, "f32_to_bf16")
	bInit := func(i int) float32 { return float32(i%7) * 0.05 }
	layers := microConfig("qwen2").Layers
	for _, act := range []string{"", "gelu_tanh"} {
		for _, tc := range []struct {
			name    string
			targets []Module
			more    int // f32_to_bf16 launches more a layer
		}{
			{"every module", AllModules(), 2},
			{"no LoRA on down", []Module{ModQ, ModV, ModGate, ModUp}, 0},
		} {
			s := microStep{family: "qwen2", act: act, targets: tc.targets, alpha: 4, bInit: bInit}
			lp, g, n := step(b, s)
			wlp, wg, wn := step(noDinpRounder{b}, s)
			if n-wn != tc.more*layers {
				t.Errorf("act %q, %s: %d f32_to_bf16 launches with dact as bfloat16, %d without; want %d more", act, tc.name, n, wn, tc.more*layers)
			}
			for i := range lp {
				if math.Float32bits(lp[i]) != math.Float32bits(wlp[i]) {
					t.Fatalf("act %q, %s: logprob [%d] = %g with dact as bfloat16, %g without", act, tc.name, i, lp[i], wlp[i])
				}
			}
			gs, ws := slices.Concat(g...), slices.Concat(wg...)
			d := maxRelDiff(gs, ws)
			t.Logf("act %q, %s: LoRA gradients %.2g from the float32 dact's (maxRelDiff)", act, tc.name, d)
			if d > kernels.BF16ComputeTol {
				t.Errorf("act %q, %s: LoRA gradients %.2g from the float32 dact's, bound %g", act, tc.name, d, kernels.BF16ComputeTol)
			}
			if d == 0 {
				t.Errorf("act %q, %s: the LoRA gradients are the float32 dact's bits: the bfloat16 path did not run", act, tc.name)
			}
		}
	}
}

// TestDactRoundedMemory: a training pass of a bfloat16 micro model on
// cuda.Backend in PrecisionBF16 holds dact as N·I bfloat16 values, N·I/2
// float32s' memory less than with noDinpRounder (give or take the arena's
// alignment), with or without a LoRA on the MLP; on a backend that does
// not round dout (noRounder), whose gated backward cannot read it so, as
// much as when it says it writes no bfloat16 input gradients either.
func TestDactRoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b, c, bt, NI := memoryCase(t)
	defer b.Close()
	less := NI - (NI+1)/2
	for _, targets := range [][]Module{AllModules(), {ModQ, ModV}} {
		slabLess(t, fmt.Sprintf("targets %v, against dact in float32", targets), noDinpRounder{b}, b, c, bt, targets, less)
	}
	if d := trainSlab(t, noRounderNorDinp{noRounder{b}}, c, bt, AllModules()) - trainSlab(t, noRounder{b}, c, bt, AllModules()); d != 0 {
		t.Errorf("without the rounded gated backward the slab holds %d values less than with dact in float32, want 0", d)
	}
}

// noRounderNorDinp is noRounder that is also noDinpRounder.
type noRounderNorDinp struct{ noRounder }

func (noRounderNorDinp) RoundsLinearDinp() bool { return false }

// noNormInputRounder is cuda.Backend saying its LoRA backward does not take
// its input as bfloat16 (kernels.NormInputRounder): the block's backward
// then recomputes the normed input h as float32 for the LoRA DA products
// of q, k, v and gate, up, as before that.
type noNormInputRounder struct{ *cuda.Backend }

func (noNormInputRounder) RoundsNormInput() bool { return false }

// TestNormInputRoundedCUDAEmulated: a LoRA step of a bfloat16 micro model on
// cuda.Backend in PrecisionBF16 on the emulated device, with the backward's
// recompute of each normed input h written as bfloat16 only and the LoRA
// DA products of q, k, v and gate, up taking it (kernels.NormInputRounder)
// and without (noNormInputRounder), for every family (qwen2's q, k, v
// biases, qwen3's q/k norms, gemma3's sandwich norms and GeGLU), with
// checkpointing on one, and with LoRA updates on every module, on q, v,
// gate and up (k without one: the attention's h stays float32, one
// recompute a layer in bfloat16) and on o and down alone (no reader of h:
// both recomputes in bfloat16, the same bits): the logprobs are the same
// bits (the forward is untouched), the rmsnorm_forward_bf16 launches are
// as many more as the recomputes in bfloat16, and the LoRA gradients are
// within the bf16 precision's kernels.BF16ComputeTol of each other by
// maxRelDiff (logged), and differ where a DA product took h's rounding.
// The model-level bound against the float32 model is
// TestBF16ComputeCUDAEmulated's.
func TestNormInputRoundedCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	b, drv := emulatedCUDABackendDriver(t, kernels.PrecisionBF16)
	defer b.Close()
	step := countingStep(t, drv, "rmsnorm_forward_bf16")
	bInit := func(i int) float32 { return float32(i%7) * 0.05 }
	for _, tc := range []struct {
		family  string
		ckpt    bool
		name    string
		targets []Module
		more    int // rmsnorm_forward_bf16 launches more a layer
	}{
		{"qwen2", false, "every module", AllModules(), 2},
		{"qwen2", true, "every module, checkpointing", AllModules(), 2},
		{"qwen2", false, "q, v, gate, up", []Module{ModQ, ModV, ModGate, ModUp}, 1},
		{"qwen2", false, "o, down", []Module{ModO, ModDown}, 2},
		{"qwen3", false, "every module", AllModules(), 2},
		{"llama", false, "every module", AllModules(), 2},
		{"gemma3_text", false, "every module", AllModules(), 2},
	} {
		name := tc.family + ", " + tc.name
		s := microStep{family: tc.family, targets: tc.targets, alpha: 4, bInit: bInit, checkpoint: tc.ckpt}
		lp, g, n := step(b, s)
		wlp, wg, wn := step(noNormInputRounder{b}, s)
		if layers := microConfig(tc.family).Layers; n-wn != tc.more*layers {
			t.Errorf("%s: %d rmsnorm_forward_bf16 launches with h as bfloat16, %d without; want %d more", name, n, wn, tc.more*layers)
		}
		for i := range lp {
			if math.Float32bits(lp[i]) != math.Float32bits(wlp[i]) {
				t.Fatalf("%s: logprob [%d] = %g with h as bfloat16, %g without", name, i, lp[i], wlp[i])
			}
		}
		gs, ws := slices.Concat(g...), slices.Concat(wg...)
		d := maxRelDiff(gs, ws)
		t.Logf("%s: LoRA gradients %.2g from the float32 h's (maxRelDiff)", name, d)
		if d > kernels.BF16ComputeTol {
			t.Errorf("%s: LoRA gradients %.2g from the float32 h's, bound %g", name, d, kernels.BF16ComputeTol)
		}
		readsH := slices.ContainsFunc(tc.targets, func(m Module) bool { return m != ModO && m != ModDown })
		if readsH && d == 0 {
			t.Errorf("%s: the LoRA gradients are the float32 h's bits: the bfloat16 path did not run", name)
		}
		if !readsH && d != 0 {
			t.Errorf("%s: no LoRA product reads h, yet the gradients moved by %.2g", name, d)
		}
	}
}
