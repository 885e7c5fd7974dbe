package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// The attention ops of shimBackend: attention.cu on the CPU shim with Ops'
// plans, after the host checks a backend makes (kernels/check.go).

func (b shimBackend) AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	kernels.NeedAttentionForward("AttentionForward", out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.h.runPlan(cuda.PlanAttention(out, lse, q, k, v, seqOff, len(seqOff)-1, N, N, H, KVH, D, N, 0, scale))
}

func (b shimBackend) AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedWindow("AttentionWindowForward", W)
	kernels.NeedAttentionForward("AttentionWindowForward", out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.h.runPlan(cuda.PlanAttention(out, lse, q, k, v, seqOff, len(seqOff)-1, N, N, H, KVH, D, W, 0, scale))
}

func (b shimBackend) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32) {
	kernels.NeedAttentionBackward("AttentionBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.h.runPlan(cuda.PlanAttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, len(seqOff)-1, N, H, KVH, D, N, scale))
}

func (b shimBackend) AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	kernels.NeedWindow("AttentionWindowBackward", W)
	kernels.NeedAttentionBackward("AttentionWindowBackward", dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D)
	b.h.runPlan(cuda.PlanAttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, len(seqOff)-1, N, H, KVH, D, W, scale))
}

func (b shimBackend) AttentionDecode(out, q, kCache, vCache []float32, Tq, Tk, H, KVH, D int, scale float32) {
	b.h.runPlan(cuda.PlanAttention(out, []float32(nil), q, kCache, vCache, []int32(nil), 0, Tq, Tk, H, KVH, D, Tk, Tk-Tq, scale))
}

// AttentionDecodeBatch runs attention_decode.cu's plan with the caches
// packed into one array for keys and one for values (the shim's process
// gets copies of the slices it is handed, so the table's offsets are
// relative to those arrays), and copies the caches back.
func (b shimBackend) AttentionDecodeBatch(out, q, k, v []float32, kCache, vCache [][]float32, seqOff []int32, N, H, KVH, D, W int, scale float32) {
	tk := kernels.NeedAttentionDecodeBatch("AttentionDecodeBatch", out, q, k, v, kCache, vCache, seqOff, N, H, KVH, D, W)
	S := len(tk)
	var kpool, vpool []float32
	kOff, vOff := make([]int64, S), make([]int64, S)
	maxTq := 0
	for s := range S {
		kOff[s], vOff[s] = int64(len(kpool)), int64(len(vpool))
		kpool, vpool = append(kpool, kCache[s]...), append(vpool, vCache[s]...)
		maxTq = max(maxTq, int(seqOff[s+1]-seqOff[s]))
	}
	b.h.runPlan(cuda.PlanAttentionDecodeBatch(out, q, k, v, kpool, vpool, cuda.DecodeTable(seqOff, tk, kOff, vOff), S, maxTq, H, KVH, D, W, scale))
	for s := range S {
		copy(kCache[s], kpool[kOff[s]:])
		copy(vCache[s], vpool[vOff[s]:])
	}
}

// attentionOnShim runs kerneltest's attention groups and the PyTorch
// golden of the GQA attention on attention.cu through the shim.
func attentionOnShim(t *testing.T, h shimHarness) {
	kerneltest.RunOps(t, shimBackend{h: h}, "Attention", "AttentionWindow", "AttentionDecode", "AttentionDecodeBatch")
	kerneltest.RunGoldenOps(t, shimBackend{h: h}, "../../testdata/golden/kernels", "Attention")
	t.Run("wide heads", func(t *testing.T) { attentionAgainstRef(t, shimBackend{h: h}, attnWideShapes) })
}

// attnCase is one attention shape beyond kerneltest's (whose head dims
// stop at 64): packed sequence lengths, heads, head dim and a window (0:
// none).
type attnCase struct {
	lens       []int
	H, KVH, D  int
	W          int
	bitwiseDet bool // run the backward twice and want the same bits
}

// attnWideShapes hold head dims whose tiles are short (D = 256: 6 queries
// a dkdv tile, 7 keys a dq tile) or not a multiple of 8 (D = 100), so that
// every kernel walks several tiles with a partial last one.
var attnWideShapes = []attnCase{
	{lens: []int{23, 17}, H: 2, KVH: 1, D: 256},
	{lens: []int{23, 17}, H: 2, KVH: 1, D: 256, W: 9},
	{lens: []int{37}, H: 2, KVH: 1, D: 128},
	{lens: []int{20, 21}, H: 3, KVH: 3, D: 100, W: 16},
}

