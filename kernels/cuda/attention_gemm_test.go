package cuda_test

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// The GEMM-based attention of the bf16 precision ("gemm":
// ops_attention_gemm.go, attention_gemm.cu) on the CPU shim: its plans'
// kernels on the shim, their batched GEMMs from the BLAS definition
// (hostGemm), in runs of a few entries so that every case takes several
// (shimGEMMRuns).

// shimGEMMRuns is the GEMM attention's runs on the shim for G query heads
// a KV head: a score bound of two entries of the longest sequence, so that
// the cases take several runs (and a run of short sequences more entries).
func shimGEMMRuns(t testing.TB, off []int32, KVH, G int) ([]int32, []cuda.GEMMRun) {
	L := 0
	for s := 0; s+1 < len(off); s++ {
		L = max(L, int(off[s+1]-off[s]+7)/8*8)
	}
	order, runs, ok := cuda.GEMMRuns(off, KVH, G, 2*12*G*L*L)
	if !ok {
		t.Fatalf("GEMMRuns(%v): no run fits two entries of the longest", off)
	}
	return order, runs
}

// gemmScratch is the GEMM attention's scratch for runs on the host, every
// value NaN (as bfloat16 or float32): Ops reuses its scratch from call to
// call, so a kernel that leaves a padding row or key unwritten must show.
func gemmScratch(runs []cuda.GEMMRun, G, D int) cuda.AttnGEMMScratch {
	qd, kd, sl := cuda.AttnGEMMSizes(runs, G, D)
	bf := func(n int) []uint16 {
		x := make([]uint16, n)
		for i := range x {
			x[i] = 0x7fc0 // a bfloat16 NaN
		}
		return x
	}
	f := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.NaN())
		}
		return x
	}
	return cuda.AttnGEMMScratch{
		Q: bf(qd), K: bf(kd), V: bf(kd), DO: bf(qd), P: bf(sl), DS: bf(sl),
		S: f(sl), DP: f(sl), O: f(qd), DQ: f(qd), DK: f(kd), DV: f(kd),
	}
}

// shimGEMM is shimTC with the training attention on the GEMM plans where
// Ops would run them (cuda.AttnTC dims); mutate, when set, changes the
// plan's steps before they run (the tests that a broken plan is caught).
type shimGEMM struct {
	shimTC
	t      testing.TB
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
	order, runs := shimGEMMRuns(b.t, seqOff, KVH, H/KVH)
	b.run(cuda.PlanAttentionGEMM(out, lse, q, k, v, seqOff, order, len(order), gemmScratch(runs, H/KVH, D), runs, N, H, KVH, D, min(W, N), scale))
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
	order, runs := shimGEMMRuns(b.t, seqOff, KVH, H/KVH)
	b.run(cuda.PlanAttentionBackwardGEMM(dq, dk, dv, dout, out, lse, q, k, v, seqOff, order, len(order), gemmScratch(runs, H/KVH, D), runs, N, H, KVH, D, min(W, N), scale))
}

