package cuda_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// The GEMM-based attention of the bf16 precision ("gemm":
// ops_attention_gemm.go, attention_gemm.cu) on the CPU shim: its plans'
// kernels on the shim, their batched GEMMs from the BLAS definition
// (hostGemm), in runs of a few entries so that every case takes several.

// shimGEMMPerRun is the (sequence, KV head) entries of a run on the shim:
// small, so that the cases take several runs and a last short one.
const shimGEMMPerRun = 2

// gemmScratch is the GEMM attention's scratch for runs of nE entries on
// the host.
func gemmScratch(nE, G, L, D int) cuda.AttnGEMMScratch {
	qd, kd, sl := cuda.AttnGEMMSizes(nE, G, L, D)
	return cuda.AttnGEMMScratch{
		Q: make([]uint16, qd), K: make([]uint16, kd), V: make([]uint16, kd), DO: make([]uint16, qd),
		P: make([]uint16, sl), DS: make([]uint16, sl),
		S: make([]float32, sl), DP: make([]float32, sl), O: make([]float32, qd),
		DQ: make([]float32, qd), DK: make([]float32, kd), DV: make([]float32, kd),
	}
}

// shimGEMM is shimTC with the training attention on the GEMM plans where
// Ops would run them (cuda.AttnTC dims); mutate, when set, changes the
// plan's steps before they run (the tests that a broken plan is caught).
type shimGEMM struct {
	shimTC
	mutate func([]cuda.XStep) []cuda.XStep
}

func (b shimGEMM) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	b.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, N, scale)
}

func (b shimGEMM) run(x []cuda.XStep) {
	if b.mutate != nil {
		x = b.mutate(x)
	}
	b.h.runX(x)
}

func (b shimGEMM) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	if !cuda.AttnTC(kernels.PrecisionBF16, D) {
		b.shimTC.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
		return
	}
	kernels.NeedWindow("AttentionWindowForward", W)
	kernels.NeedAttentionForward("AttentionWindowForward", out, lse, q, k, v, seqOff, N, H, KVH, D)
	sc := gemmScratch(shimGEMMPerRun, H/KVH, cuda.AttnGEMMLen(seqOff), D)
	b.run(cuda.PlanAttentionGEMM(out, lse, q, k, v, seqOff, sc, seqOff, N, H, KVH, D, min(W, N), scale, shimGEMMPerRun))
}

func (b shimGEMM) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	b.AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, max(N, 1), scale)
}

func (b shimGEMM) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	if !cuda.AttnTC(kernels.PrecisionBF16, D) {
		b.shimTC.AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
		return
	}
	kernels.NeedWindow("AttentionWindowBackward", W)
	kernels.NeedAttentionBackward("AttentionWindowBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	sc := gemmScratch(shimGEMMPerRun, H/KVH, cuda.AttnGEMMLen(seqOff), D)
	b.run(cuda.PlanAttentionBackwardGEMM(dq, dk, dv, dout, out, lse, q, k, v, seqOff, sc, seqOff, N, H, KVH, D, min(W, N), scale, shimGEMMPerRun))
}

// TestAttentionGEMMOnCPUShim is TestAttentionTCOnCPUShim on the GEMM
// attention: attnTCCases (variable-length packs, GQA, D 16 to 128, windows)
// against kernels/ref at the tensor-core kernels' bounds, the backward's
// bits repeated, and kerneltest's attention groups.
func TestAttentionGEMMOnCPUShim(t *testing.T) {
	t.Parallel()
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	b := shimGEMM{shimTC: shimTC{shimBackend: shimBackend{h: h}}}
	t.Run("against ref", func(t *testing.T) { attentionTCAgainstRef(t, b, attnTCCases) })
	t.Run("conformance", func(t *testing.T) {
		kerneltest.RunOps(t, b, "Attention", "AttentionWindow", "AttentionDecode")
	})
}

