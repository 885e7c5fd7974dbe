package cuda_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestDecodeBatchOnHardware times one decode step's attention of one layer
// on the Qwen2.5-0.5B shape (32 sequences, one new token each, caches of
// 256 rows, 14 query heads over 2 KV heads of 64 dims) on cuda.Backend on
// a real device (HONE_CUDA_TEST=1), two ways: the per-sequence path the
// model took before AttentionDecodeBatch (two Copy ops to append each
// sequence's key and value rows and one AttentionDecode, 96 ops) and one
// AttentionDecodeBatch; it logs the µs of each and checks the two agree.
// Every op ends synchronized (cuda.Backend), so the times include the
// launch and synchronization of each op. With -test.short (under
// compute-sanitizer) it runs each way once, unmeasured.
func TestDecodeBatchOnHardware(t *testing.T) {
	dev := openHardware(t)
	b, err := cuda.NewBackend(dev, kernels.PrecisionF32)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the buffers' cleanups, registered later
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	const S, Tk, H, KVH, D = 32, 256, 14, 2, 64
	const qd, kvd = H * D, KVH * D
	r := rand.New(rand.NewPCG(28, 17))
	alloc := func(n int) []float32 {
		x, err := b.AllocF32(n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		t.Cleanup(func() { b.FreeF32(x) })
		return x
	}
	q, k, v := alloc(S*qd), alloc(S*kvd), alloc(S*kvd)
	one, batch := alloc(S*qd), alloc(S*qd)
	kc, vc := make([][]float32, S), make([][]float32, S)
	seqOff := make([]int32, S+1)
	for s := range S {
		kc[s], vc[s] = alloc(Tk*kvd), alloc(Tk*kvd)
		seqOff[s+1] = int32(s + 1)
	}
	scale := float32(1 / math.Sqrt(D))
	perSequence := func() {
		for s := range S {
			b.Copy(kc[s][(Tk-1)*kvd:], k[s*kvd:(s+1)*kvd], kvd)
			b.Copy(vc[s][(Tk-1)*kvd:], v[s*kvd:(s+1)*kvd], kvd)
			b.AttentionDecode(one[s*qd:(s+1)*qd], q[s*qd:(s+1)*qd], kc[s], vc[s], 1, Tk, H, KVH, D, scale)
		}
	}
	batched := func() {
		b.AttentionDecodeBatch(batch, q, k, v, kc, vc, seqOff, S, H, KVH, D, 0, scale)
	}
	perSequence() // warm-up: the JIT, the first touch of the caches
	batched()
	var worst float64
	for i := range one {
		worst = max(worst, math.Abs(float64(batch[i]-one[i])))
	}
	if worst > 1e-4 {
		t.Errorf("AttentionDecodeBatch differs from per-sequence AttentionDecode by %.3g", worst)
	}
	if testing.Short() {
		return
	}
	timeIt := func(f func()) time.Duration {
		const reps = 20
		start := time.Now()
		for range reps {
			f()
		}
		return time.Since(start) / reps
	}
	tOne, tBatch := timeIt(perSequence), timeIt(batched)
	t.Logf("decode attention of one layer, B=%d, Tk=%d, H=%d, KVH=%d, D=%d: per sequence (2 Copy + AttentionDecode each, %d ops) %.1f µs, AttentionDecodeBatch (1 op) %.1f µs: %.1f×",
		S, Tk, H, KVH, D, 3*S, float64(tOne.Nanoseconds())/1e3, float64(tBatch.Nanoseconds())/1e3, tOne.Seconds()/tBatch.Seconds())
}
