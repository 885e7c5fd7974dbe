package cuda_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/ref"
)

// roundedLoRAInputs returns d's douts as their bfloat16 roundings (in
// memory from allocBF) and, for the oracle, a copy of d (from host memory)
// whose douts, us and bs hold the float32 values of their roundings: what
// LoRABackwardManyRounded's bf16 products multiply.
func roundedLoRAInputs(c loraManyCase, d loraManyData, allocBF func(n int) []uint16) (doutBFs [][]uint16, oracle loraManyData) {
	widen := func(x []float32) []float32 {
		b := make([]uint16, len(x))
		kernels.ToBF16(b, x)
		w := make([]float32, len(x))
		kernels.FromBF16(w, b)
		return w
	}
	clone := func(x []float32) []float32 { return append([]float32(nil), x...) }
	clones := func(xs [][]float32, f func([]float32) []float32) [][]float32 {
		out := make([][]float32, len(xs))
		for i, x := range xs {
			out[i] = f(x)
		}
		return out
	}
	oracle = loraManyData{x: clone(d.x), douts: clones(d.douts, widen), us: clones(d.us, widen), as: clones(d.as, clone),
		bs: clones(d.bs, widen), das: clones(d.das, clone), dbs: clones(d.dbs, clone)}
	if d.dx != nil {
		oracle.dx = clone(d.dx)
	}
	for _, dout := range d.douts {
		b := allocBF(len(dout))
		kernels.ToBF16(b, dout)
		doutBFs = append(doutBFs, b)
	}
	return doutBFs, oracle
}

