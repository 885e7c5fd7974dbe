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
// (hostGemm), in runs of a few entries and row blocks of a few positions
// so that every case takes several of each (shimGEMMRuns).

// shimGEMMBlock is the row block of the shim tests: 16 positions, so that
// the cases' sequences (up to 90 tokens) take several blocks, the last
// one shorter where 16 does not divide the padded length.
const shimGEMMBlock = 16

// shimGEMMRuns is the GEMM attention's runs on the shim for G query heads
// a KV head: a score bound of two entries of the longest sequence, so that
// the cases take several runs (and a run of short sequences more entries).
func shimGEMMRuns(t testing.TB, off []int32, KVH, G int) ([]int32, []cuda.GEMMRun) {
	L := 0
	for s := 0; s+1 < len(off); s++ {
		L = max(L, int(off[s+1]-off[s]+7)/8*8)
	}
	order, runs, ok := cuda.GEMMRuns(off, KVH, G, 2*12*G*cuda.GEMMBlockScores(L, shimGEMMBlock), shimGEMMBlock)
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
	seqOff, N := packedOffsets(lens)
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
// or window, the entries a run's softmax takes its rows for, a row
// block's first key as the softmax or a score GEMM takes it, the query
// heads a KV head gathers, a GEMM's batch stride, dK̃ and dṼ overwritten
// by each row block instead of summed or summed onto unzeroed scratch, the
// scale left off dk's scatter, dv's scatter overwriting instead of
// accumulating — puts some output past its bound, while the plan as built
// stays within them.
func TestAttentionGEMMBrokenPlanCaught(t *testing.T) {
	t.Parallel()
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	base := shimGEMM{shimTC: shimTC{shimBackend: shimBackend{h: h}}, t: t}
	// Two sequences (one shorter than the other: padding), GQA of 2, a
	// window of 6 keys: 4 entries, in runs of 2, each of 32 positions in
	// blocks of 16, the second block's keys from 8 (16 − 6 + 1 rounded
	// down).
	lens, H, KVH, D, W := []int{29, 9}, 4, 2, 16, 6
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
	const smE0, smC0, smW, smScale = 7, 12, 14, 15
	const dsScale = 20
	const rep, mul, acc = 9, 12, 13 // of attention_gemm_gather and _scatter
	// dKV reports whether g is a product into dK̃ or dṼ (Pᵀ·dÕ, dSᵀ·Q̃).
	dKV := func(g *cuda.Mm) bool { return g.TransA }
	for _, m := range []struct {
		name   string
		mutate func([]cuda.XStep) []cuda.XStep
	}{
		{"softmax scale ×1.1", change("attention_gemm_softmax", func(a []any, _ *cuda.Mm) { a[smScale] = a[smScale].(float32) * 1.1 })},
		{"softmax window one key wider", change("attention_gemm_softmax", func(a []any, _ *cuda.Mm) { a[smW] = a[smW].(int) + 1 })},
		{"softmax: a run's rows read as the entries one earlier", change("attention_gemm_softmax", func(a []any, _ *cuda.Mm) { a[smE0] = max(0, a[smE0].(int)-1) })},
		{"softmax: a block's keys taken from 8 later", change("attention_gemm_softmax", func(a []any, _ *cuda.Mm) { a[smC0] = a[smC0].(int) + 8 })},
		{"score GEMMs from key 0 in every block", change("", func(_ []any, g *cuda.Mm) {
			if g.TransB {
				g.OffB = 0
			}
		})},
		{"dsoftmax scale ×1.1", change("attention_gemm_dsoftmax", func(a []any, _ *cuda.Mm) { a[dsScale] = a[dsScale].(float32) * 1.1 })},
		{"gather: one query head a KV head", change("attention_gemm_gather", func(a []any, _ *cuda.Mm) {
			if a[rep].(int) > 1 {
				a[rep] = 1
			}
		})},
		{"GEMM batch stride of B zero", change("", func(_ []any, g *cuda.Mm) { g.StrideB = 0 })},
		{"dK̃ and dṼ overwritten by each row block", change("", func(_ []any, g *cuda.Mm) {
			if dKV(g) {
				g.Beta = 0
			}
		})},
		{"dK̃ and dṼ not zeroed before the row blocks", func(x []cuda.XStep) []cuda.XStep {
			return slices.DeleteFunc(x, func(s cuda.XStep) bool {
				k, _ := cuda.StepParts(s)
				return k != nil && k.Kernel == "zero_f32"
			})
		}},
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
// order, each run within the score bound at 12 bytes a score of the
// largest causal row block of its own padded length (the longest of its
// sequences rounded up to 8): the 7B bench's 32 entries of 1024 tokens in
// one run at 1 GiB (128 rows × 1024 keys × 7 heads an entry); short
// sequences grouped more; sequences with no tokens mere padding; a
// sequence whose whole square is past the bound taken in row blocks; none
// when one entry's largest block is past the bound.
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
		B      int // row block; 0: attnGEMMBlock
		order  []int32
		want   [][3]int // e0, n, L
	}{
		{"7B bench", seven, 4, 7, GiB, 0, []int32{0, 1, 2, 3, 4, 5, 6, 7}, [][3]int{{0, 32, 1024}}},
		// 12·7·128·1024 = 11010048 bytes an entry of the 7B bench
		{"7B bench, bound of 12 entries", seven, 4, 7, 12 * 11010048, 0, []int32{0, 1, 2, 3, 4, 5, 6, 7}, [][3]int{{0, 12, 1024}, {12, 12, 1024}, {24, 8, 1024}}},
		// lengths 37, 1, 30 → 40, 8, 32 (one block each); an entry of 40
		// costs 12·7·1600 = 134400
		{"padded lengths", []int32{0, 37, 38, 68}, 1, 7, GiB, 0, []int32{0, 2, 1}, [][3]int{{0, 3, 40}}},
		{"two of the longest", []int32{0, 37, 38, 68}, 1, 7, 2 * 134400, 0, []int32{0, 2, 1}, [][3]int{{0, 2, 40}, {2, 1, 8}}},
		// lengths 9, 4, 4, 4, 9 with 2 KV heads: the two 9s first, then the
		// short ones, more entries a run
		{"short ones grouped", []int32{0, 9, 13, 17, 21, 30}, 2, 1, 4 * 12 * 16 * 16, 0, []int32{0, 4, 1, 2, 3}, [][3]int{{0, 4, 16}, {4, 6, 8}}},
		{"empty sequences: padding of a run", []int32{0, 0, 5, 5}, 1, 2, GiB, 0, []int32{1, 0, 2}, [][3]int{{0, 3, 8}}},
		{"one entry past the bound", []int32{0, 17}, 1, 1, 12*24*24 - 1, 0, nil, nil},
		{"exactly at the bound", []int32{0, 17}, 1, 1, 12 * 24 * 24, 0, []int32{0}, [][3]int{{0, 1, 24}}},
		// 40 tokens, 2 heads: the square is 12·2·40² = 38400 bytes; in
		// blocks of 8 the largest block is 12·2·8·40 = 7680
		{"past the square's bound, in row blocks", []int32{0, 40}, 1, 2, 7680, 8, []int32{0}, [][3]int{{0, 1, 40}}},
		{"one row block past the bound", []int32{0, 40}, 1, 2, 7679, 8, nil, nil},
		// blocks of 16 over 40: the largest is the second, 16 rows × 32
		// keys (512), not the last and shorter one, 8 × 40 (320)
		{"the largest block, not the last", []int32{0, 40, 41}, 1, 1, 12 * 512, 16, []int32{0, 1}, [][3]int{{0, 1, 40}, {1, 1, 8}}},
		{"the largest block past the bound", []int32{0, 40, 41}, 1, 1, 12*512 - 1, 16, nil, nil},
	} {
		B := c.B
		if B == 0 {
			B = cuda.AttnGEMMBlock
		}
		order, runs, ok := cuda.GEMMRuns(c.off, c.KVH, c.G, c.cap, B)
		var got [][3]int
		for _, r := range runs {
			e0, n, L, rb := cuda.RunParts(r)
			if rb != B {
				t.Errorf("%s: a run's row block %d, want %d", c.name, rb, B)
			}
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
// dS, a row block's first key left out of the softmax's mask (its max and
// sum), padding rows of the gathered operands left unwritten (the scratch
// holds NaN, as reused device scratch holds old values) — compiled into
// a shim harness of attention_gemm.cu's kernels and zero_f32 alone; each
// puts some output past its bound, while the unchanged source through the
// same harness stays within every bound. A change whose text is no longer
// in the source fails the test, so it cannot pass vacuously.
func TestAttentionGEMMKernelMutantsCaught(t *testing.T) {
	t.Parallel()
	cxx := shimCXX(t)
	shim, err := filepath.Abs("cpushim")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ name, old, new string }{
		// The control: the source unchanged, through the same harness of
		// a few kernels, within every bound.
		{"none (the source as it is)", "const int last = live ? a.i : -1", "const int last = live ? a.i : -1"},
		{"softmax: causal mask one key too far", "const int last = live ? a.i : -1", "const int last = live ? a.i + 1 : -1"},
		{"dsoftmax: δ left out of dS", "agBF16(pc * (dp[c] - delta))", "agBF16(pc * dp[c])"},
		{"softmax: a block's first key ignored", "const int key = c0 + c;\n\t\tif (key < first", "const int key = c;\n\t\tif (key < first"},
		{"gather: padding rows unwritten", "dst[x] = o < 0 ? (unsigned short)0 : agBF16(src[o * D + d]);", "if (o >= 0) dst[x] = agBF16(src[o * D + d]);"},
	} {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			files, err := filepath.Glob("*.cu*") // .cu and .cuh
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
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
			// The mutant's kernels and misc.cu's (zero_f32, which the
			// plans launch) alone.
			main := shimSubset(t, dir, "mutant_main", filepath.Join(dir, "misc.cu"), filepath.Join(dir, "attention_gemm.cu"))
			bin := filepath.Join(dir, "kernels_mutant")
			if out, err := exec.Command(cxx, "-std=c++17", "-O0", "-Wall", "-pthread", "-I", shim,
				"-o", bin, main).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", cxx, err, out)
			}
			b := shimGEMM{shimTC: shimTC{shimBackend: shimBackend{h: newShimHarness(t, bin)}}, t: t}
			// Two sequences of unequal length (padding), GQA of 2, a window
			// of 6 (row blocks of 16 whose keys start past 0).
			worst, name := gemmWorst(b, []int{29, 9}, 4, 2, 16, 6)
			switch {
			case m.old == m.new && worst > 1:
				t.Errorf("the unchanged source fails (worst %s at %.3g of its bound)", name, worst)
			case m.old == m.new:
				t.Logf("within the bounds (worst %s at %.3g of its bound)", name, worst)
			case worst <= 1:
				t.Errorf("not caught (worst %s at %.3g of its bound)", name, worst)
			default:
				t.Logf("caught (%s at %.3g of its bound)", name, worst)
			}
		})
	}
}

