package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels/ref"
)

// embeddingCase is an EmbeddingBackward whose sums' bits depend on their
// order: N tokens over the ids few (repeated many times each), with bad
// seven of them out of [0, V) (Ops adds nothing for them; Backend, as ref,
// refuses them on the host), rows of values spread over six orders of magnitude;
// want is kernels/ref's result, each table element summed in ref's order
// (n ascending) from table0.
type embeddingCase struct {
	N, C, V      int
	ids          []int32
	dout, table0 []float32
	want         []float32
}

func newEmbeddingCase(seed uint64, N, C, V int, few []int32, bad bool) embeddingCase {
	r := rand.New(rand.NewPCG(28, seed))
	e := embeddingCase{N: N, C: C, V: V, ids: make([]int32, N), dout: make([]float32, N*C), table0: make([]float32, V*C)}
	for i := range e.ids {
		e.ids[i] = few[r.IntN(len(few))]
	}
	for k, i := range []int{5, 77, 300, 301, 420, 598, 599} {
		if bad {
			e.ids[i*N/600] = []int32{-1, int32(V), 1 << 30}[k%3]
		}
	}
	for i := range e.dout {
		e.dout[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(6)-3)))
	}
	for i := range e.table0 {
		e.table0[i] = float32(r.NormFloat64())
	}
	e.want = slices.Clone(e.table0)
	inRange, zero := make([]int32, N), slices.Clone(e.dout) // ref refuses ids out of range: a row of zeros instead
	for n, id := range e.ids {
		inRange[n] = id
		if id < 0 || int(id) >= V {
			inRange[n] = 0
			clear(zero[n*C : (n+1)*C])
		}
	}
	ref.New().EmbeddingBackward(e.want, zero, inRange, N, C, V)
	return e
}

// check fails t unless got is want bit for bit.
func (e embeddingCase) check(t *testing.T, what string, got []float32) {
	t.Helper()
	for i := range e.want {
		if math.Float32bits(got[i]) != math.Float32bits(e.want[i]) {
			t.Fatalf("%s: dtable[%d] (row %d) = %g [%#08x], ref %g [%#08x]: not ref's sum order",
				what, i, i/e.C, got[i], math.Float32bits(got[i]), e.want[i], math.Float32bits(e.want[i]))
		}
	}
}

// embeddingBackwardDeterministic runs EmbeddingBackward's plan on the CPU
// shim on an embeddingCase (600 tokens over 3 ids, 7 out of range), once with the blocks
// in order (h) and in three scrambled block orders
// (HONE_CUDA_SHIM_BLOCK_SEED: the kernel's blocks run as a GPU may run
// them): every run must give kernels/ref's result bit for bit. The
// scatter-add with atomicAdd this replaced gave other bits in the first
// scrambled order (checked when it was replaced).
func embeddingBackwardDeterministic(t *testing.T, h shimHarness) {
	e := newEmbeddingCase(600, 600, 40, 5, []int32{0, 3, 4}, true)
	for run, env := range []string{"", "HONE_CUDA_SHIM_BLOCK_SEED=1", "HONE_CUDA_SHIM_BLOCK_SEED=2", "HONE_CUDA_SHIM_BLOCK_SEED=3"} {
		hh := h
		if env != "" {
			hh = newShimHarnessEnv(t, h.p.bin, env)
		}
		got := slices.Clone(e.table0)
		shimBackend{h: hh}.EmbeddingBackward(got, e.dout, e.ids, e.N, e.C, e.V)
		e.check(t, fmt.Sprintf("run %d (%q)", run, env), got)
	}
}

// TestBackendEmbeddingBackwardRepeats runs Backend.EmbeddingBackward on
// the emulated device twice on an embeddingCase (300 tokens over 2 ids,
// C = 300 so that the column chunks take two blocks): both runs are
// kernels/ref's result bit for bit; the work array is one scratch slot,
// kept between calls.
func TestBackendEmbeddingBackwardRepeats(t *testing.T) {
	t.Parallel()
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	e := newEmbeddingCase(300, 300, 300, 12, []int32{2, 9}, false)
	dout, err := b.AllocF32(len(e.dout))
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(dout)
	copy(dout, e.dout)
	dtable, err := b.AllocF32(len(e.table0))
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(dtable)
	var scratch int
	for run := range 2 {
		copy(dtable, e.table0)
		b.EmbeddingBackward(dtable, dout, e.ids, e.N, e.C, e.V)
		e.check(t, fmt.Sprintf("run %d", run), dtable)
		n, _ := b.Scratch()
		if run > 0 && n != scratch {
			t.Errorf("run %d: %d scratch buffers, after run 0 %d", run, n, scratch)
		}
		scratch = n
	}
}