// gemmWorst runs b's attention forward and backward on one case (lens,
// heads, D, window W; W = 0: causal) and returns the largest ratio of an
// output's relative error against ref on the same bfloat16-rounded inputs
// to its bound (tcLseTol, tcOutTol, tcGradTol), with the output's name: at
// most 1 for a correct plan.
func gemmWorst(b kernels.Backend, lens []int, H, KVH, D, W int) (float64, string) {
	r := rand.New(rand.NewPCG(28, 44))
	seqOff, N := []int32{0}, 0
	for _, l := range lens {
		N += l
		seqOff = append(seqOff, int32(N))
	}
	if W == 0 {
		W = N
	}
	q, k, v, dout := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D), randn(r, N*H*D)
	scale := float32(1 / math.Sqrt(float64(D)))
	wo, wl := make([]float32, N*H*D), make([]float32, N*H)
	ref.New().AttentionWindowForward(wo, wl, roundBF16(q), roundBF16(k), roundBF16(v), seqOff, N, H, KVH, D, W, scale)
	got, gl := make([]float32, N*H*D), make([]float32, N*H)
	b.AttentionWindowForward(got, gl, q, k, v, seqOff, N, H, KVH, D, W, scale)
	dq0, dk0, dv0 := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D)
	wdq, wdk, wdv := slices.Clone(dq0), slices.Clone(dk0), slices.Clone(dv0)
	ref.New().AttentionWindowBackward(wdq, wdk, wdv, roundBF16(dout), wo, wl, roundBF16(q), roundBF16(k), roundBF16(v), seqOff, N, H, KVH, D, W, scale)
	gdq, gdk, gdv := slices.Clone(dq0), slices.Clone(dk0), slices.Clone(dv0)
	b.AttentionWindowBackward(gdq, gdk, gdv, dout, wo, wl, q, k, v, seqOff, N, H, KVH, D, W, scale)
	worst, name := 0.0, ""
	for _, c := range []struct {
		name      string
		got, want []float32
		tol       float64
	}{{"lse", gl, wl, tcLseTol}, {"out", got, wo, tcOutTol}, {"dq", gdq, wdq, tcGradTol}, {"dk", gdk, wdk, tcGradTol}, {"dv", gdv, wdv, tcGradTol}} {
		e := kerneltest.RelErr(c.got, c.want) / c.tol
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if e > worst {
			worst, name = e, c.name
		}
	}
	return worst, name
}

