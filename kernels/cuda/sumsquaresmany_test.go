package cuda_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestSumSquaresMany: SumSquaresMany gives each tensor's SumSquares bit for
// bit (zero-length ones 0, a NaN only where it is), and in the
// stream-ordered mode on the deferred device it waits once where one
// SumSquares a tensor waits once each (waits counted as in train/model's
// TestStreamOrderedWaits: cuCtxSynchronize, cuMemcpyHtoD, cuMemcpyDtoH),
// once its scratch has grown.
func TestSumSquaresMany(t *testing.T) {
	b, drv := streamBackend(t)
	defer b.Close()
	r := rand.New(rand.NewPCG(28, 3))
	sizes := []int{257, 0, 1, 600, 255, 520, 16}
	xs := make([][]float32, len(sizes))
	for i, n := range sizes {
		if n == 0 {
			continue
		}
		x, err := b.AllocF32(n)
		if err != nil {
			t.Fatal(err)
		}
		defer b.FreeF32(x)
		for j := range x {
			x[j] = float32(r.NormFloat64() * 3)
		}
		xs[i] = x
	}
	waits := func() int {
		return drv.Calls("cuCtxSynchronize") + drv.Calls("cuMemcpyHtoD_v2") + drv.Calls("cuMemcpyDtoH_v2")
	}
	// The first calls grow the scratch, which waits (scratch.go); count
	// from the second on.
	kernels.SumSquaresMany(b, make([]float64, len(xs)), xs)
	check := func(what string) {
		t.Helper()
		b.Synchronize()
		w0 := waits()
		want := make([]float64, len(xs))
		for i, x := range xs {
			want[i] = b.SumSquares(x, len(x))
		}
		each := waits() - w0
		w0 = waits()
		got := make([]float64, len(xs))
		kernels.SumSquaresMany(b, got, xs)
		many := waits() - w0
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Errorf("%s: tensor %d (%d values): SumSquaresMany %.17g, SumSquares %.17g", what, i, sizes[i], got[i], want[i])
			}
		}
		if many != 1 || each != len(sizes)-1 {
			t.Errorf("%s: SumSquaresMany waited %d times, SumSquares a tensor %d; want 1 and %d", what, many, each, len(sizes)-1)
		}
		t.Logf("%s: %d tensors: %d waits one SumSquares a tensor, %d SumSquaresMany", what, len(xs), each, many)
	}
	check("finite")
	xs[3][17] = float32(math.NaN())
	b.Scale(xs[5], xs[5], 2, len(xs[5])) // queued: the sums must see it
	check("a NaN, after a queued op")
	got := make([]float64, len(xs))
	kernels.SumSquaresMany(b, got, xs)
	for i, s := range got {
		if math.IsNaN(s) != (i == 3) {
			t.Errorf("tensor %d: %v with a NaN in tensor 3 only", i, s)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("SumSquaresMany with a short dst did not panic")
		}
	}()
	kernels.SumSquaresMany(b, got[:2], xs)
}
