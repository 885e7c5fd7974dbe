package cuda_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// TestOpsScratchReused: the ops with device scratch — the chunked logprob
// forward and backward (f32 and bf16 weights, both precisions), SumSquares,
// the bf16 linear layers and tc2's attention backward (δ) — take it from
// Ops' store: repeated calls of one shape make no cuMemAlloc and no
// cuMemFree (which synchronizes the device) after the first, at most one
// cuMemAlloc per scratch slot; a bigger call grows a slot once (one free,
// one alloc), a smaller one after it reuses it; Unload frees it all.
func TestOpsScratchReused(t *testing.T) {
	dev, o, drv, _ := openFakeOps(t)
	var mine []*cuda.Buffer
	b := func(n int) *cuda.Buffer {
		x, err := dev.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		mine = append(mine, x)
		return x
	}
	const C, V, chunk, H, D = 16, 40, 16, 2, 16
	ops := []struct {
		name  string
		prec  kernels.Precision
		slots int  // scratch slots the op takes
		fixed bool // its scratch does not grow with N
		call  func(N int) error
	}{
		{"LogprobForward", kernels.PrecisionF32, 2, false, func(N int) error {
			return o.LogprobForward(b(N), b(N), b(N), b(N*C), b(N*C), b(V*C), b(N), N, C, V, chunk)
		}},
		{"LogprobForwardBF16/f32", kernels.PrecisionF32, 3, false, func(N int) error { // z, state, the widened weight rows
			return o.LogprobForwardBF16(b(N), b(N), b(N), nil, b(N*C), b(V*C/2), b(N), N, C, V, chunk)
		}},
		{"LogprobForwardBF16/bf16", kernels.PrecisionBF16, 4, false, func(N int) error { // z, state, the rounded hidden, P
			return o.LogprobForwardBF16(b(N), b(N), b(N), b(N*C), b(N*C), b(V*C/2), b(N), N, C, V, chunk)
		}},
		{"LogprobBackward", kernels.PrecisionF32, 1, false, func(N int) error {
			return o.LogprobBackward(b(N*C), b(V*C), b(N), b(N), b(N), b(N), b(N*C), b(V*C), b(N), N, C, V, chunk)
		}},
		{"LogprobBackwardBF16/bf16", kernels.PrecisionBF16, 3, false, func(N int) error {
			return o.LogprobBackwardBF16(b(N*C), b(N), nil, b(N), b(N), b(N*C), b(V*C/2), b(N), N, C, V, chunk)
		}},
		{"SumSquares", kernels.PrecisionF32, 1, false, func(N int) error {
			_, err := o.SumSquares(b(N*300), N*300)
			return err
		}},
		{"LinearForwardBF16/bf16", kernels.PrecisionBF16, 1, false, func(N int) error {
			return o.LinearForwardBF16(b(N*V), b(N*C), b(V*C/2), nil, N, C, V)
		}},
		{"LinearBackwardBF16/f32", kernels.PrecisionF32, 1, true, func(N int) error {
			return o.LinearBackwardBF16(b(N*C), b(N*V), b(V*C/2), N, C, V)
		}},
		{"AttentionBackward/tc2", kernels.PrecisionBF16, 1, false, func(N int) error {
			seq := b(2)
			if err := seq.UploadInt32([]int32{0, int32(N)}); err != nil {
				return err
			}
			return o.AttentionBackward(b(N*H*D), b(N*D), b(N*D), b(N*H*D), b(N*H*D), b(N*H), b(N*H*D), b(N*D), b(N*D), seq, 1, N, H, 1, D, 0.25)
		}},
	}
	if err := o.SetAttentionKernel(cuda.AttentionTC2); err != nil {
		t.Fatal(err)
	}
	freeMine := func() {
		for _, x := range mine {
			if err := x.Free(); err != nil {
				t.Fatal(err)
			}
		}
		mine = mine[:0]
	}
	for i, op := range ops {
		if err := o.SetPrecision(op.prec); err != nil {
			t.Fatal(err)
		}
		slots0, _ := o.ScratchLive()
		// repeat counts cuMemAlloc and cuMemFree over n calls of the op on
		// N rows, the test's own buffers (allocated before each call,
		// freed after) not counted.
		repeat := func(n, N int) (allocs, frees int) {
			for range n {
				a0, f0 := drv.Calls("cuMemAlloc_v2"), drv.Calls("cuMemFree_v2")
				mark := len(mine)
				if err := op.call(N); err != nil {
					t.Fatalf("%s N=%d: %v", op.name, N, err)
				}
				own := len(mine) - mark
				allocs += drv.Calls("cuMemAlloc_v2") - a0 - own
				frees += drv.Calls("cuMemFree_v2") - f0
				freeMine()
			}
			return allocs, frees
		}
		// The first call may add or grow slots (they are shared between
		// ops: z and state by every logprob op, one by both bf16 linears).
		if a, f := repeat(1, 3); a > op.slots || f > a {
			t.Errorf("%s: the first call on N=3 made %d cuMemAlloc and %d cuMemFree of scratch, want at most %d, no more frees", op.name, a, f, op.slots)
		}
		if a, f := repeat(5, 3); a != 0 || f != 0 {
			t.Errorf("%s: 5 more calls on N=3 made %d cuMemAlloc and %d cuMemFree of scratch, want none", op.name, a, f)
		}
		// Bigger than any call before (the slots are shared): the slots
		// that grow with N are reallocated once, on the first of them.
		big := 12 + 4*i
		if a, f := repeat(3, big); a > op.slots || f != a || (a == 0) != op.fixed {
			t.Errorf("%s: 3 bigger calls (N=%d) made %d cuMemAlloc and %d cuMemFree of scratch, want 1 to %d (none: %v), a free for each", op.name, big, a, f, op.slots, op.fixed)
		}
		if a, f := repeat(3, 5); a != 0 || f != 0 {
			t.Errorf("%s: 3 smaller calls after them made %d cuMemAlloc and %d cuMemFree, want none", op.name, a, f)
		}
		if slots, _ := o.ScratchLive(); slots < slots0 || slots > slots0+op.slots {
			t.Errorf("%s: Ops holds %d scratch slots after it, %d before", op.name, slots, slots0)
		}
	}
	if !slices.ContainsFunc(drv.Launches(), func(l cudafake.Launch) bool { return l.Kernel == "attention_fa2_delta" }) {
		t.Error("the attention backward did not run tc2 (no attention_fa2_delta launch)")
	}
	slots, bytes := o.ScratchLive()
	if n, nb := dev.Live(); n != slots || nb != bytes {
		t.Errorf("live: %d buffers (%d bytes), Ops' scratch %d (%d bytes): want only the scratch", n, nb, slots, bytes)
	}
	frees := drv.Calls("cuMemFree_v2")
	if err := o.Unload(); err != nil {
		t.Fatal(err)
	}
	if got := drv.Calls("cuMemFree_v2") - frees; got != slots {
		t.Errorf("Unload made %d cuMemFree, want one per scratch slot (%d)", got, slots)
	}
	if n, nb := dev.Live(); n != 0 {
		t.Errorf("after Unload %d buffers (%d bytes) live", n, nb)
	}
	if n, _ := drv.Live(); n != 0 {
		t.Errorf("after Unload the fake holds %d allocations", n)
	}
}

// TestOpsScratchConcurrent: Ops called from several goroutines at once
// (here SumSquares, which writes its partial sums to the shared scratch
// and reads them back) gives each call its own result: an op holds the
// scratch store from its first launch to its last read, so no other call
// overwrites it in between. On the emulated device, so the sums are real.
func TestOpsScratchConcurrent(t *testing.T) {
	t.Parallel()
	drv := cudafake.NewEmulatedDriver(1, 0, loadEmulator(t))
	dev, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	o, err := dev.LoadOps()
	if err != nil {
		t.Fatal(err)
	}
	defer o.Unload()
	const workers, rounds = 4, 3
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := range workers {
		// Worker w sums n values of w+1: (w+1)²·n, exact in double.
		n := 300 * (w + 1)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(w + 1)
		}
		buf := upload(t, dev, x)
		defer buf.Free()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				got, err := o.SumSquares(buf, n)
				if err == nil && got != float64((w+1)*(w+1)*n) {
					err = fmt.Errorf("worker %d: SumSquares = %v, want %v", w, got, (w+1)*(w+1)*n)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, _ := o.ScratchLive(); n != 1 {
		t.Errorf("Ops holds %d scratch buffers after concurrent SumSquares, want 1", n)
	}
}
