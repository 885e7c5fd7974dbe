package cpu_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels/cpu"
)

// BenchmarkLoRAProducts times the six matrix products of a rank-8 LoRA
// update of one projection at modelbench's train-05b shapes (8 × 256 =
// 2048 tokens; Qwen2.5-0.5B's q/o, k/v, gate/up and down widths) on one
// worker, as model.Linear runs them: forward u = x·Aᵀ (xAt) and out +=
// u·Bᵀ (yuBt); backward DB += doutᵀ·u, g = dout·B, DA += gᵀ·x and dx +=
// g·A. Besides wall time it reports the process's CPU time per op and the
// rate of its big operand's traffic (read, or read and written for yuBt
// and dx).
func BenchmarkLoRAProducts(b *testing.B) {
	const N, R = 2048, 8
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	r := rand.New(rand.NewPCG(3, 4))
	randn := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	for _, sh := range []struct{ in, out int }{{896, 896}, {896, 128}, {896, 4864}, {4864, 896}} {
		in, out := sh.in, sh.out
		x, A, B, dout := randn(N*in), randn(R*in), randn(out*R), randn(N*out)
		y, u, g, dx := randn(N*out), make([]float32, N*R), make([]float32, N*R), randn(N*in)
		dA, dB := make([]float32, R*in), make([]float32, out*R)
		for _, op := range []struct {
			name  string
			bytes int
			f     func()
		}{
			{"xAt", N * in * 4, func() { be.LinearForward(u, x, A, nil, N, in, R) }},
			{"yuBt", N * out * 8, func() { be.Matmul(y, u, B, N, out, R, false, true, 1) }},
			{"DB", N * out * 4, func() { be.Matmul(dB, dout, u, out, R, N, true, false, 1) }},
			{"g", N * out * 4, func() { be.Matmul(g, dout, B, N, R, out, false, false, 0) }},
			{"DA", N * in * 4, func() { be.Matmul(dA, g, x, R, in, N, true, false, 1) }},
			{"dx", N * in * 8, func() { be.Matmul(dx, g, A, N, in, R, false, false, 1) }},
		} {
			b.Run(fmt.Sprintf("%s/%dx%d", op.name, in, out), func(b *testing.B) {
				t0 := cpuTime(b)
				for range b.N {
					op.f()
				}
				d := cpuTime(b) - t0
				b.ReportMetric(float64(d)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(op.bytes)*float64(b.N)/d.Seconds()/1e9, "GB/s")
			})
		}
	}
}
