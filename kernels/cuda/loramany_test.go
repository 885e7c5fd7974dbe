package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/ref"
)

// loraManyCase is one LoRABackwardMany call: k = len(outs) projections of
// an input [n, in] at rank r, dx set, accumulated, or not wanted (noDX).
type loraManyCase struct {
	outs        []int
	set, noDX   bool
	n, in, r    int
	scale       float32
	description string
}

// loraManyCases: n = 130 tokens and a projection of 129 outputs give the
// bf16 precision's TF32 products (K ≥ cuda.TF32MinK) for DB, DA and the
// first g; the others' g and every dx product (K = r) stay float32; the
// scale 0.7 is no power of two, so its moved multiplication rounds
// differently.
var loraManyCases = []loraManyCase{
	{outs: []int{129, 5, 7}, set: true, description: "q, k, v: dx set"},
	{outs: []int{9, 129}, description: "gate, up: dx accumulated"},
	{outs: []int{129}, set: true, description: "one projection"},
	{outs: []int{7, 129, 5}, noDX: true, description: "no dx"},
}

func init() {
	for i := range loraManyCases {
		c := &loraManyCases[i]
		c.n, c.in, c.r, c.scale = 130, 24, 3, 0.7
	}
}

// loraManyData is a case's inputs and outputs (dx, das, dbs start random:
// the accumulated ones add to them).
type loraManyData struct {
	dx, x                       []float32
	douts, us, as, bs, das, dbs [][]float32
}

func newLoRAManyData(c loraManyCase, seed uint64, alloc func(n int) []float32) loraManyData {
	r := rand.New(rand.NewPCG(seed, 28))
	fill := func(n int) []float32 {
		x := alloc(n)
		fillNormal(r, x, 1)
		return x
	}
	d := loraManyData{x: fill(c.n * c.in)}
	if !c.noDX {
		d.dx = fill(c.n * c.in)
	}
	for _, out := range c.outs {
		d.douts = append(d.douts, fill(c.n*out))
		d.us = append(d.us, fill(c.n*c.r))
		d.as = append(d.as, fill(c.r*c.in))
		d.bs = append(d.bs, fill(out*c.r))
		d.das = append(d.das, fill(c.r*c.in))
		d.dbs = append(d.dbs, fill(out*c.r))
	}
	return d
}

// loraOneAtATime is what train/model's Linear.backward runs for the
// projections one after another, each its own Matmul products and Scale,
// the first setting dx when set: the oracle on kernels/ref, and the old
// path on cuda.Backend.
func loraOneAtATime(b kernels.Backend, c loraManyCase, d loraManyData, g []float32) {
	for i, out := range c.outs {
		b.Matmul(d.dbs[i], d.douts[i], d.us[i], out, c.r, c.n, true, false, 1)
		b.Matmul(g, d.douts[i], d.bs[i], c.n, c.r, out, false, false, 0)
		b.Scale(g, g, c.scale, c.n*c.r)
		b.Matmul(d.das[i], g, d.x, c.r, c.in, c.n, true, false, 1)
		if d.dx != nil {
			var beta float32 = 1
			if c.set && i == 0 {
				beta = 0
			}
			b.Matmul(d.dx, g, d.as[i], c.n, c.in, c.r, false, false, beta)
		}
	}
}

// outputs lists a case's outputs with their names.
func (d loraManyData) outputs() (names []string, xs [][]float32) {
	if d.dx != nil {
		names, xs = append(names, "dx"), append(xs, d.dx)
	}
	for i := range d.das {
		names = append(names, fmt.Sprintf("dA %d", i), fmt.Sprintf("dB %d", i))
		xs = append(xs, d.das[i], d.dbs[i])
	}
	return names, xs
}

// freeingF32 returns an allocator of b's float32 memory, failing t where an
// allocation fails, and freeAll, which frees what it allocated: for a test
// that frees its buffers before it closes b itself.
func freeingF32(t *testing.T, b *cuda.Backend) (alloc func(n int) []float32, freeAll func()) {
	var allocs [][]float32
	alloc = func(n int) []float32 {
		t.Helper()
		x := allocOrFail(t, b.AllocF32, n)
		allocs = append(allocs, x)
		return x
	}
	freeAll = func() {
		for _, x := range allocs {
			b.FreeF32(x)
		}
		allocs = nil
	}
	return alloc, freeAll
}

// wantKernels fails t unless the kernels drv launched from its l0th launch
// on are, counted by name, want: the many-projection methods promise a
// fixed set of launches for k projections, whatever their order.
func wantKernels(t *testing.T, what string, drv *cudafake.Driver, l0 int, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, l := range drv.Launches()[l0:] {
		got[l.Kernel]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: launched %v, want %v", what, got, want)
	}
}

// gemmsSince returns the GEMMs blas ran from its g0th on, with their types,
// and stops t unless there are n: the caller then checks each one's types
// by its place in the plan.
func gemmsSince(t *testing.T, what string, blas *cudafake.BLAS, g0, n int) ([]cuda.Gemm, []cuda.GemmTypes) {
	t.Helper()
	gems, types := blas.Gemms()[g0:], blas.GemmTypes()[g0:]
	if len(gems) != n {
		t.Fatalf("%s: %d GEMMs, want %d", what, len(gems), n)
	}
	return gems, types
}

