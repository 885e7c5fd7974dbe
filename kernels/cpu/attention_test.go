package cpu_test

import (
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels/cpu"
)

// BenchmarkAttentionTrain times the training attention at modelbench's
// train-05b shape (Qwen2.5-0.5B: 8 sequences × 256 tokens, H=14, KVH=2,
// D=64) on the default backend with 2 workers, as hone-train runs it: one
// layer's AttentionForward, AttentionBackward, and both in a row. Besides
// wall time it reports the process's CPU time per op (cpu-ms/op), which
// other work on a shared machine disturbs less.
func BenchmarkAttentionTrain(b *testing.B) {
	const S, T, H, KVH, D = 8, 256, 14, 2, 64
	be, err := cpu.New(cpu.Options{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	N := S * T
	seqOff := make([]int32, S+1)
	for i := range seqOff {
		seqOff[i] = int32(i * T)
	}
	r := rand.New(rand.NewPCG(3, 4))
	randn := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	q, k, v, dout := randn(N*H*D), randn(N*KVH*D), randn(N*KVH*D), randn(N*H*D)
	out, lse := make([]float32, N*H*D), make([]float32, N*H)
	dq, dk, dv := make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)
	scale := float32(1 / math.Sqrt(D))
	fwd := func() { be.AttentionForward(out, lse, q, k, v, seqOff, N, H, KVH, D, scale) }
	bwd := func() { be.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, scale) }
	fwd()
	for _, c := range []struct {
		name string
		run  func()
	}{{"fwd+bwd", func() { fwd(); bwd() }}, {"fwd", fwd}, {"bwd", bwd}} {
		b.Run(c.name, func(b *testing.B) {
			t0 := cpuTime(b)
			for range b.N {
				c.run()
			}
			b.ReportMetric(float64(cpuTime(b)-t0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
