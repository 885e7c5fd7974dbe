package model

import (
	"context"
	"math"
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
// on the emulated device, the residual adds going into the norms that
// read their sums (rmsnorm_forward_add: each post-attention norm, each
// input norm after the first layer's, the final norm; the checkpointed
// backward's recompute adds a post-attention norm a layer) and as Add
// then the norm (noAddNorm): the same logprobs and LoRA gradients, bit
// for bit, in both precisions, for a pre-norm family and for Gemma 3's
// sandwich norms, with and without checkpointing; and Logits (the
// inference pass, its blocks sharing one activation slot) the same bits
// both ways.
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
				want := 2 * layers
				if ckpt {
					want += layers
				}
				if n != want || wn != 0 {
					t.Errorf("%s: %d rmsnorm_forward_add launches fused, %d not; want %d and 0", name, n, wn, want)
				}
				if wna-na != n {
					t.Errorf("%s: %d add launches fused, %d not: want %d fewer (one a fused launch)", name, na, wna, n)
				}
				sameStepBits(t, name, lp, wlp, g, wg)
			}
			logits := func(be kernels.Backend) []float32 {
				m, err := New(microConfig(family), be)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				randomize(m, 5)
				batch, err := Pack([][]int32{{1, 5, 9, 2, 7}, {3, 3, 8}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				out, err := m.Logits(context.Background(), batch, nil)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			got, want := logits(b), logits(noAddNorm{Backend: b})
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %s: Logits [%d] = %g fused, %g not", prec, family, i, got[i], want[i])
				}
			}
		}
		b.Close()
	}
}

// noNormDoutRounder is cuda.Backend without the RMSNorm backward's bf16
// copy (kernels.NormDoutRounder), hidden as noAddNorm hides its method:
// the o projection's product then rounds its dout itself.
type noNormDoutRounder struct {
	*cuda.Backend
	hideNormDoutRounder
}

type hideNormDoutRounder struct{}

func (hideNormDoutRounder) RMSNormBackwardRounded(_, _ []float32, _ []uint16, _, _, _, _ []float32, _, _ int) {
}

// TestNormDoutRounderCUDAEmulated: a LoRA step of the micro models on
// cuda.Backend on the emulated device, in PrecisionBF16, with the norm
// backwards writing the bf16 rounding of the gradient they leave
// (rmsnorm_backward_bf16): each post-attention norm's for the o
// projection's product, the final norm's and each input norm's but the
// first layer's for the down projection's of the block below, 2 a layer;
// none for Gemma 3's sandwich norms, whose sub-layers take other
// gradients) and without (noNormDoutRounder, the products rounding their
// dout themselves): the same logprobs and LoRA gradients, bit for bit,
// with and without a LoRA on o and down and with checkpointing; in
// PrecisionF32, which does not round, the kernel never runs.
func TestNormDoutRounderCUDAEmulated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the model's kernels on the CPU emulation of the CUDA device")
	}
	for _, prec := range []kernels.Precision{kernels.PrecisionBF16, kernels.PrecisionF32} {
		b, drv := emulatedCUDABackendDriver(t, prec)
		if _, ok := kernels.Backend(noNormDoutRounder{Backend: b}).(kernels.NormDoutRounder); ok {
			b.Close()
			t.Fatal("noNormDoutRounder still implements kernels.NormDoutRounder")
		}
		step := countingStep(t, drv, "rmsnorm_backward_bf16")
		bInit := func(i int) float32 { return float32(i%7) * 0.05 }
		for _, c := range []struct {
			name string
			s    microStep
		}{
			{"qwen2", microStep{family: "qwen2", targets: AllModules(), alpha: 4, bInit: bInit}},
			{"llama q,v without o, checkpointed", microStep{family: "llama", targets: []Module{ModQ, ModV}, alpha: 4, bInit: bInit, checkpoint: true}},
			{"gemma3_text", microStep{family: "gemma3_text", targets: AllModules(), alpha: 4, bInit: bInit}},
		} {
			name := prec.String() + " " + c.name
			lp, g, n := step(b, c.s)
			wlp, wg, wn := step(noNormDoutRounder{Backend: b}, c.s)
			want := 2 * microConfig(c.s.family).Layers
			if prec == kernels.PrecisionF32 || c.s.family == "gemma3_text" {
				want = 0
			}
			if n != want || wn != 0 {
				t.Errorf("%s: %d rmsnorm_backward_bf16 launches with the copy, %d without; want %d and 0", name, n, wn, want)
			}
			sameStepBits(t, name, lp, wlp, g, wg)
		}
		b.Close()
	}
}
