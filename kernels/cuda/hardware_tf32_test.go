package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels/cuda"
)

// TestLoRAMatmulTF32OnHardware times the LoRA products of the 7B step
// (train/model's Linear: 8 × 1024 tokens, rank 16, Qwen2.5-7B's layer
// shapes) as cublasSgemm (Device.Matmul, the f32 precision) and as
// cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32 (Device.MatmulTF32, what
// Backend.Matmul runs in the bf16 precision when K ≥ cuda.TF32MinK), and
// logs µs a call side by side with the memory rate each reaches; and
// checks the TF32 products of the gradients (K ≥ TF32MinK, skinny outputs)
// within tf32Tol of the float32 ones. The figures decide whether the rank-r
// products (K = 16) should take TF32 too. With -test.short (the memcheck
// step) it checks one small product in each mode only. Not run yet.
func TestLoRAMatmulTF32OnHardware(t *testing.T) {
	dev := openHardware(t)
	defer dev.Close()
	r := rand.New(rand.NewPCG(28, 77))
	fill := func(n int) *cuda.Buffer {
		x := make([]float32, n)
		fillUniform(r, x, 1)
		return upload(t, dev, x)
	}
	if testing.Short() {
		a, b := fill(64*512), fill(512*16)
		defer a.Free()
		defer b.Free()
		c, ct := fill(64*16), fill(64*16)
		defer c.Free()
		defer ct.Free()
		if err := dev.Matmul(c, a, b, 64, 16, 512, false, false, 0); err != nil {
			t.Fatal(err)
		}
		if err := dev.MatmulTF32(ct, a, b, 64, 16, 512, false, false, 0); err != nil {
			t.Fatal(err)
		}
		near(t, "TF32 vs f32, M=64 N=16 K=512", download(t, ct), download(t, c), tf32Tol)
		return
	}
	const N, R, maxDim = 8 * 1024, 16, 18944
	// One buffer per operand at its largest, shared by the layer shapes
	// (Device.Matmul reads only the leading M·K, K·N, M·N elements).
	x, dout, big := fill(N*maxDim), fill(N*maxDim), fill(N*maxDim)
	u, g, A, B := fill(N*R), fill(N*R), fill(R*maxDim), fill(maxDim*R)
	DA, DB, c32, ctf := fill(R*maxDim), fill(maxDim*R), fill(maxDim*R), fill(maxDim*R)
	for _, buf := range []*cuda.Buffer{x, dout, big, u, g, A, B, DA, DB, c32, ctf} {
		defer buf.Free()
	}
	type product struct {
		name           string
		c, a, b        *cuda.Buffer
		M, N, K        int
		transA, transB bool
		beta           float32
	}
	var total [2]time.Duration // Sgemm, TF32 over one layer's 7 projections
	for _, layer := range []struct {
		name    string
		In, Out int
		count   int // projections of this shape in a layer
	}{{"q_proj/o_proj", 3584, 3584, 2}, {"k_proj/v_proj", 3584, 512, 2}, {"gate_proj/up_proj", 3584, 18944, 2}, {"down_proj", 18944, 3584, 1}} {
		In, Out := layer.In, layer.Out
		for _, p := range []product{
			{"out += u·Bᵀ", big, u, B, N, Out, R, false, true, 1},
			{"DB += doutᵀ·u", DB, dout, u, Out, R, N, true, false, 1},
			{"g = dout·B", g, dout, B, N, R, Out, false, false, 0},
			{"DA += gᵀ·x", DA, g, x, R, In, N, true, false, 1},
			{"dx += g·A", big, g, A, N, In, R, false, false, 1},
		} {
			what := fmt.Sprintf("%s %s (M=%d N=%d K=%d)", layer.name, p.name, p.M, p.N, p.K)
			var per [2]time.Duration
			for mode, mm := range []func(c, a, b *cuda.Buffer, M, N, K int, tA, tB bool, beta float32) error{dev.Matmul, dev.MatmulTF32} {
				call := func() {
					if err := mm(p.c, p.a, p.b, p.M, p.N, p.K, p.transA, p.transB, p.beta); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
				}
				call() // warm-up: cuBLAS picks and loads its kernel
				if err := dev.Synchronize(); err != nil {
					t.Fatal(err)
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
			bytes := 4 * float64(p.M*p.K+p.K*p.N+p.M*p.N)
			if p.beta != 0 {
				bytes += 4 * float64(p.M*p.N)
			}
			t.Logf("%s: Sgemm %.1f µs, TF32 %.1f µs (%.2fx; %.0f / %.0f GB/s); Backend.Matmul takes TF32: %v",
				what, us(per[0]), us(per[1]), per[0].Seconds()/per[1].Seconds(),
				bytes/per[0].Seconds()/1e9, bytes/per[1].Seconds()/1e9, p.K >= cuda.TF32MinK)
			if p.K >= cuda.TF32MinK && p.M*p.N <= maxDim*R {
				// The gradients' products: the TF32 result against the float32 one.
				if err := dev.Matmul(c32, p.a, p.b, p.M, p.N, p.K, p.transA, p.transB, 0); err != nil {
					t.Fatal(err)
				}
				if err := dev.MatmulTF32(ctf, p.a, p.b, p.M, p.N, p.K, p.transA, p.transB, 0); err != nil {
					t.Fatal(err)
				}
				n := p.M * p.N
				want, got := download(t, c32)[:n], download(t, ctf)[:n]
				t.Logf("%s: TF32 error against f32 %.3g (tf32Tol %.3g)", what, relErr(got, want), tf32Tol)
				near(t, what+": TF32 vs f32", got, want, tf32Tol)
			}
		}
	}
	t.Logf("one layer's LoRA products (7 projections, 5 each): Sgemm %.0f µs, TF32 %.0f µs; 28 layers: %.1f ms vs %.1f ms",
		us(total[0]), us(total[1]), 28*total[0].Seconds()*1e3, 28*total[1].Seconds()*1e3)
}

func us(d time.Duration) float64 { return d.Seconds() * 1e6 }