// attentionAgainstRef runs b's attention forward (windowed when c.W > 0)
// and backward on c against kernels/ref, at kerneltest's tolerances.
func attentionAgainstRef(t *testing.T, b kernels.Backend, cases []attnCase) {
	r := rand.New(rand.NewPCG(28, 11))
	for _, c := range cases {
		t.Run(fmt.Sprintf("T=%v,H=%d,KVH=%d,D=%d,W=%d", c.lens, c.H, c.KVH, c.D, c.W), func(t *testing.T) {
			H, KVH, D, W := c.H, c.KVH, c.D, c.W
			seqOff, N := packedOffsets(c.lens)
			q, k, v, dout := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D), randn(r, N*H*D)
			scale := float32(1 / math.Sqrt(float64(D)))
			fwd := func(be kernels.Backend, out, lse []float32) {
				if W > 0 {
					be.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
				} else {
					be.AttentionForward(out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
				}
			}
			bwd := func(be kernels.Backend, dq, dk, dv, out, lse []float32) {
				if W > 0 {
					be.AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
				} else {
					be.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
				}
			}
			wo, wl, got, gl := make([]float32, N*H*D), make([]float32, N*H), make([]float32, N*H*D), make([]float32, N*H)
			fwd(ref.New(), wo, wl)
			fwd(b, got, gl)
			near(t, "out", got, wo, kerneltest.F32Tol)
			near(t, "lse", gl, wl, kerneltest.F32Tol)
			dq, dk, dv := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D)
			wdq, wdk, wdv := slices.Clone(dq), slices.Clone(dk), slices.Clone(dv)
			bwd(ref.New(), wdq, wdk, wdv, wo, wl)
			gdq, gdk, gdv := slices.Clone(dq), slices.Clone(dk), slices.Clone(dv)
			bwd(b, gdq, gdk, gdv, wo, wl)
			near(t, "dq", gdq, wdq, 1e-4)
			near(t, "dk", gdk, wdk, 1e-4)
			near(t, "dv", gdv, wdv, 1e-4)
			if c.bitwiseDet {
				adq, adk, adv := slices.Clone(dq), slices.Clone(dk), slices.Clone(dv)
				bwd(b, adq, adk, adv, wo, wl)
				wantDeterministic(t, adq, adk, adv, gdq, gdk, gdv)
			}
		})
	}
}

// packedOffsets returns the offsets of sequences of lens packed back to
// back (0, lens[0], lens[0]+lens[1], …: the attention ops' seqOff) and
// their total N.
func packedOffsets(lens []int) (seqOff []int32, N int) {
	seqOff = []int32{0}
	for _, l := range lens {
		N += l
		seqOff = append(seqOff, int32(N))
	}
	return seqOff, N
}

// wantDeterministic fails t unless a second backward's gradients (adq,
// adk, adv) have the bits of the first's (gdq, gdk, gdv): the check of
// the attention cases that promise a bitwise deterministic backward.
func wantDeterministic(t *testing.T, adq, adk, adv, gdq, gdk, gdv []float32) {
	t.Helper()
	for name, pair := range map[string][2][]float32{"dq": {adq, gdq}, "dk": {adk, gdk}, "dv": {adv, gdv}} {
		for i := range pair[0] {
			if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
				t.Fatalf("%s[%d]: %g on the second run, %g on the first: the backward is not deterministic", name, i, pair[0][i], pair[1][i])
			}
		}
	}
}

