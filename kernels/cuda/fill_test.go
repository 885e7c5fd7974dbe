package cuda_test

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// fillChunk is how many values of a slice fillRand draws from one
// generator.
const fillChunk = 1 << 20

// fillRand fills x on runtime.GOMAXPROCS(0) goroutines: the hardware
// tests' 7B-shaped inputs (155M values a buffer) take 0.4 to 1 s each
// to fill on one core, which the device check's time limit cannot spare.
// It takes one Uint64 from r as a seed and calls fill on each chunk of x
// (fillChunk values; the last may be shorter), chunk k with its own
// generator, rand.New(rand.NewPCG(seed, k)): the values depend on r's
// state only, not on the number of cores. They are not the values a
// serial loop over r would draw. fill takes a whole chunk, not a value, so
// that its loop calls the generator directly (a call through a func value
// for each value costs about 15% more on the normal draws).
func fillRand[T any](r *rand.Rand, x []T, fill func(r *rand.Rand, chunk []T)) {
	seed := r.Uint64()
	chunks := (len(x) + fillChunk - 1) / fillChunk
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), chunks) {
		wg.Go(func() {
			for k := int(next.Add(1) - 1); k < chunks; k = int(next.Add(1) - 1) {
				fill(rand.New(rand.NewPCG(seed, uint64(k))), x[k*fillChunk:min(len(x), (k+1)*fillChunk)])
			}
		})
	}
	wg.Wait()
}

// fillNormal sets x to scale·N(0, 1) draws (fillRand's).
func fillNormal(r *rand.Rand, x []float32, scale float64) {
	fillRand(r, x, func(r *rand.Rand, chunk []float32) { normalChunk(r, chunk, scale) })
}

// fillUniform sets x to scale·U[-1, 1) draws (fillRand's).
func fillUniform(r *rand.Rand, x []float32, scale float32) {
	fillRand(r, x, func(r *rand.Rand, chunk []float32) { uniformChunk(r, chunk, scale) })
}

// fillNormalBF16 sets x to the bfloat16 roundings of scale·N(0, 1) draws
// (fillRand's).
func fillNormalBF16(r *rand.Rand, x []uint16, scale float64) {
	fillRand(r, x, func(r *rand.Rand, chunk []uint16) { normalBF16Chunk(r, chunk, scale) })
}

// fillUniformBF16 sets x to the bfloat16 roundings of scale·U[-1, 1)
// draws (fillRand's).
func fillUniformBF16(r *rand.Rand, x []uint16, scale float32) {
	fillRand(r, x, func(r *rand.Rand, chunk []uint16) { uniformBF16Chunk(r, chunk, scale) })
}

// The fills' loops are functions of their own: written in the closures,
// which the compiler inlines into the fills' callers, the calls to
// r.Float32 and kernels.BF16 were not inlined, and a uniform value cost a
// third more than in a serial loop.

func normalChunk(r *rand.Rand, x []float32, scale float64) {
	for i := range x {
		x[i] = float32(scale * r.NormFloat64())
	}
}

func uniformChunk(r *rand.Rand, x []float32, scale float32) {
	for i := range x {
		x[i] = scale * (2*r.Float32() - 1)
	}
}

func normalBF16Chunk(r *rand.Rand, x []uint16, scale float64) {
	for i := range x {
		x[i] = kernels.BF16(float32(scale * r.NormFloat64()))
	}
}

func uniformBF16Chunk(r *rand.Rand, x []uint16, scale float32) {
	for i := range x {
		x[i] = kernels.BF16(scale * (2*r.Float32() - 1))
	}
}

// randnPar returns n values of scale·N(0, 1): randn's distribution,
// drawn by fillRand.
func randnPar(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	fillNormal(r, x, scale)
	return x
}

// TestFillRand: fillRand over 2.5 chunks gives, on however many cores,
// chunk k the draws of rand.New(rand.NewPCG(seed, k)) in order, seed the
// next Uint64 of r, and leaves r just past that Uint64.
func TestFillRand(t *testing.T) {
	r, serial := rand.New(rand.NewPCG(28, 1)), rand.New(rand.NewPCG(28, 1))
	x := make([]float32, 5*fillChunk/2)
	fillNormal(r, x, 3)
	seed := serial.Uint64()
	for k := 0; k*fillChunk < len(x); k++ {
		cr := rand.New(rand.NewPCG(seed, uint64(k)))
		for i := k * fillChunk; i < min(len(x), (k+1)*fillChunk); i++ {
			if want := float32(3 * cr.NormFloat64()); x[i] != want {
				t.Fatalf("x[%d] = %g, want %g (chunk %d's generator)", i, x[i], want, k)
			}
		}
	}
	if got, want := r.Uint64(), serial.Uint64(); got != want {
		t.Errorf("r's next Uint64 %#x after the fill, want %#x", got, want)
	}
}
