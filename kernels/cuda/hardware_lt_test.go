package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels/cuda"
)

// ltTol bounds cuBLASLt's products against cublasGemmEx's on the same
// bfloat16 operands (near's rule, relative to |want| + rms): both
// accumulate exact bf16 products in float32, but their algorithms may
// split and order the K sums differently (split-K), which moves a sum of
// K = 18944 terms by a few float32 ulps of the row's scale.
const ltTol = 1e-4

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
// small product only, autotuned. Not run on a GPU yet.
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
	if testing.Short() {
		const M, N, K = 64, 48, 128
		a, b := fillBF16(M*K), fillBF16(N*K)
		defer a.Free()
		defer b.Free()
		c, cl := upload(t, dev, make([]float32, M*N)), upload(t, dev, make([]float32, M*N))
		defer c.Free()
		defer cl.Free()
		if err := dev.MatmulBF16(c, a, b, M, N, K, false, true, 0); err != nil {
			t.Fatal(err)
		}
		if err := dev.MatmulBF16Lt(cl, a, b, ws, M, N, K, false, true, 0); err != nil {
			t.Fatal(err)
		}
		near(t, "cuBLASLt vs GemmEx, M=64 N=48 K=128", download(t, cl), download(t, c), ltTol)
		return
	}
	const N, maxDim, hidden = 8 * 1024, 18944, 3584
	act, w := fillBF16(N*maxDim), fillBF16(maxDim*hidden) // x or dout; a weight [OC, C]
	defer act.Free()
	defer w.Free()
	modes := []string{"GemmEx", "cuBLASLt heuristic-first", "cuBLASLt autotuned"}
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
			what := fmt.Sprintf("%s %s (M=%d N=%d K=%d)", layer.name, p.name, p.M, p.N, p.K)
			var per [3]time.Duration
			var outs [3]*cuda.Buffer
			var firstCall time.Duration // the autotuned mode's first call: the tuning's one-time cost and one product
			for mode := range 3 {
				c := upload(t, dev, make([]float32, p.M*p.N))
				outs[mode] = c
				// The setting is part of the plan's key: the two cuBLASLt
				// modes keep plans of their own.
				dev.SetLtAutotune(map[bool]int{false: 1, true: cuda.LtAutotuneCandidates}[mode == 2])
				call := func() {
					var err error
					if mode == 0 {
						err = dev.MatmulBF16(c, act, w, p.M, p.N, p.K, false, p.transB, p.beta)
					} else {
						err = dev.MatmulBF16Lt(c, act, w, ws, p.M, p.N, p.K, false, p.transB, p.beta)
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
				total[mode] += time.Duration(layer.count) * per[mode]
			}
			flop := 2 * float64(p.M) * float64(p.N) * float64(p.K)
			line := what + ":"
			for mode, name := range modes {
				line += fmt.Sprintf(" %s %.0f µs %.0f TFLOP/s (%.2fx);", name, us(per[mode]), flop/per[mode].Seconds()/1e12, per[0].Seconds()/per[mode].Seconds())
			}
			t.Logf("%s autotune's first call %.1f ms", line, firstCall.Seconds()*1e3)
			// All ran 11 times on the same operands (the autotune's timing
			// runs write C only with beta 0, which C's contents do not
			// enter): with beta 1 each output holds 11 times the product.
			want := download(t, outs[0])
			for mode := 1; mode < 3; mode++ {
				got := download(t, outs[mode])
				t.Logf("%s: %s against GemmEx %.3g (ltTol %.3g)", what, modes[mode], relErr(got, want), ltTol)
				near(t, what+": "+modes[mode]+" vs GemmEx", got, want, ltTol)
			}
			for _, o := range outs {
				if err := o.Free(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for mode, name := range modes {
		t.Logf("one layer's base GEMMs (7 projections, forward and dx), %s: %.0f µs; 28 layers: %.1f ms", name, us(total[mode]), 28*total[mode].Seconds()*1e3)
	}
	t.Logf("%d heuristic calls, %d shapes autotuned; the heuristic's rank of each autotuned shape's algorithm: %v", dev.LtHeuristicCalls(), dev.LtTuned(), dev.LtRanks())
}