// TestLoRABackwardMany: cuda.Backend's LoRABackwardMany on the emulated
// device, in both precisions, against kernels/ref's products one
// projection at a time (loraOneAtATime) and against the backend's own
// Matmuls one at a time (the model's path before LoRABackwardMany), both
// within 2e-6 in the exact precision (the moved scale and dx's one
// K = k·r sum: float32 reorderings; measured ≤ 1.6e-7) and tf32Tol in the
// bf16 one (TF32 products; there the moved scale also changes what TF32
// rounds, g instead of scale·g: measured ≤ 1.1e-3 from ref, as the
// one-at-a-time path's own ≤ 1.1e-3, and ≤ 1.1e-3 between the two; the
// figures are logged). The launches: 2k + 1
// GEMMs (+1 with dx), k axpy (+k scale with dx), no other kernel; TF32
// exactly where Backend.Matmul would take it (K ≥ TF32MinK in the bf16
// precision).
func TestLoRABackwardMany(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	for _, p := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		b, drv, blas := emulatedBackendIn(t, p)
		alloc, freeAll := freeingF32(t, b)
		for ci, c := range loraManyCases {
			what := fmt.Sprintf("%v, %s", p, c.description)
			got := newLoRAManyData(c, uint64(ci), alloc)
			old := newLoRAManyData(c, uint64(ci), alloc)
			want := newLoRAManyData(c, uint64(ci), hostF32)
			loraOneAtATime(ref.New(), c, want, make([]float32, c.n*c.r))
			loraOneAtATime(b, c, old, alloc(c.n*c.r))
			l0, g0 := len(drv.Launches()), len(blas.Gemms())
			b.LoRABackwardMany(got.dx, got.douts, got.us, got.x, got.as, got.bs, got.das, got.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
			b.Synchronize()
			names, gs := got.outputs()
			_, ws := want.outputs()
			_, os := old.outputs()
			tol := 2e-6
			if p == kernels.PrecisionBF16 {
				tol = tf32Tol
			}
			for i := range names {
				near(t, what+": "+names[i]+" against ref", gs[i], ws[i], tol)
				near(t, what+": "+names[i]+" against the backend one projection at a time", gs[i], os[i], tol)
				t.Logf("%s: %s: %.2g from ref (one at a time: %.2g), %.2g from one at a time", what, names[i], relErr(gs[i], ws[i]), relErr(os[i], ws[i]), relErr(gs[i], os[i]))
			}
			k := len(c.outs)
			wantG, wantK := 2*k+1, map[string]int{"axpy": k}
			if !c.noDX {
				wantG++
				wantK["scale"] = k
			}
			wantKernels(t, what, drv, l0, wantK)
			gems, types := gemmsSince(t, what, blas, g0, wantG)
			for i, g := range gems {
				tf32 := types[i].Compute == cuda.Compute32FFastTF32
				if want := p == kernels.PrecisionBF16 && g.K >= cuda.TF32MinK; tf32 != want {
					t.Errorf("%s: GEMM %d (K %d) TF32 %v, want %v", what, i, g.K, tf32, want)
				}
			}
		}
		freeAll()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoRABackwardManyShim runs planLoRABackwardMany on the CPU shim
// (axpy and scale from elementwise.cu, the GEMMs from the definition,
// TF32 rounded as the fake cuBLAS does) in both precisions: within 2e-6
// of kernels/ref's products one projection at a time in the exact
// precision, tf32Tol in the bf16 one.
func TestLoRABackwardManyShim(t *testing.T) {
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	for _, p := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		for ci, c := range loraManyCases {
			what := fmt.Sprintf("%v, %s", p, c.description)
			got := newLoRAManyData(c, uint64(ci), hostF32)
			want := newLoRAManyData(c, uint64(ci), hostF32)
			loraOneAtATime(ref.New(), c, want, hostF32(c.n*c.r))
			k := len(c.outs)
			var dx any
			if got.dx != nil {
				dx = got.dx
			}
			h.runX(cuda.PlanLoRABackwardMany(hostView, dx, hostAnys(got.douts), hostAnys(got.us), got.x, hostAnys(got.as), hostAnys(got.bs), hostAnys(got.das), hostAnys(got.dbs),
				hostF32(c.n*k*c.r), hostF32(k*c.r*c.in), hostF32(k*c.r*c.in), p, c.n, c.in, c.r, c.outs, c.scale, c.set))
			names, gs := got.outputs()
			_, ws := want.outputs()
			tol := 2e-6
			if p == kernels.PrecisionBF16 {
				tol = tf32Tol
			}
			for i := range names {
				near(t, what+": "+names[i], gs[i], ws[i], tol)
			}
			if !slices.ContainsFunc(gs[0], func(v float32) bool { return v != 0 }) {
				t.Errorf("%s: %s is all zero", what, names[0])
			}
		}
	}
}