// TestGEMMBlocks: a run's row blocks take B positions each (the last one
// shorter where B does not divide L) against the keys their rows see:
// from the first row's window start rounded down to 8 up to the last row.
func TestGEMMBlocks(t *testing.T) {
	for _, c := range []struct {
		L, B, W int
		want    [][4]int // i0, n, k0, nk
	}{
		{40, 16, 40, [][4]int{{0, 16, 0, 16}, {16, 16, 0, 32}, {32, 8, 0, 40}}},
		{16, 128, 16, [][4]int{{0, 16, 0, 16}}},
		// window 6: block 16's first row sees keys from 11, block 24's from 19
		{32, 8, 6, [][4]int{{0, 8, 0, 8}, {8, 8, 0, 16}, {16, 8, 8, 16}, {24, 8, 16, 16}}},
		// window 1: each row sees itself; the keys start at the block's own
		{24, 8, 1, [][4]int{{0, 8, 0, 8}, {8, 8, 8, 8}, {16, 8, 16, 8}}},
	} {
		if got := cuda.GEMMBlocks(c.L, c.B, c.W); !slices.Equal(got, c.want) {
			t.Errorf("gemmBlocks(%d, %d, %d) = %v, want %v", c.L, c.B, c.W, got, c.want)
		}
	}
}

