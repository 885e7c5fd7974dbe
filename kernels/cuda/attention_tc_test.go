package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// The tensor-core attention of the bf16 precision (attention_tc.cu) on the
// CPU shim, through cpushim's nvcuda::wmma emulation.

// shimTC is shimBackend computing in kernels.PrecisionBF16: its training
// attention runs attention_tc.cu (attention_fa2.cu with tc2) where Ops
// would (cuda.AttnTC), the float32 kernels elsewhere; decode stays float32.
type shimTC struct {
	shimBackend
	tc2, tc3 bool
	k64      bool // with tc3: its 64-row tiles (tc3k64)
}

func (shimTC) Precision() kernels.Precision { return kernels.PrecisionBF16 }

func (b shimTC) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	b.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, N, scale)
}

func (b shimTC) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedWindow("AttentionWindowForward", W)
	kernels.NeedAttentionForward("AttentionWindowForward", out, lse, q, k, v, seqOff, N, H, KVH, D)
	plan := cuda.PlanAttention
	if cuda.AttnTC(kernels.PrecisionBF16, D) {
		plan = cuda.PlanAttentionTC
		if b.tc2 {
			plan = cuda.PlanAttentionTC2
		}
		if b.tc3 {
			plan = cuda.PlanAttentionTC3
		}
		if b.tc3 && b.k64 {
			plan = cuda.PlanAttentionTC3K64
		}
	}
	b.h.runPlan(plan(out, lse, q, k, v, seqOff, len(seqOff)-1, N, N, H, KVH, D, W, 0, scale))
}

func (b shimTC) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	b.AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, max(N, 1), scale)
}

func (b shimTC) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedWindow("AttentionWindowBackward", W)
	kernels.NeedAttentionBackward("AttentionWindowBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	if cuda.AttnTC(kernels.PrecisionBF16, D) && (b.tc2 || b.tc3) {
		dl := make([]float32, N*H) // δ's scratch
		plan := cuda.PlanAttentionBackwardTC2
		if b.tc3 {
			plan = cuda.PlanAttentionBackwardTC3
		}
		if b.tc3 && b.k64 {
			plan = cuda.PlanAttentionBackwardTC3K64
		}
		b.h.runPlan(plan(dq, dk, dv, dout, out, lse, q, k, v, seqOff, dl, len(seqOff)-1, N, H, KVH, D, W, scale))
		return
	}
	plan := cuda.PlanAttentionBackward
	if cuda.AttnTC(kernels.PrecisionBF16, D) {
		plan = cuda.PlanAttentionBackwardTC
	}
	b.h.runPlan(plan(dq, dk, dv, dout, out, lse, q, k, v, seqOff, len(seqOff)-1, N, H, KVH, D, W, scale))
}

// The bounds of the tensor-core attention against kernels/ref on the same
// bfloat16-rounded q, k, v and dout (relative, kerneltest's measure). lse
// is float32 arithmetic on those: the float32 bound. out, dq, dk and dv
// also carry the rounding of P (and dS) to bfloat16 for their second
// product, 2⁻⁸ relative per element at most; summed over many keys those
// errors mostly cancel: the bf16 mode's bound. Measured on the CPU shim
// and on an H200: out ≤ 5.2e-3 and the gradients ≤ 5e-3 on attnTCCases,
// out 8.6e-3 and dv 1.1e-2 on the long sequences of
// TestAttentionTCOnHardware (the largest element error grows with the
// count).
const (
	tcLseTol  = kerneltest.F32Tol
	tcOutTol  = kernels.BF16ComputeTol
	tcGradTol = kernels.BF16ComputeTol
)

// attnTCCases are the tensor-core kernels' shapes: packed sequences of
// lengths that are no multiple of the 32-row tiles or 64-row blocks, GQA
// groups (7 query heads a KV head, as Qwen2.5), D = 16 (the model goldens'),
// 64 and 128, and 48 (no divisor of the 128 or 256 threads that stage
// tiles), sliding windows.
var attnTCCases = []attnCase{
	{lens: []int{37, 1, 30}, H: 7, KVH: 1, D: 16, bitwiseDet: true},
	{lens: []int{70}, H: 4, KVH: 2, D: 64, bitwiseDet: true},
	{lens: []int{45, 33}, H: 2, KVH: 1, D: 128, bitwiseDet: true},
	{lens: []int{90, 9}, H: 3, KVH: 3, D: 32, W: 20},
	{lens: []int{40}, H: 2, KVH: 1, D: 64, W: 1},
	{lens: []int{21, 14}, H: 4, KVH: 2, D: 48, bitwiseDet: true}, // rows of D floats straddle a block's stride
}

// roundBF16 returns x rounded to bfloat16 (nearest even), as float32.
func roundBF16(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, f := range x {
		y[i] = kernels.F32(kernels.BF16(f))
	}
	return y
}

