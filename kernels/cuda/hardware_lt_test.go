package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// ltTol bounds cuBLASLt's products against cublasGemmEx's on the same
// bfloat16 operands (near's rule, relative to |want| + rms): both
// accumulate exact bf16 products in float32, but their algorithms may
// split and order the K sums differently (split-K), which moves a sum of
// K = 18944 terms by a few float32 ulps of the row's scale.
const ltTol = 1e-4

// ltTolBF16C bounds them where C is stored as bfloat16: the float32 sums,
// a few ulps apart, may round to neighbouring bfloat16 values (2⁻⁸
// relative), near's rule taking |want| + rms.
const ltTolBF16C = 8e-3

// unpackBF16 returns the first n bfloat16 values of a buffer of bfloat16
// pairs (as downloaded: two values a float32 element, the first in the
// low half), widened to float32.
func unpackBF16(packed []float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = kernels.F32(uint16(math.Float32bits(packed[i/2]) >> (16 * (i % 2))))
	}
	return out
}

// TestGemmLtOnHardware times the 7B step's base GEMMs (train/model's
// linear layers in the bf16 precision: 8 × 1024 tokens, Qwen2.5-7B's
// projections, bfloat16 weight [OC, C] and activations, float32 output)
// through cublasGemmEx (Device.MatmulBF16, the default) and through
// cublasLtMatmul with the heuristic's algorithm and a LtWorkspaceBytes
// workspace (Device.MatmulBF16Lt, Ops.SetGEMMLibrary("cublaslt")), and logs
// TFLOP/s side by side: the forward out = x·Wᵀ and the backward
// dx += dout·W of each projection shape, through cuBLASLt twice: with the
// heuristic's first algorithm (Device.SetLtAutotune(1)) and autotuned
// (the default: the fastest of LtAutotuneCandidates timed on the shape's
// first call, whose one-time cost it logs, and the heuristic's rank of
// the algorithm kept). It checks each cuBLASLt result against
// cublasGemmEx's within ltTol. The figures decide whether cuBLASLt becomes
// the default (gpucheck/RESULTS.md put cublasGemmEx at about 500 TFLOP/s,
// 53% of the bf16 peak, on these shapes). cuBLASLt is found by its sonames
// or HONE_LIBCUBLASLT. With -test.short (the memcheck step) it checks one
// small product in each mode only, with a float32 C and with a bfloat16 C.
// Not run on a GPU yet.
func TestGemmLtOnHardware(t *testing.T) {
	if os.Getenv("HONE_CUDA_TEST") != "1" {
		t.Skip("set HONE_CUDA_TEST=1 on a machine with a CUDA device")
	}
	dev, err := cuda.Open(cuda.Options{DriverLib: os.Getenv("HONE_LIBCUDA"), BLASLib: os.Getenv("HONE_LIBCUBLAS"),
		BLASLt: true, BLASLtLib: os.Getenv("HONE_LIBCUBLASLT")})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	t.Logf("device: %s", dev)
	if ok, err := dev.HasBLASLt(); !ok {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(28, 71))
	fillBF16 := func(n int) *cuda.Buffer {
		h := make([]uint16, n)
		fillUniformBF16(r, h, 1)
		return uploadBF16(t, dev, h)
	}
	ws, err := dev.Alloc(cuda.LtWorkspaceBytes / 4)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Free()
	N, maxDim, hidden := 8*1024, 18944, 3584
	if testing.Short() { // one small shape
		N, maxDim, hidden = 64, 128, 48
	}
	act, w := fillBF16(N*maxDim), fillBF16(maxDim*hidden) // x or dout; a weight [OC, C]
	defer act.Free()
	defer w.Free()
	modes := []string{"GemmEx", "cuBLASLt heuristic-first", "cuBLASLt autotuned"}
	// timeModes times one product in the three modes, logs them side by
	// side and checks the cuBLASLt results against GemmEx's. With cBF the
	// product stores a bfloat16 C (mm.CBF16: the dact and the held gate
	// and up products), through Device.GemmRows.
	timeModes := func(what string, M, N, K int, transB bool, beta float32, cBF bool) (per [3]time.Duration) {
		var outs [3]*cuda.Buffer
		var firstCall time.Duration // the autotuned mode's first call: the tuning's one-time cost and one product
		for mode := range 3 {
			c := upload(t, dev, make([]float32, M*N))
			outs[mode] = c
			// The setting is part of the plan's key: the two cuBLASLt
			// modes keep plans of their own.
			dev.SetLtAutotune(map[bool]int{false: 1, true: cuda.LtAutotuneCandidates}[mode == 2])
			call := func() {
				var err error
				switch {
				case cBF:
					err = dev.GemmRows(cuda.Mm{C: c, A: act, B: w, M: M, N: N, K: K, TransB: transB, Beta: beta, BF16: true, CBF16: true, Lt: mode > 0, LtWS: ws})
				case mode == 0:
					err = dev.MatmulBF16(c, act, w, M, N, K, false, transB, beta)
				default:
					err = dev.MatmulBF16Lt(c, act, w, ws, M, N, K, false, transB, beta)
				}
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			first := time.Now()
			call() // warm-up: the library picks (cuBLASLt's heuristic plans, the autotune times) the kernel
			if err := dev.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if mode == 2 {
				firstCall = time.Since(first)
			}
			const reps = 10
			start := time.Now()
			for range reps {
				call()
			}
			if err := dev.Synchronize(); err != nil {
				t.Fatal(err)
			}
			per[mode] = time.Since(start) / reps
			if cBF && beta != 0 {
				// Eleven sums into a bfloat16 C round eleven times, each
				// mode on its own values: the comparison below is of one
				// product on a zeroed C.
				if err := c.Upload(make([]float32, M*N)); err != nil {
					t.Fatal(err)
				}
				call()
			}
		}
		flop := 2 * float64(M) * float64(N) * float64(K)
		line := what + ":"
		for mode, name := range modes {
			line += fmt.Sprintf(" %s %.0f µs %.0f TFLOP/s (%.2fx);", name, us(per[mode]), flop/per[mode].Seconds()/1e12, per[0].Seconds()/per[mode].Seconds())
		}
		t.Logf("%s autotune's first call %.1f ms", line, firstCall.Seconds()*1e3)
		// All ran 11 times on the same operands (the autotune's timing
		// runs write C only with beta 0, which C's contents do not
		// enter): with beta 1 each float32 output holds 11 times the
		// product.
		want, tol := download(t, outs[0]), ltTol
		if cBF {
			want, tol = unpackBF16(want, M*N), ltTolBF16C
		}
		for mode := 1; mode < 3; mode++ {
			got := download(t, outs[mode])
			if cBF {
				got = unpackBF16(got, M*N)
			}
			t.Logf("%s: %s against GemmEx %.3g (tolerance %.3g)", what, modes[mode], relErr(got, want), tol)
			near(t, what+": "+modes[mode]+" vs GemmEx", got, want, tol)
		}
		for _, o := range outs {
			if err := o.Free(); err != nil {
				t.Fatal(err)
			}
		}
		return per
	}
	if testing.Short() {
		timeModes(fmt.Sprintf("out = x·Wᵀ (M=%d N=%d K=%d)", N, hidden, maxDim), N, hidden, maxDim, true, 0, false)
		timeModes(fmt.Sprintf("out += x·Wᵀ, bf16 C (M=%d N=%d K=%d)", N, hidden, maxDim), N, hidden, maxDim, true, 1, true)
		return
	}
	var total [3]time.Duration // per mode, over one layer's 7 projections, forward and backward
	for _, layer := range []struct {
		name  string
		C, OC int
		count int // projections of this shape in a layer
	}{{"q_proj/o_proj", hidden, hidden, 2}, {"k_proj/v_proj", hidden, 512, 2}, {"gate_proj/up_proj", hidden, maxDim, 2}, {"down_proj", maxDim, hidden, 1}} {
		for _, p := range []struct {
			name    string
			M, N, K int
			transB  bool
			beta    float32
		}{
			{"out = x·Wᵀ", N, layer.OC, layer.C, true, 0},
			{"dx += dout·W", N, layer.C, layer.OC, false, 1},
		} {
			per := timeModes(fmt.Sprintf("%s %s (M=%d N=%d K=%d)", layer.name, p.name, p.M, p.N, p.K), p.M, p.N, p.K, p.transB, p.beta, false)
			for mode := range per {
				total[mode] += time.Duration(layer.count) * per[mode]
			}
		}
	}
	// The products storing a bfloat16 C: the down projection's dact
	// (LinearBackwardBF16ToRounded, on the default bf16 path) and, with
	// TrainOptions.GateUpBF16, gate and up (LinearForwardBF16RoundedTo),
	// each adding onto its LoRA product (beta 1). Not in the totals: they
	// replace the float32 rows above on those paths.
	timeModes(fmt.Sprintf("down_proj dact += dout·W, bf16 C (M=%d N=%d K=%d)", N, maxDim, hidden), N, maxDim, hidden, false, 1, true)
	timeModes(fmt.Sprintf("gate_proj/up_proj out += x·Wᵀ, bf16 C (M=%d N=%d K=%d)", N, maxDim, hidden), N, maxDim, hidden, true, 1, true)
	for mode, name := range modes {
		t.Logf("one layer's base GEMMs (7 projections, forward and dx), %s: %.0f µs; 28 layers: %.1f ms", name, us(total[mode]), 28*total[mode].Seconds()*1e3)
	}
	t.Logf("%d heuristic calls, %d shapes autotuned; the heuristic's rank of each autotuned shape's algorithm: %v", dev.LtHeuristicCalls(), dev.LtTuned(), dev.LtRanks())
}
