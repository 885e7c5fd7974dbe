package cuda_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
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

// TestSumSquaresSegments: SumSquaresSegments over segments of one
// allocation (sizes around the block and past the capped grid of 256
// blocks, so that a thread of a virtual block takes several values; an
// empty one; one overlapping another; gaps between them) gives each
// segment's SumSquares bit for bit, by one sum_squares_segments launch,
// on the emulated device with each op synchronized and stream-ordered on
// the deferred device (after a queued op that changes the values, and
// with one wait, the segment table copied once for the same segments). A
// NaN gives NaN in the segments holding it only; a segment outside x
// panics.
func TestSumSquaresSegments(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		var b *cuda.Backend
		var drv *cudafake.Driver
		if ordered {
			b, drv = streamBackend(t)
		} else {
			b, drv, _ = emulatedBackend(t)
		}
		name := map[bool]string{false: "synchronized", true: "stream-ordered"}[ordered]
		r := rand.New(rand.NewPCG(28, 5))
		offs := []int{0, 300, 300, 301, 1000, 1300, 1400, 2000, 1301}
		ns := []int{257, 0, 1, 600, 255, 65536 + 1000, 16, 520, 40}
		x, err := b.AllocF32(1400 + 65536 + 1000)
		if err != nil {
			t.Fatal(err)
		}
		for j := range x {
			// Magnitudes over 2⁻²⁰…2²⁰: the squares' sum rounds
			// differently in another order, which the bit checks see.
			x[j] = float32(r.NormFloat64() * math.Exp2(float64(r.IntN(41)-20)))
		}
		waits := func() int {
			return drv.Calls("cuCtxSynchronize") + drv.Calls("cuMemcpyHtoD_v2") + drv.Calls("cuMemcpyDtoH_v2")
		}
		check := func(what string, wantWaits int) []float64 {
			t.Helper()
			b.Synchronize()
			// Queued in the stream-ordered mode: the sums must come after it.
			b.Scale(x[1000:1255], x[1000:1255], 2, 255)
			w0, l0 := waits(), len(drv.Launches())
			got := make([]float64, len(offs))
			kernels.SumSquaresSegments(b, got, x, offs, ns)
			ls := drv.Launches()[l0:]
			w := waits() - w0
			want := make([]float64, len(offs))
			for i, off := range offs {
				want[i] = b.SumSquares(x[off:off+ns[i]], ns[i])
			}
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
					t.Errorf("%s, %s: segment %d (%d values at %d): SumSquaresSegments %.17g, SumSquares %.17g", name, what, i, ns[i], offs[i], got[i], want[i])
				}
			}
			// Scale's launch, then the one reduction.
			if len(ls) != 1 || ls[0].Kernel != "sum_squares_segments" || ls[0].Grid.X != len(offs) {
				t.Errorf("%s, %s: launched %v, want one sum_squares_segments of %d blocks", name, what, ls, len(offs))
			}
			if ordered && w != wantWaits {
				t.Errorf("%s, %s: SumSquaresSegments waited %d times, want %d", name, what, w, wantWaits)
			}
			return got
		}
		check("first", 2) // the table's copy, then the results'
		b.Synchronize()   // before the host writes
		for i := range offs {
			x[offs[i]] *= 2 // a change of the values, the same segments
		}
		check("same segments", 1)
		b.Synchronize()
		x[305] = float32(math.NaN())
		got := check("a NaN", 1)
		for i, s := range got {
			if in := offs[i] <= 305 && 305 < offs[i]+ns[i]; math.IsNaN(s) != in {
				t.Errorf("%s: segment %d (%d values at %d) gives %v with a NaN at 305", name, i, ns[i], offs[i], s)
			}
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: a segment past x did not panic", name)
				}
			}()
			kernels.SumSquaresSegments(b, make([]float64, 1), x, []int{len(x) - 3}, []int{4})
		}()
		b.FreeF32(x)
		b.Close()
	}
}