// vsF32 is the bound of the tensor-core attention against ref's float32
// attention on unrounded inputs, given ref's results on the rounded inputs
// (rounded) and in float32 (f32): the bf16 mode's bound, or twice the error
// the rounding of the inputs alone causes where that is larger (long
// sequences, whose largest element error grows with their size).
func vsF32(rounded, f32 []float32) float64 {
	return max(kernels.BF16ComputeTol, 2*kerneltest.RelErr(rounded, f32))
}

// attentionTCAgainstRef runs b's attention (forward, windowed when c.W >
// 0, and backward), which must be the tensor-core kernels, on cases:
// against kernels/ref on the same bfloat16-rounded inputs at the bounds
// above, and against ref's float32 attention on the unrounded inputs at
// the bf16 mode's bound (vsF32); with bitwiseDet, the
// backward a second time must give the same bits.
func attentionTCAgainstRef(t *testing.T, b kernels.Backend, cases []attnCase) {
	r := rand.New(rand.NewPCG(28, 21))
	for _, c := range cases {
		t.Run(fmt.Sprintf("T=%v,H=%d,KVH=%d,D=%d,W=%d", c.lens, c.H, c.KVH, c.D, c.W), func(t *testing.T) {
			H, KVH, D, W := c.H, c.KVH, c.D, c.W
			if !cuda.AttnTC(kernels.PrecisionBF16, D) {
				t.Fatalf("D = %d does not run on the tensor-core kernels", D)
			}
			seqOff, N := packedOffsets(c.lens)
			if W == 0 {
				W = N
			}
			q, k, v, dout := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D), randn(r, N*H*D)
			qr, kr, vr, dr := roundBF16(q), roundBF16(k), roundBF16(v), roundBF16(dout)
			scale := float32(1 / math.Sqrt(float64(D)))
			newOut := func() ([]float32, []float32) { return make([]float32, N*H*D), make([]float32, N*H) }

			wo, wl := newOut() // ref on the rounded inputs
			ref.New().AttentionWindowForward(wo, wl, qr, kr, vr, seqOff, N, H, KVH, D, W, scale)
			fo, fl := newOut() // ref in float32
			ref.New().AttentionWindowForward(fo, fl, q, k, v, seqOff, N, H, KVH, D, W, scale)
			got, gl := newOut()
			b.AttentionWindowForward(got, gl, q, k, v, seqOff, N, H, KVH, D, W, scale)
			t.Logf("forward vs ref on rounded inputs: out %.2g, lse %.2g; vs float32: out %.2g, lse %.2g (ref on rounded inputs vs float32: out %.2g, lse %.2g)",
				kerneltest.RelErr(got, wo), kerneltest.RelErr(gl, wl), kerneltest.RelErr(got, fo), kerneltest.RelErr(gl, fl), kerneltest.RelErr(wo, fo), kerneltest.RelErr(wl, fl))
			near(t, "lse (rounded inputs)", gl, wl, tcLseTol)
			near(t, "out (rounded inputs)", got, wo, tcOutTol)
			near(t, "lse (float32)", gl, fl, vsF32(wl, fl))
			near(t, "out (float32)", got, fo, vsF32(wo, fo))

			dq0, dk0, dv0 := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D)
			grads := func() ([]float32, []float32, []float32) {
				return slices.Clone(dq0), slices.Clone(dk0), slices.Clone(dv0)
			}
			wdq, wdk, wdv := grads()
			ref.New().AttentionWindowBackward(wdq, wdk, wdv, dr, wo, wl, qr, kr, vr, seqOff, N, H, KVH, D, W, scale)
			fdq, fdk, fdv := grads()
			ref.New().AttentionWindowBackward(fdq, fdk, fdv, dout, fo, fl, q, k, v, seqOff, N, H, KVH, D, W, scale)
			gdq, gdk, gdv := grads()
			b.AttentionWindowBackward(gdq, gdk, gdv, dout, wo, wl, q, k, v, seqOff, N, H, KVH, D, W, scale)
			t.Logf("backward vs ref on rounded inputs: dq %.2g, dk %.2g, dv %.2g", kerneltest.RelErr(gdq, wdq), kerneltest.RelErr(gdk, wdk), kerneltest.RelErr(gdv, wdv))
			near(t, "dq (rounded inputs)", gdq, wdq, tcGradTol)
			near(t, "dk (rounded inputs)", gdk, wdk, tcGradTol)
			near(t, "dv (rounded inputs)", gdv, wdv, tcGradTol)
			// Against float32, the gradients the backend forms from its own forward.
			edq, edk, edv := grads()
			b.AttentionWindowBackward(edq, edk, edv, dout, got, gl, q, k, v, seqOff, N, H, KVH, D, W, scale)
			t.Logf("backward on its own forward vs float32: dq %.2g, dk %.2g, dv %.2g (ref on rounded inputs vs float32: %.2g, %.2g, %.2g)",
				kerneltest.RelErr(edq, fdq), kerneltest.RelErr(edk, fdk), kerneltest.RelErr(edv, fdv), kerneltest.RelErr(wdq, fdq), kerneltest.RelErr(wdk, fdk), kerneltest.RelErr(wdv, fdv))
			near(t, "dq (float32)", edq, fdq, vsF32(wdq, fdq))
			near(t, "dk (float32)", edk, fdk, vsF32(wdk, fdk))
			near(t, "dv (float32)", edv, fdv, vsF32(wdv, fdv))
			if c.bitwiseDet {
				adq, adk, adv := grads()
				b.AttentionWindowBackward(adq, adk, adv, dout, wo, wl, q, k, v, seqOff, N, H, KVH, D, W, scale)
				wantDeterministic(t, adq, adk, adv, gdq, gdk, gdv)
			}
		})
	}
}