// TestAttentionGEMMBrokenPlanCaught: the comparison above tells a broken
// GEMM plan from the right one. Each single change — the softmax's scale
// or window, the entries a run's softmax takes its rows for, the query heads a KV
// head gathers, a GEMM's batch stride, the scale left off dk's scatter,
// dv's scatter overwriting instead of accumulating — puts some output
// past its bound, while the plan as built stays within them.
func TestAttentionGEMMBrokenPlanCaught(t *testing.T) {
	t.Parallel()
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	base := shimGEMM{shimTC: shimTC{shimBackend: shimBackend{h: h}}}
	// Two sequences (one shorter than the other: padding), GQA of 2, a
	// window of 6 keys: 4 entries, in runs of 2.
	lens, H, KVH, D, W := []int{13, 9}, 4, 2, 16, 6
	if worst, name := gemmWorst(base, lens, H, KVH, D, W); worst > 1 {
		t.Fatalf("the plan as built: %s at %.3g of its bound", name, worst)
	}
	// change returns a mutation that edits the steps of kernel name (or,
	// with name "", the GEMMs) with f.
	change := func(name string, f func(args []any, g *cuda.Mm)) func([]cuda.XStep) []cuda.XStep {
		return func(x []cuda.XStep) []cuda.XStep {
			for _, s := range x {
				k, g := cuda.StepParts(s)
				if k != nil && k.Kernel == name {
					f(k.Args, nil)
				}
				if g != nil && name == "" {
					f(nil, g)
				}
			}
			return x
		}
	}
	// The positions of attention_gemm_softmax's and _dsoftmax's parameters
	// (the plans' argument lists).
	const smE0, smW, smScale = 5, 9, 10
	const dsScale = 15
	for _, m := range []struct {
		name   string
		mutate func([]cuda.XStep) []cuda.XStep
	}{
		{"softmax scale ×1.1", change("attention_gemm_softmax", func(a []any, _ *cuda.Mm) { a[smScale] = a[smScale].(float32) * 1.1 })},
		{"softmax window one key wider", change("attention_gemm_softmax", func(a []any, _ *cuda.Mm) { a[smW] = a[smW].(int) + 1 })},
		{"softmax: a run's rows read as the entries one earlier", change("attention_gemm_softmax", func(a []any, _ *cuda.Mm) { a[smE0] = max(0, a[smE0].(int)-1) })},
		{"dsoftmax scale ×1.1", change("attention_gemm_dsoftmax", func(a []any, _ *cuda.Mm) { a[dsScale] = a[dsScale].(float32) * 1.1 })},
		{"gather: one query head a KV head", change("attention_gemm_gather", func(a []any, _ *cuda.Mm) {
			if a[7].(int) > 1 { // rep
				a[7] = 1
			}
		})},
		{"GEMM batch stride of B zero", change("", func(_ []any, g *cuda.Mm) { g.StrideB = 0 })},
		{"scatter without dk's scale", change("attention_gemm_scatter", func(a []any, _ *cuda.Mm) {
			if a[7].(int) == 1 && a[10].(float32) != 1 { // rep 1, mul = scale: dk
				a[10] = float32(1)
			}
		})},
		{"scatter overwriting dv", change("attention_gemm_scatter", func(a []any, _ *cuda.Mm) {
			if a[11].(int) == 1 && a[10].(float32) == 1 { // accumulate, mul 1: dv
				a[11] = 0
			}
		})},
	} {
		b := base
		b.mutate = m.mutate
		if worst, name := gemmWorst(b, lens, H, KVH, D, W); worst <= 1 {
			t.Errorf("%s: not caught (worst %s at %.3g of its bound)", m.name, name, worst)
		} else {
			t.Logf("%s: caught (%s at %.3g of its bound)", m.name, name, worst)
		}
	}
}

// TestAttnGEMMEntries: a run holds as many entries as attnGEMMScoreBytes
// (1 GiB at 12 bytes a score) takes, and none when one entry is larger
// (the op then runs tc1).
func TestAttnGEMMEntries(t *testing.T) {
	for _, c := range []struct{ G, L, want int }{
		{7, 1024, 12}, // the 7B bench: 84 MiB an entry
		{1, 1, 1 << 30 / 12},
		{7, 3500, 1}, // 7·3500²·12 = 1.03e9 ≤ 2³⁰
		{7, 3600, 0}, // past it
		{1, 9459, 1}, // 12·9459² ≤ 2³⁰
		{1, 9460, 0},
	} {
		if got := cuda.AttnGEMMEntries(c.G, c.L, 1<<30); got != c.want {
			t.Errorf("AttnGEMMEntries(%d, %d) = %d, want %d", c.G, c.L, got, c.want)
		}
	}
}

// TestAttnGEMMLen: the GEMM attention pads the longest sequence to a
// multiple of 8 (16 bytes of bfloat16), no sequence to nothing.
func TestAttnGEMMLen(t *testing.T) {
	for _, c := range []struct {
		off  []int32
		want int
	}{{[]int32{0, 37, 38, 68}, 40}, {[]int32{0, 1024, 2048}, 1024}, {[]int32{0, 0}, 0}, {[]int32{0, 1}, 8}, {[]int32{0, 5, 21}, 16}} {
		if got := cuda.AttnGEMMLen(c.off); got != c.want {
			t.Errorf("AttnGEMMLen(%v) = %d, want %d", c.off, got, c.want)
		}
	}
}