// gemmPlanFLOPs is the FLOPs of plan x's GEMMs: 2·M·N·K a product, times
// its batch.
func gemmPlanFLOPs(x []cuda.XStep) int64 {
	var f int64
	for _, s := range x {
		if _, g := cuda.StepParts(s); g != nil {
			f += 2 * int64(g.M) * int64(g.N) * int64(g.K) * int64(max(g.Batch, 1))
		}
	}
	return f
}

// gemmPlans returns the GEMM attention's forward and backward plans (their
// steps only, on no operands) for the sequences of off, H query heads
// over KVH, head dim D, window W, within the production score bound in
// row blocks of B, and the runs.
func gemmPlans(t testing.TB, off []int32, H, KVH, D, W, B int) (fwd, bwd []cuda.XStep, runs []cuda.GEMMRun) {
	order, runs, ok := cuda.GEMMRuns(off, KVH, H/KVH, 1<<30, B)
	if !ok {
		t.Fatalf("GEMMRuns(%v): no runs", off)
	}
	S, N := len(off)-1, int(off[len(off)-1])
	var sc cuda.AttnGEMMScratch
	fwd = cuda.PlanAttentionGEMM(nil, nil, nil, nil, nil, nil, order, S, sc, runs, N, H, KVH, D, min(W, N), 1)
	bwd = cuda.PlanAttentionBackwardGEMM(nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, order, S, sc, runs, N, H, KVH, D, min(W, N), 1)
	return fwd, bwd, runs
}