// TestLoRABackwardManyRounded: cuda.Backend's LoRABackwardManyRounded in
// PrecisionBF16 on the emulated device, on each case of loraManyCases with
// its douts rounded to bfloat16: within tf32Tol of kernels/ref's products
// one projection at a time on the rounded douts, us and Bs (its DA
// products are TF32, as LoRABackwardMany's), and within the bf16
// precision's kernels.BF16ComputeTol of LoRABackwardMany on the float32
// douts (the figures are logged). The launches: 2k f32_to_bf16 (u and B
// a projection), k axpy (+k scale with dx); 2k + 1 GEMMs (+1 with dx), the
// first 2k on bfloat16 operands. In PrecisionF32 RoundsLoRADout is false
// and the method panics saying why.
func TestLoRABackwardManyRounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	b, drv, blas := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if !b.RoundsLoRADout() {
		t.Fatal("PrecisionBF16: RoundsLoRADout is false")
	}
	alloc := func(n int) []float32 {
		x, err := b.AllocF32(n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	allocBF := func(n int) []uint16 {
		x, err := b.AllocBF16(n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for ci, c := range loraManyCases {
		got := newLoRAManyData(c, uint64(ci), alloc)
		f32 := newLoRAManyData(c, uint64(ci), alloc)
		doutBFs, want := roundedLoRAInputs(c, got, allocBF)
		loraOneAtATime(ref.New(), c, want, make([]float32, c.n*c.r))
		b.LoRABackwardMany(f32.dx, f32.douts, f32.us, f32.x, f32.as, f32.bs, f32.das, f32.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
		l0, g0 := len(drv.Launches()), len(blas.Gemms())
		b.LoRABackwardManyRounded(got.dx, doutBFs, got.us, got.x, got.as, got.bs, got.das, got.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
		b.Synchronize()
		names, gs := got.outputs()
		_, ws := want.outputs()
		_, fs := f32.outputs()
		for i := range names {
			near(t, c.description+": "+names[i]+" against ref on the rounded operands", gs[i], ws[i], tf32Tol)
			near(t, c.description+": "+names[i]+" against LoRABackwardMany on float32 douts", gs[i], fs[i], kernels.BF16ComputeTol)
			t.Logf("%s: %s: %.2g from ref on the rounded operands, %.2g from LoRABackwardMany on float32 douts",
				c.description, names[i], relErr(gs[i], ws[i]), relErr(gs[i], fs[i]))
		}
		k := len(c.outs)
		wantG, wantK := 2*k+1, map[string]int{"axpy": k, "f32_to_bf16": 2 * k}
		if !c.noDX {
			wantG++
			wantK["scale"] = k
		}
		gotK := map[string]int{}
		for _, l := range drv.Launches()[l0:] {
			gotK[l.Kernel]++
		}
		if fmt.Sprint(gotK) != fmt.Sprint(wantK) {
			t.Errorf("%s: launched %v, want %v", c.description, gotK, wantK)
		}
		gems, types := blas.Gemms()[g0:], blas.GemmTypes()[g0:]
		if len(gems) != wantG {
			t.Fatalf("%s: %d GEMMs, want %d", c.description, len(gems), wantG)
		}
		for i := range gems {
			if bf := types[i].A == cuda.R16BF && types[i].B == cuda.R16BF; bf != (i < 2*k) {
				t.Errorf("%s: GEMM %d on bfloat16 operands: %v, want %v", c.description, i, bf, i < 2*k)
			}
		}
	}

	f, _, _ := emulatedBackend(t)
	defer f.Close()
	if f.RoundsLoRADout() {
		t.Error("PrecisionF32: RoundsLoRADout is true")
	}
	c := loraManyCases[0]
	d := newLoRAManyData(c, 0, func(n int) []float32 {
		x, err := f.AllocF32(n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	})
	var doutBFs [][]uint16
	for _, dout := range d.douts {
		x, err := f.AllocBF16(len(dout))
		if err != nil {
			t.Fatal(err)
		}
		doutBFs = append(doutBFs, x)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "multiply bfloat16 operands only in") {
			t.Errorf("LoRABackwardManyRounded in PrecisionF32: %v, want a panic saying why", p)
		}
	}()
	f.LoRABackwardManyRounded(d.dx, doutBFs, d.us, d.x, d.as, d.bs, d.das, d.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
}

// TestLoRABackwardManyBF16Shim runs planLoRABackwardManyBF16 on the CPU
// shim (f32_to_bf16 from linear.cu, axpy and scale from elementwise.cu,
// the GEMMs from the definition) with segments of odd lengths (n·r and
// out·r odd: the scratch's segments start on even offsets): within
// tf32Tol of kernels/ref's products one projection at a time on the
// rounded douts, us and Bs.
func TestLoRABackwardManyBF16Shim(t *testing.T) {
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	view := func(b any, off, n int) any { return b.([]float32)[off : off+n] }
	viewBF := func(b any, off, n int) any {
		if off%2 != 0 {
			panic(fmt.Sprintf("bfloat16 view at odd offset %d", off))
		}
		return b.([]uint16)[off : off+n]
	}
	anys := func(xs [][]float32) []any {
		out := make([]any, len(xs))
		for i, x := range xs {
			out[i] = x
		}
		return out
	}
	host := func(n int) []float32 { return make([]float32, n) }
	for ci, c := range append(loraManyCases, loraManyCase{outs: []int{9, 7}, set: true, n: 129, in: 24, r: 3, scale: 0.7, description: "odd segments"}) {
		got := newLoRAManyData(c, uint64(ci), host)
		doutBFs, want := roundedLoRAInputs(c, got, func(n int) []uint16 { return make([]uint16, n) })
		loraOneAtATime(ref.New(), c, want, host(c.n*c.r))
		k := len(c.outs)
		bbN := 0
		for _, out := range c.outs {
			bbN += 2 * ((out*c.r + 1) / 2)
		}
		var dx any
		if got.dx != nil {
			dx = got.dx
		}
		dbf := make([]any, k)
		for i := range doutBFs {
			dbf[i] = doutBFs[i]
		}
		ub, bb := make([]uint16, k*2*((c.n*c.r+1)/2)), make([]uint16, bbN)
		h.runX(cuda.PlanLoRABackwardManyBF16(view, viewBF, dx, dbf, anys(got.us), got.x, anys(got.as), anys(got.bs), anys(got.das), anys(got.dbs),
			host(c.n*k*c.r), host(k*c.r*c.in), host(k*c.r*c.in), ub, bb, c.n, c.in, c.r, c.outs, c.scale, c.set))
		names, gs := got.outputs()
		_, ws := want.outputs()
		for i := range names {
			near(t, c.description+": "+names[i], gs[i], ws[i], tf32Tol)
		}
	}
}