// TestAttentionTCOnCPUShim runs attention_tc.cu's kernels on the CPU shim:
// on attnTCCases against kernels/ref, and kerneltest's attention groups on
// a backend computing in bf16 (the tensor-core kernels where they apply,
// the float32 ones for the suite's head dims below 16).
func TestAttentionTCOnCPUShim(t *testing.T) {
	t.Parallel()
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	b := shimTC{shimBackend: shimBackend{h: h}}
	attentionTCOnShim(t, b)
}

// attentionTCOnShim runs a shim backend's tensor-core attention on
// attnTCCases against kernels/ref and through kerneltest's attention
// groups.
func attentionTCOnShim(t *testing.T, b shimTC) {
	t.Run("against ref", func(t *testing.T) { attentionTCAgainstRef(t, b, attnTCCases) })
	t.Run("conformance", func(t *testing.T) {
		kerneltest.RunOps(t, b, "Attention", "AttentionWindow", "AttentionDecode")
	})
}

// TestAttentionTC2OnCPUShim is TestAttentionTCOnCPUShim on attention_fa2.cu
// (tc2): the same cases at the same bounds, the backward's bits repeated,
// and kerneltest's attention groups.
func TestAttentionTC2OnCPUShim(t *testing.T) {
	t.Parallel()
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	b := shimTC{shimBackend: shimBackend{h: h}, tc2: true}
	attentionTCOnShim(t, b)
}

// TestAttentionTC3OnCPUShim is TestAttentionTCOnCPUShim on attention_mma.cu
// (tc3), through mma.cuh's emulation of mma.sync and ldmatrix: the same
// cases at the same bounds, the backward's bits repeated, and kerneltest's
// attention groups.
func TestAttentionTC3OnCPUShim(t *testing.T) {
	t.Parallel()
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	b := shimTC{shimBackend: shimBackend{h: h}, tc3: true}
	attentionTCOnShim(t, b)
}

// TestAttentionTC3K64OnCPUShim is TestAttentionTC3OnCPUShim with the
// 64-key forward (tc3k64: attention_mma_forward_k64, its tiles in dynamic
// shared memory), and that forward against the 32-key one on the same
// inputs (tc3TilesAgree).
func TestAttentionTC3K64OnCPUShim(t *testing.T) {
	t.Parallel()
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	b := shimTC{shimBackend: shimBackend{h: h}, tc3: true, k64: true}
	attentionTCOnShim(t, b)
	t.Run("against 32-key tiles", func(t *testing.T) {
		tc3TilesAgree(t, shimTC{shimBackend: shimBackend{h: h}, tc3: true}, b, tc3TileCasesShim)
	})
}

// tc3TileCases are attnTCCases with blocks that walk several 64-key tiles
// (both buffers, a partial last tile, windows that start mid-tile), up to
// the long sequences of tcOnHardware (1024 keys: the bound holds as the
// rounding differences add up over the keys).
var tc3TileCases = append(slices.Clone(attnTCCases),
	attnCase{lens: []int{200, 131}, H: 2, KVH: 1, D: 128},
	attnCase{lens: []int{257}, H: 4, KVH: 2, D: 64, W: 100},
	attnCase{lens: []int{513, 300, 211}, H: 7, KVH: 1, D: 128},
	attnCase{lens: []int{400, 200}, H: 4, KVH: 2, D: 64, W: 128},
)