// TestAttentionGEMMCausalBlocks: on the 7B shape (8 sequences of 1024
// tokens, 28 query heads over 4 KV heads, D 128) the plans' score GEMMs
// stop at each row block's last row, so nothing above the diagonal blocks
// is multiplied, and start where the window lets them; the GEMM FLOPs,
// counted from the plans, are 36/64 of the whole square's (43.75% fewer),
// forward and backward, and a window of 256 cuts them further.
func TestAttentionGEMMCausalBlocks(t *testing.T) {
	const S, T, H, KVH, D = 8, 1024, 28, 4, 128
	const G = H / KVH
	off := make([]int32, S+1)
	for s := range off {
		off[s] = int32(s * T)
	}
	// square is the FLOPs of the plans without row blocks: every product
	// over the whole padded square of each entry, 2 forward, 5 backward.
	square := func(runs []cuda.GEMMRun) int64 {
		var f int64
		for _, r := range runs {
			_, n, L, _ := cuda.RunParts(r)
			f += int64(n) * 2 * G * int64(L) * int64(L) * D
		}
		return f
	}
	for _, c := range []struct {
		name string
		W    int
		want float64 // counted over the square's, forward and backward
	}{
		{"causal", S * T, 36.0 / 64},
		// keys a block: 128, 256, 384, then 384 (from i0 − 255 rounded down)
		{"window 256", 256, (128 + 256 + 6*384) / 8192.0},
	} {
		fwd, bwd, runs := gemmPlans(t, off, H, KVH, D, c.W, cuda.AttnGEMMBlock)
		if len(runs) != 1 {
			t.Fatalf("%s: %d runs, want the 32 entries in one", c.name, len(runs))
		}
		scores := 0
		for _, s := range append(slices.Clone(fwd), bwd...) {
			_, g := cuda.StepParts(s)
			if g == nil || !g.TransB {
				continue
			}
			// A score GEMM (Q̃·K̃ᵀ or dÕ·Ṽᵀ) of the block of positions
			// i0 … i0+n−1 over keys k0 … k0+nk−1.
			scores++
			i0, n, k0, nk := g.OffA/(G*D), g.M/G, g.OffB/D, g.N
			if k0+nk != i0+n {
				t.Errorf("%s: block %d+%d takes keys %d … %d: want up to its last row", c.name, i0, n, k0, k0+nk-1)
			}
			if want := max(0, i0-c.W+1) / 8 * 8; k0 != want {
				t.Errorf("%s: block %d+%d takes keys from %d, want %d", c.name, i0, n, k0, want)
			}
			if n != cuda.AttnGEMMBlock || g.Batch != S*KVH {
				t.Errorf("%s: block %d of %d positions, batch %d: want %d, %d", c.name, i0, n, g.Batch, cuda.AttnGEMMBlock, S*KVH)
			}
		}
		if want := 3 * T / cuda.AttnGEMMBlock; scores != want { // forward 1, backward 2 a block
			t.Errorf("%s: %d score GEMMs, want %d", c.name, scores, want)
		}
		sq := square(runs)
		f, b := gemmPlanFLOPs(fwd), gemmPlanFLOPs(bwd)
		for _, x := range []struct {
			what      string
			got, full int64
		}{{"forward", f, 2 * sq}, {"backward", b, 5 * sq}} {
			r := float64(x.got) / float64(x.full)
			t.Logf("%s, %s: %.1f GFLOP of GEMMs, the whole square's %.1f: %.2f%% fewer", c.name, x.what, float64(x.got)/1e9, float64(x.full)/1e9, 100*(1-r))
			if math.Abs(r-c.want) > 1e-12 {
				t.Errorf("%s, %s: %.6f of the square's FLOPs, want %.6f", c.name, x.what, r, c.want)
			}
		}
	}
}
