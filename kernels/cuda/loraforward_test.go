package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/ref"
)

// loraFwdCase is one LoRAForwardMany call: k = len(outs) projections of
// an input [n, in] at rank r.
type loraFwdCase struct {
	outs        []int
	n, in, r    int
	scale       float32
	description string
}

// loraFwdCases: an odd token count, k = 3, 2 and 1 with outputs of
// different sizes, the scale 0.7 (no power of two), and a rank of
// cuda.TF32MinK, where the bf16 precision's rank-r products run on TF32
// (the x product never does: LinearForward's cublasSgemm).
var loraFwdCases = []loraFwdCase{
	{outs: []int{129, 5, 7}, n: 131, in: 24, r: 3, scale: 0.7, description: "q, k, v"},
	{outs: []int{9, 33}, n: 131, in: 24, r: 3, scale: 0.7, description: "gate, up"},
	{outs: []int{17}, n: 5, in: 24, r: 3, scale: 0.7, description: "one projection"},
	{outs: []int{4, 6}, n: 3, in: 5, r: cuda.TF32MinK, scale: 2, description: "rank ≥ TF32MinK"},
}

// loraFwdData is a case's inputs and outputs.
type loraFwdData struct {
	x                []float32
	outs, us, as, bs [][]float32
}

// newLoRAFwdData fills a case's inputs from seed; the outputs start as
// NaN (their contents are ignored).
func newLoRAFwdData(c loraFwdCase, seed uint64, alloc func(n int) []float32) loraFwdData {
	r := rand.New(rand.NewPCG(seed, 31))
	fill := func(n int) []float32 {
		x := alloc(n)
		fillNormal(r, x, 1)
		return x
	}
	nan := func(n int) []float32 {
		x := alloc(n)
		for i := range x {
			x[i] = float32(math.NaN())
		}
		return x
	}
	d := loraFwdData{x: fill(c.n * c.in)}
	for _, out := range c.outs {
		d.as = append(d.as, fill(c.r*c.in))
		d.bs = append(d.bs, fill(out*c.r))
		d.outs = append(d.outs, nan(c.n*out))
		d.us = append(d.us, nan(c.n*c.r))
	}
	return d
}

// loraFwdOneAtATime is what train/model's Linear.loraSet runs for each
// projection, LinearForward, Scale and Matmul (beta 0): the oracle on
// kernels/ref, and the old path on cuda.Backend.
func loraFwdOneAtATime(b kernels.Backend, c loraFwdCase, d loraFwdData) {
	for i, out := range c.outs {
		b.LinearForward(d.us[i], d.x, d.as[i], nil, c.n, c.in, c.r)
		b.Scale(d.us[i], d.us[i], c.scale, c.n*c.r)
		b.Matmul(d.outs[i], d.us[i], d.bs[i], c.n, out, c.r, false, true, 0)
	}
}

// outputs lists a case's outputs with their names.
func (d loraFwdData) outputs() (names []string, xs [][]float32) {
	for i := range d.outs {
		names = append(names, fmt.Sprintf("u %d", i), fmt.Sprintf("out %d", i))
		xs = append(xs, d.us[i], d.outs[i])
	}
	return names, xs
}