// tc3TileCasesShim are tc3TileCases for the CPU shim, where a thread of
// the block is an OS thread: the long blocks with two heads instead of
// seven (the seven-heads group is attnTCCases' first case), which keeps
// the 513 keys the bound is about and takes 5 s of make test instead of
// 26; the hardware test runs them all.
var tc3TileCasesShim = append(slices.Clone(tc3TileCases[:len(tc3TileCases)-2]),
	attnCase{lens: []int{513, 211}, H: 2, KVH: 1, D: 128},
	attnCase{lens: []int{400, 200}, H: 4, KVH: 2, D: 64, W: 128},
)

// The bounds of the 64-key forward against the 32-key one on the same
// inputs. Where a block's keys fit one 32-key tile the two give the same
// bits. Otherwise not only the order of float32 sums differs: the running
// max moves every 64 keys instead of every 32, so P = e^(s − m), rounded
// to bfloat16 for P·V, is rounded against another m, and out differs by
// about what either differs from ref: the bf16 mode's bound, tcOutTol. lse
// adds the unrounded P, float32 only: the float32 bound. Measured on the
// CPU shim and the emulated device (tc3TileCases, kerneltest.RelErr): out
// ≤ 7.0e-3 (≤ 4.2e-3 up to 331 keys, growing with the keys as the rounding
// differences add up), lse ≤ 7.9e-8.
const (
	tc3K64LseTol = kerneltest.F32Tol
	tc3K64OutTol = tcOutTol
)

// tc3TilesAgree runs the forward of k32 (tc3) and k64 (tc3k64) on cases
// and checks k64's out and lse against k32's at tc3K64OutTol and
// tc3K64LseTol, then the backward of both on the same out and lse for the
// same bits.
func tc3TilesAgree(t *testing.T, k32, k64 kernels.Backend, cases []attnCase) {
	r := rand.New(rand.NewPCG(64, 32))
	for _, c := range cases {
		t.Run(fmt.Sprintf("T=%v,H=%d,KVH=%d,D=%d,W=%d", c.lens, c.H, c.KVH, c.D, c.W), func(t *testing.T) {
			H, KVH, D, W := c.H, c.KVH, c.D, c.W
			seqOff, N := packedOffsets(c.lens)
			if W == 0 {
				W = N
			}
			q, k, v := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D)
			scale := float32(1 / math.Sqrt(float64(D)))
			o32, l32 := make([]float32, N*H*D), make([]float32, N*H)
			k32.AttentionWindowForward(o32, l32, q, k, v, seqOff, N, H, KVH, D, W, scale)
			o64, l64 := make([]float32, N*H*D), make([]float32, N*H)
			k64.AttentionWindowForward(o64, l64, q, k, v, seqOff, N, H, KVH, D, W, scale)
			t.Logf("64-key tiles vs 32-key tiles: out %.2g, lse %.2g", kerneltest.RelErr(o64, o32), kerneltest.RelErr(l64, l32))
			near(t, "lse (64-key vs 32-key tiles)", l64, l32, tc3K64LseTol)
			near(t, "out (64-key vs 32-key tiles)", o64, o32, tc3K64OutTol)
			// The backward on the 32-key forward's out and lse: the same
			// bits (64-row tiles sum in the same order).
			dout := randn(r, N*H*D)
			var grads [2][3][]float32
			for i, b := range []kernels.Backend{k32, k64} {
				dq, dk, dv := make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)
				b.AttentionWindowBackward(dq, dk, dv, dout, o32, l32, q, k, v, seqOff, N, H, KVH, D, W, scale)
				grads[i] = [3][]float32{dq, dk, dv}
			}
			for g, name := range []string{"dq", "dk", "dv"} {
				for e := range grads[0][g] {
					if a, b := grads[0][g][e], grads[1][g][e]; math.Float32bits(a) != math.Float32bits(b) {
						t.Fatalf("%s[%d]: %g with 64-row backward tiles, %g with 32: want the same bits", name, e, b, a)
					}
				}
			}
		})
	}
}

// TestAttnTCDims: the tensor-core kernels take D a multiple of 16 up to
// 128, in the bf16 precision only; other dims (the qwen2 golden's 8, 100,
// Gemma's 256) fall back to the float32 kernels.
func TestAttnTCDims(t *testing.T) {
	for _, c := range []struct {
		p    kernels.Precision
		D    int
		want bool
	}{
		{kernels.PrecisionBF16, 16, true}, {kernels.PrecisionBF16, 64, true}, {kernels.PrecisionBF16, 128, true},
		{kernels.PrecisionBF16, 8, false}, {kernels.PrecisionBF16, 100, false}, {kernels.PrecisionBF16, 256, false},
		{kernels.PrecisionBF16, 144, false}, {kernels.PrecisionF32, 128, false}, {kernels.PrecisionF32, 64, false},
	} {
		if got := cuda.AttnTC(c.p, c.D); got != c.want {
			t.Errorf("AttnTC(%v, %d) = %v, want %v", c.p, c.D, got, c.want)
		}
	}
}