// TestAttentionGEMMOnCPUShim is TestAttentionTCOnCPUShim on the GEMM
// attention: attnTCCases (variable-length packs, GQA, D 16 to 128, windows)
// against kernels/ref at the tensor-core kernels' bounds, the backward's
// bits repeated, and kerneltest's attention groups.
func TestAttentionGEMMOnCPUShim(t *testing.T) {
	t.Parallel()
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	b := shimGEMM{shimTC: shimTC{shimBackend: shimBackend{h: h}}, t: t}
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
	base := shimGEMM{shimTC: shimTC{shimBackend: shimBackend{h: h}}, t: t}
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
	const smE0, smW, smScale = 7, 11, 12
	const dsScale = 17
	const rep, mul, acc = 9, 12, 13 // of attention_gemm_gather and _scatter
	for _, m := range []struct {
		name   string
		mutate func([]cuda.XStep) []cuda.XStep
	}{
		{"softmax scale ×1.1", change("attention_gemm_softmax", func(a []any, _ *cuda.Mm) { a[smScale] = a[smScale].(float32) * 1.1 })},
		{"softmax window one key wider", change("attention_gemm_softmax", func(a []any, _ *cuda.Mm) { a[smW] = a[smW].(int) + 1 })},
		{"softmax: a run's rows read as the entries one earlier", change("attention_gemm_softmax", func(a []any, _ *cuda.Mm) { a[smE0] = max(0, a[smE0].(int)-1) })},
		{"dsoftmax scale ×1.1", change("attention_gemm_dsoftmax", func(a []any, _ *cuda.Mm) { a[dsScale] = a[dsScale].(float32) * 1.1 })},
		{"gather: one query head a KV head", change("attention_gemm_gather", func(a []any, _ *cuda.Mm) {
			if a[rep].(int) > 1 {
				a[rep] = 1
			}
		})},
		{"GEMM batch stride of B zero", change("", func(_ []any, g *cuda.Mm) { g.StrideB = 0 })},
		{"scatter without dk's scale", change("attention_gemm_scatter", func(a []any, _ *cuda.Mm) {
			if a[rep].(int) == 1 && a[mul].(float32) != 1 { // rep 1, mul = scale: dk
				a[mul] = float32(1)
			}
		})},
		{"scatter overwriting dv", change("attention_gemm_scatter", func(a []any, _ *cuda.Mm) {
			if a[acc].(int) == 1 && a[mul].(float32) == 1 { // accumulate, mul 1: dv
				a[acc] = 0
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

// TestGEMMRuns: the GEMM attention orders the sequences longest first
// (ties in pack order) and runs their entries (sequence, KV head) in that
// order, each run within the score bound at 12 bytes a score of its own
// padded length (the longest of its sequences rounded up to 8): the 7B
// bench's 32 entries of 1024 tokens in runs of 12 at 1 GiB; short
// sequences grouped more; sequences with no tokens mere padding; none when
// one entry is past the bound.
func TestGEMMRuns(t *testing.T) {
	const GiB = 1 << 30
	seven := make([]int32, 9)
	for s := range seven {
		seven[s] = int32(1024 * s)
	}
	for _, c := range []struct {
		name   string
		off    []int32
		KVH, G int
		cap    int
		order  []int32
		want   [][3]int // e0, n, L
	}{
		{"7B bench", seven, 4, 7, GiB, []int32{0, 1, 2, 3, 4, 5, 6, 7}, [][3]int{{0, 12, 1024}, {12, 12, 1024}, {24, 8, 1024}}},
		// lengths 37, 1, 30 → 40, 8, 32; an entry of 40 costs 12·7·1600 = 134400
		{"padded lengths", []int32{0, 37, 38, 68}, 1, 7, GiB, []int32{0, 2, 1}, [][3]int{{0, 3, 40}}},
		{"two of the longest", []int32{0, 37, 38, 68}, 1, 7, 2 * 134400, []int32{0, 2, 1}, [][3]int{{0, 2, 40}, {2, 1, 8}}},
		// lengths 9, 4, 4, 4, 9 with 2 KV heads: the two 9s first, then the
		// short ones, more entries a run
		{"short ones grouped", []int32{0, 9, 13, 17, 21, 30}, 2, 1, 4 * 12 * 16 * 16, []int32{0, 4, 1, 2, 3}, [][3]int{{0, 4, 16}, {4, 6, 8}}},
		{"empty sequences: padding of a run", []int32{0, 0, 5, 5}, 1, 2, GiB, []int32{1, 0, 2}, [][3]int{{0, 3, 8}}},
		{"one entry past the bound", []int32{0, 17}, 1, 1, 12*24*24 - 1, nil, nil},
		{"exactly at the bound", []int32{0, 17}, 1, 1, 12 * 24 * 24, []int32{0}, [][3]int{{0, 1, 24}}},
	} {
		order, runs, ok := cuda.GEMMRuns(c.off, c.KVH, c.G, c.cap)
		var got [][3]int
		for _, r := range runs {
			e0, n, L := cuda.RunParts(r)
			got = append(got, [3]int{e0, n, L})
		}
		if ok != (c.want != nil) || !slices.Equal(got, c.want) || !slices.Equal(order, c.order) {
			t.Errorf("%s: order %v, runs %v (ok %v), want %v, %v", c.name, order, got, ok, c.order, c.want)
		}
	}
}

// TestAttentionGEMMKernelMutantsCaught: the shim comparison also tells a
// broken attention_gemm.cu from the right one. Each mutant is the kernel
// source with one change — the causal mask one key too far, δ left out of
// dS, padding rows of the gathered operands left unwritten (the scratch
// holds NaN, as reused device scratch holds old values) — compiled into
// the shim harness; each puts some output past its bound. A change whose
// text is no longer in the source fails the test, so it cannot pass
// vacuously.
func TestAttentionGEMMKernelMutantsCaught(t *testing.T) {
	t.Parallel()
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no C++ compiler for the CUDA CPU shim: %v", err)
		}
		t.Fatal(err)
	}
	shim, err := filepath.Abs("cpushim")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ name, old, new string }{
		{"softmax: causal mask one key too far", "const int last = live ? a.i : -1", "const int last = live ? a.i + 1 : -1"},
		{"dsoftmax: δ left out of dS", "agBF16(pc * (dp[c] - delta))", "agBF16(pc * dp[c])"},
		{"gather: padding rows unwritten", "dst[x] = o < 0 ? (unsigned short)0 : agBF16(src[o * D + d]);", "if (o >= 0) dst[x] = agBF16(src[o * D + d]);"},
	} {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "testdata"), 0o755); err != nil {
				t.Fatal(err)
			}
			files, err := filepath.Glob("*.cu*") // .cu and .cuh
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range append(files, filepath.Join("testdata", "kernels_main.cc")) {
				text, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if f == "attention_gemm.cu" {
					if !strings.Contains(string(text), m.old) {
						t.Fatalf("attention_gemm.cu no longer holds %q", m.old)
					}
					text = []byte(strings.Replace(string(text), m.old, m.new, 1))
				}
				if err := os.WriteFile(filepath.Join(dir, f), text, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			bin := filepath.Join(dir, "kernels_mutant")
			if out, err := exec.Command(cxx, "-std=c++17", "-O0", "-Wall", "-pthread", "-I", shim,
				"-o", bin, filepath.Join(dir, "testdata", "kernels_main.cc")).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", cxx, err, out)
			}
			b := shimGEMM{shimTC: shimTC{shimBackend: shimBackend{h: newShimHarness(t, bin)}}, t: t}
			// Two sequences of unequal length (padding), GQA of 2, causal.
			if worst, name := gemmWorst(b, []int{13, 9}, 4, 2, 16, 0); worst <= 1 {
				t.Errorf("not caught (worst %s at %.3g of its bound)", name, worst)
			} else {
				t.Logf("caught (%s at %.3g of its bound)", name, worst)
			}
		})
	}
}