// TestLoRAForwardMany: cuda.Backend's LoRAForwardMany on the emulated
// device, in both precisions, against kernels/ref one projection at a
// time (loraFwdOneAtATime) within 2e-6 (tf32Tol where the bf16
// precision's rank-r products run on TF32), and against the backend's own
// ops one projection at a time (the model's path before it) bit for bit:
// every step keeps its rounding, and the fake cuBLAS sums each value of
// the wider x product as it sums the narrow one (on a GPU cuBLAS may not;
// TestLoRAForwardManyOnHardware measures it). The figures are logged. The
// launches: k copy_f32 and k scale_cols, k + 1 GEMMs, TF32 exactly where
// Backend.Matmul takes it for the rank-r products (K ≥ TF32MinK in the
// bf16 precision) and never for the x product.
func TestLoRAForwardMany(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	for _, p := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		b, drv, blas := emulatedBackendIn(t, p)
		alloc, freeAll := freeingF32(t, b)
		for ci, c := range loraFwdCases {
			what := fmt.Sprintf("%v, %s", p, c.description)
			got := newLoRAFwdData(c, uint64(ci), alloc)
			old := newLoRAFwdData(c, uint64(ci), alloc)
			want := newLoRAFwdData(c, uint64(ci), hostF32)
			loraFwdOneAtATime(ref.New(), c, want)
			loraFwdOneAtATime(b, c, old)
			l0, g0 := len(drv.Launches()), len(blas.Gemms())
			b.LoRAForwardMany(got.outs, got.us, got.x, got.as, got.bs, c.n, c.in, c.r, c.outs, c.scale)
			b.Synchronize()
			names, gs := got.outputs()
			_, ws := want.outputs()
			_, os := old.outputs()
			tol := 2e-6
			if p == kernels.PrecisionBF16 && c.r >= cuda.TF32MinK {
				tol = tf32Tol
			}
			for i := range names {
				near(t, what+": "+names[i]+" against ref", gs[i], ws[i], tol)
				if !slices.Equal(gs[i], os[i]) {
					t.Errorf("%s: %s: %.2g from the backend one projection at a time, want the same bits", what, names[i], relErr(gs[i], os[i]))
				}
				t.Logf("%s: %s: %.2g from ref (one at a time: %.2g)", what, names[i], relErr(gs[i], ws[i]), relErr(os[i], ws[i]))
			}
			k := len(c.outs)
			wantK := map[string]int{"copy_f32": k, "scale_cols": k}
			wantKernels(t, what, drv, l0, wantK)
			gems, types := gemmsSince(t, what, blas, g0, k+1)
			for i, g := range gems {
				tf32 := types[i].Compute == cuda.Compute32FFastTF32
				want := p == kernels.PrecisionBF16 && i > 0 && g.K >= cuda.TF32MinK
				if tf32 != want {
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

// TestLoRAForwardManyErrors: the checks refuse mismatched lists, a size
// below 1 and a buffer short of its shape, as kernels.NeedLoRAForwardMany
// says, before anything runs.
func TestLoRAForwardManyErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	b, drv, _ := emulatedBackendIn(t, kernels.PrecisionF32)
	defer b.Close()
	c := loraFwdCases[1]
	d := newLoRAFwdData(c, 1, hostF32)
	for _, tc := range []struct {
		what string
		call func()
	}{
		{"one B missing", func() { b.LoRAForwardMany(d.outs, d.us, d.x, d.as, d.bs[:1], c.n, c.in, c.r, c.outs, 1) }},
		{"no projection", func() { b.LoRAForwardMany(nil, nil, d.x, nil, nil, c.n, c.in, c.r, nil, 1) }},
		{"rank 0", func() { b.LoRAForwardMany(d.outs, d.us, d.x, d.as, d.bs, c.n, c.in, 0, c.outs, 1) }},
		{"an output size 0", func() { b.LoRAForwardMany(d.outs, d.us, d.x, d.as, d.bs, c.n, c.in, c.r, []int{c.outs[0], 0}, 1) }},
		{"a short u", func() {
			us := [][]float32{d.us[0], d.us[1][:c.n*c.r-1]}
			b.LoRAForwardMany(d.outs, us, d.x, d.as, d.bs, c.n, c.in, c.r, c.outs, 1)
		}},
	} {
		l0 := len(drv.Launches())
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.what)
				}
			}()
			tc.call()
		}()
		if n := len(drv.Launches()) - l0; n != 0 {
			t.Errorf("%s: %d launches", tc.what, n)
		}
	}
}

// TestLoRAForwardManyShim runs planLoRAForwardMany on the CPU shim
// (copy_f32 from misc.cu, scale_cols from elementwise.cu, the GEMMs from
// the definition, TF32 rounded as the fake cuBLAS does) in both
// precisions: within 2e-6 of kernels/ref one projection at a time
// (tf32Tol where the bf16 precision's rank-r products run on TF32), and
// scale_cols bit for bit the scale of the shim's own x product's columns.
func TestLoRAForwardManyShim(t *testing.T) {
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	for _, p := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		for ci, c := range loraFwdCases {
			what := fmt.Sprintf("%v, %s", p, c.description)
			got := newLoRAFwdData(c, uint64(ci), hostF32)
			want := newLoRAFwdData(c, uint64(ci), hostF32)
			loraFwdOneAtATime(ref.New(), c, want)
			k := len(c.outs)
			uc := hostF32(c.n * k * c.r)
			h.runX(cuda.PlanLoRAForwardMany(hostView, hostAnys(got.outs), hostAnys(got.us), got.x, hostAnys(got.as), hostAnys(got.bs), uc, hostF32(k*c.r*c.in),
				p, c.n, c.in, c.r, c.outs, c.scale))
			names, gs := got.outputs()
			_, ws := want.outputs()
			tol := 2e-6
			if p == kernels.PrecisionBF16 && c.r >= cuda.TF32MinK {
				tol = tf32Tol
			}
			for i := range names {
				near(t, what+": "+names[i], gs[i], ws[i], tol)
			}
			for i := range k {
				for n := range c.n {
					for j := range c.r {
						if u, w := got.us[i][n*c.r+j], c.scale*uc[n*k*c.r+i*c.r+j]; u != w {
							t.Fatalf("%s: u %d [%d, %d] = %g, want scale·uc = %g", what, i, n, j, u, w)
						}
					}
				}
			}
		}
	}
}