// TestAttentionBadSeqOffInBounds: attention.cu, attention_tc.cu,
// attention_fa2.cu, attention_mma.cu and attention_gemm.cu read seqOff on
// the device, where
// the host does not check it, so they must stay inside their buffers
// whatever the offsets are. The kernels run here
// under AddressSanitizer (which fails a launch that reads or writes
// outside a buffer) on offsets past N, negative, decreasing, and not
// starting at 0; every output must come out finite (each query still sees
// itself, each key its own query).
func TestAttentionBadSeqOffInBounds(t *testing.T) {
	t.Parallel()
	cxx := shimCXX(t)
	for _, f := range []string{"attention.cu", "attention_tc.cu", "attention_fa2.cu", "attention_mma.cu", "attention_gemm.cu", "misc.cu", "attention.cuh", "mma.cuh", "common.cuh", "cpushim/cuda_cpu.h", "testdata/kernels_main.cc"} {
		if _, err := os.ReadFile(f); err != nil { // for go test's cache
			t.Fatal(err)
		}
	}
	// A harness of those kernels and misc.cu's (zero_f32) alone: ASan's
	// build of every kernel took 10 s and more of g++.
	dir := t.TempDir()
	main := shimSubset(t, dir, "kernels_asan", "attention.cu", "attention_tc.cu", "attention_fa2.cu", "attention_mma.cu", "attention_gemm.cu", "misc.cu")
	bin := filepath.Join(dir, "kernels_asan")
	if out, err := exec.Command(cxx, "-std=c++17", "-O0", "-fsanitize=address", "-Wall", "-Werror", "-pthread", "-I", "cpushim",
		"-o", bin, main).CombinedOutput(); err != nil {
		t.Fatalf("%s -fsanitize=address %s: %v\n%s", cxx, main, err, out)
	}
	h := newShimHarness(t, bin)
	r := rand.New(rand.NewPCG(28, 12))
	const N, H, KVH = 20, 2, 1
	for _, c := range []struct {
		seqOff []int32
		W, D   int // D = 16: the tensor-core kernels (attention_tc.cu); 32: tc2's (attention_fa2.cu); 48: tc3's (attention_mma.cu)
	}{{[]int32{0, 25, 20}, N, 8}, {[]int32{0, -7, 20}, N, 8}, {[]int32{0, 15, 4, 20}, 5, 8}, {[]int32{3, 9, 100}, N, 8}, {[]int32{-5, 1 << 30}, 5, 8},
		{[]int32{0, 25, 20}, N, 16}, {[]int32{0, -7, 20}, N, 16}, {[]int32{0, 15, 4, 20}, 5, 16}, {[]int32{3, 9, 100}, N, 16}, {[]int32{-5, 1 << 30}, 5, 16},
		{[]int32{0, 25, 20}, N, 32}, {[]int32{0, -7, 20}, N, 32}, {[]int32{0, 15, 4, 20}, 5, 32}, {[]int32{3, 9, 100}, N, 32}, {[]int32{-5, 1 << 30}, 5, 32},
		{[]int32{0, 25, 20}, N, 48}, {[]int32{0, -7, 20}, N, 48}, {[]int32{0, 15, 4, 20}, 5, 48}, {[]int32{3, 9, 100}, N, 48}, {[]int32{-5, 1 << 30}, 5, 48}} {
		seqOff, W, D := c.seqOff, c.W, c.D
		q, k, v, dout := randn(r, N*H*D), randn(r, N*KVH*D), randn(r, N*KVH*D), randn(r, N*H*D)
		name := fmt.Sprintf("seqOff=%v,W=%d,D=%d", seqOff, W, D)
		S := len(seqOff) - 1
		fwd, bwd := cuda.PlanAttention, cuda.PlanAttentionBackward
		switch D {
		case 16:
			fwd, bwd = cuda.PlanAttentionTC, cuda.PlanAttentionBackwardTC
		case 32:
			fwd = cuda.PlanAttentionTC2
			bwd = func(dq, dk, dv, dout, out, lse, q, k, v, seqOff any, S, N, H, KVH, D, W int, scale float32) []cuda.Step {
				return cuda.PlanAttentionBackwardTC2(dq, dk, dv, dout, out, lse, q, k, v, seqOff, make([]float32, N*H), S, N, H, KVH, D, W, scale)
			}
		case 48:
			fwd = cuda.PlanAttentionTC3
			bwd = func(dq, dk, dv, dout, out, lse, q, k, v, seqOff any, S, N, H, KVH, D, W int, scale float32) []cuda.Step {
				return cuda.PlanAttentionBackwardTC3(dq, dk, dv, dout, out, lse, q, k, v, seqOff, make([]float32, N*H), S, N, H, KVH, D, W, scale)
			}
		}
		out, lse := make([]float32, N*H*D), make([]float32, N*H)
		for _, s := range fwd(out, lse, q, k, v, seqOff, S, N, N, H, KVH, D, W, 0, 0.35) {
			if err := h.run(s); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		dq, dk, dv := make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)
		for _, s := range bwd(dq, dk, dv, dout, out, lse, q, k, v, seqOff, S, N, H, KVH, D, W, 0.35) {
			if err := h.run(s); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		for what, x := range map[string][]float32{"out": out, "lse": lse, "dq": dq, "dk": dk, "dv": dv} {
			for i, f := range x {
				if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
					t.Fatalf("%s: %s[%d] = %g", name, what, i, f)
				}
			}
		}
		if D != 16 {
			continue
		}
		// The GEMM attention (attention_gemm.cu) sizes its operands by
		// offsets the host checked (here: S sequences of equal length); the
		// device's copy, which its kernels read, is the bad one.
		hostOff := make([]int32, S+1)
		for s := range hostOff {
			hostOff[s] = int32(s * N / S)
		}
		order, runs, ok := cuda.GEMMRuns(hostOff, KVH, H/KVH, 1<<30, 8) // several row blocks
		if !ok {
			t.Fatalf("%s: no GEMM runs", name)
		}
		sc := gemmScratch(runs, H/KVH, D)
		// The device's order of the sequences is bad too.
		for i := range order {
			order[i] = int32(7*i - 3)
		}
		out, lse = make([]float32, N*H*D), make([]float32, N*H)
		dq, dk, dv = make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)
		h.runX(cuda.PlanAttentionGEMM(out, lse, q, k, v, seqOff, order, S, sc, runs, N, H, KVH, D, W, 0.35))
		h.runX(cuda.PlanAttentionBackwardGEMM(dq, dk, dv, dout, out, lse, q, k, v, seqOff, order, S, sc, runs, N, H, KVH, D, W, 0.35))
		for what, x := range map[string][]float32{"out": out, "lse": lse, "dq": dq, "dk": dk, "dv": dv} {
			for i, f := range x {
				if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
					t.Fatalf("%s, gemm: %s[%d] = %g", name, what, i, f)
				}
			}
		}
	}
}
