package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/ref"
)

// widenBF16 returns x's values rounded to bfloat16 as ToBF16 rounds, widened
// back to float32, and the rounding itself.
func widenBF16(x []float32) ([]float32, []uint16) {
	b := make([]uint16, len(x))
	kernels.ToBF16(b, x)
	w := make([]float32, len(x))
	kernels.FromBF16(w, b)
	return w, b
}

// loraDAOnRounded is the oracle of LoRABackwardManyInputBF16's DA products
// on kernels/ref: per projection g = douts[i]·bs[i] (unscaled, as the plan
// computes it) rounded to bfloat16, then das[i] += scale·gᵀ·x, with d's
// values as given (the caller widens the roundings x, and where rounded
// the douts and Bs, into them).
func loraDAOnRounded(c loraManyCase, d loraManyData) {
	r := ref.New()
	for i, out := range c.outs {
		g := make([]float32, c.n*c.r)
		r.Matmul(g, d.douts[i], d.bs[i], c.n, c.r, out, false, false, 0)
		g, _ = widenBF16(g)
		da := make([]float32, c.r*c.in)
		r.Matmul(da, g, d.x, c.r, c.in, c.n, true, false, 0)
		r.AXPY(d.das[i], da, c.scale, c.r*c.in)
	}
}

// daIndex reports whether an output named by loraManyData.outputs is a DA
// product, and whose.
func daIndex(name string) (int, bool) {
	var j int
	if _, err := fmt.Sscanf(name, "dA %d", &j); err != nil {
		return 0, false
	}
	return j, true
}

// cloneAll copies each of xs.
func cloneAll(xs [][]float32) [][]float32 {
	out := make([][]float32, len(xs))
	for i, x := range xs {
		out[i] = slices.Clone(x)
	}
	return out
}

// daTol bounds a DA product of projection j against loraDAOnRounded: 1e-6
// (float32 sums in another order; the fake cuBLAS and the shim sum in
// float64), or, where g came from a TF32 product (float32 douts, K =
// Outs[j] ≥ cuda.TF32MinK), tf32Tol (measured 2.1e-3: TF32's error on g,
// which its rounding keeps).
func daTol(c loraManyCase, j int, roundedDout bool) float64 {
	if !roundedDout && c.outs[j] >= cuda.TF32MinK {
		return tf32Tol
	}
	return 1e-6
}

// TestLoRABackwardManyInputBF16: cuda.Backend's LoRABackwardManyInputBF16
// (kernels.NormInputRounder) in PrecisionBF16 on the emulated device, on
// each case of loraManyCases, with the douts as float32 and as their
// bfloat16 roundings, x given as its rounding: the DA products within
// daTol of loraDAOnRounded (kernels/ref on the rounded x, g rounded; with
// rounded douts, on the rounded douts and Bs), the other outputs within
// tf32Tol of kernels/ref's products one projection at a time (on the
// rounded douts, us and Bs where the douts are rounded), and all within
// the bf16 precision's kernels.BF16ComputeTol of LoRABackwardMany (or
// LoRABackwardManyRounded) on the float32 x (the figures are logged:
// the DA products ≤ 8.7e-3 from those, the others the same bits). The launches: one
// f32_to_bf16 rounding g (+2k rounding u and B with rounded douts), k
// axpy (+k scale with dx); 2k + 1 GEMMs (+1 with dx), the DA product
// (the 2k+1st) on bfloat16 operands, the first 2k exactly where the douts
// are rounded. In PrecisionF32 RoundsNormInput is false and the method
// panics saying why; douts and doutBFs both given, or neither, panics.
func TestLoRABackwardManyInputBF16(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	b, drv, blas := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if !b.RoundsNormInput() {
		t.Fatal("PrecisionBF16: RoundsNormInput is false")
	}
	mem := emulatedMem{t: t, b: b}
	for ci, c := range loraManyCases {
		for _, roundedDout := range []bool{false, true} {
			what := fmt.Sprintf("%s, douts rounded %v", c.description, roundedDout)
			got := newLoRAManyData(c, uint64(ci), mem.f32)
			old := newLoRAManyData(c, uint64(ci), mem.f32)
			var doutBFs [][]uint16
			want := newLoRAManyData(c, uint64(ci), hostF32)
			if roundedDout {
				doutBFs, want = roundedLoRAInputs(c, got, mem.bf16)
			}
			wx, xr := widenBF16(got.x)
			want.x = wx
			xBF := mem.bf16(len(xr))
			copy(xBF, xr)
			wantDA := want
			wantDA.das = cloneAll(want.das)
			loraDAOnRounded(c, wantDA)
			loraOneAtATime(ref.New(), c, want, make([]float32, c.n*c.r))
			douts := got.douts
			if roundedDout {
				old := old
				b.LoRABackwardManyRounded(old.dx, doutBFs, old.us, old.x, old.as, old.bs, old.das, old.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
				douts = nil
			} else {
				b.LoRABackwardMany(old.dx, old.douts, old.us, old.x, old.as, old.bs, old.das, old.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
			}
			l0, g0 := len(drv.Launches()), len(blas.Gemms())
			b.LoRABackwardManyInputBF16(got.dx, douts, doutBFs, got.us, xBF, got.as, got.bs, got.das, got.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
			b.Synchronize()
			names, gs := got.outputs()
			_, ws := want.outputs()
			_, os := old.outputs()
			for i := range names {
				w, tol := ws[i], tf32Tol
				if j, ok := daIndex(names[i]); ok {
					w, tol = wantDA.das[j], daTol(c, j, roundedDout)
				}
				near(t, what+": "+names[i]+" against ref on the rounded operands", gs[i], w, tol)
				near(t, what+": "+names[i]+" against the float32 x's", gs[i], os[i], kernels.BF16ComputeTol)
				t.Logf("%s: %s: %.2g from ref on the rounded operands, %.2g from the float32 x's", what, names[i], relErr(gs[i], w), relErr(gs[i], os[i]))
			}
			k := len(c.outs)
			wantG, wantK := 2*k+1, map[string]int{"axpy": k, "f32_to_bf16": 1}
			if roundedDout {
				wantK["f32_to_bf16"] += 2 * k
			}
			if !c.noDX {
				wantG++
				wantK["scale"] = k
			}
			wantKernels(t, what, drv, l0, wantK)
			gems, types := gemmsSince(t, what, blas, g0, wantG)
			for i := range gems {
				wantBF := i == 2*k || i < 2*k && roundedDout
				if bf := types[i].A == cuda.R16BF && types[i].B == cuda.R16BF; bf != wantBF {
					t.Errorf("%s: GEMM %d on bfloat16 operands: %v, want %v", what, i, bf, wantBF)
				}
			}
		}
	}

	c := loraManyCases[0]
	d := newLoRAManyData(c, 0, mem.f32)
	xBF := mem.bf16(len(d.x))
	doutBFs, _ := roundedLoRAInputs(c, d, mem.bf16)
	wantPanic(t, "douts and doutBFs", "exactly one of douts and doutBFs", func() {
		b.LoRABackwardManyInputBF16(d.dx, d.douts, doutBFs, d.us, xBF, d.as, d.bs, d.das, d.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
	})
	wantPanic(t, "neither", "exactly one of douts and doutBFs", func() {
		b.LoRABackwardManyInputBF16(d.dx, nil, nil, d.us, xBF, d.as, d.bs, d.das, d.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
	})

	f, _, _ := emulatedBackend(t)
	defer f.Close()
	if f.RoundsNormInput() {
		t.Error("PrecisionF32: RoundsNormInput is true")
	}
	fm := emulatedMem{t: t, b: f}
	fd := newLoRAManyData(c, 0, fm.f32)
	fx := fm.bf16(len(fd.x))
	wantPanic(t, "PrecisionF32", "multiply bfloat16 operands only in", func() {
		f.LoRABackwardManyInputBF16(fd.dx, fd.douts, nil, fd.us, fx, fd.as, fd.bs, fd.das, fd.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
	})
}

// TestRMSNormForwardBF16: cuda.Backend's RMSNormForwardBF16
// (kernels.NormInputRounder: rmsnorm_forward_bf16 with a null out) on the
// emulated device, in both precisions, writes the bits of
// RMSNormForwardRounded's outBF and rstd, one rmsnorm_forward_bf16 launch,
// and leaves the rest of the bfloat16 buffer alone.
func TestRMSNormForwardBF16(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	for _, p := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		rmsNormForwardBF16In(t, p)
	}
}

// rmsNormForwardBF16In is TestRMSNormForwardBF16 in precision p.
func rmsNormForwardBF16In(t *testing.T, p kernels.Precision) {
	const N, C = 5, 67
	b, drv, _ := emulatedBackendIn(t, p)
	defer b.Close()
	mem := emulatedMem{t: t, b: b, r: rand.New(rand.NewPCG(28, 67))}
	f32, bf := mem.randF32, mem.bf16
	inp, weight := f32(N*C), f32(C)
	out, wantR, wantBF := f32(N*C), f32(N), bf(N*C)
	b.RMSNormForwardRounded(out, wantR, wantBF, inp, weight, N, C, 1e-6)
	rstd, outBF := f32(N), bf(N*C+1)
	outBF[N*C] = 0x1234
	l0 := len(drv.Launches())
	b.RMSNormForwardBF16(outBF[:N*C], rstd, inp, weight, N, C, 1e-6)
	b.Synchronize()
	if ls := drv.Launches()[l0:]; len(ls) != 1 || ls[0].Kernel != "rmsnorm_forward_bf16" {
		t.Errorf("%v: launched %v, want one rmsnorm_forward_bf16", p, ls)
	}
	if !sameBits(rstd, wantR) || !slices.Equal(outBF[:N*C], wantBF) {
		t.Errorf("%v: rstd or outBF differs from RMSNormForwardRounded's", p)
	}
	if outBF[N*C] != 0x1234 {
		t.Errorf("%v: the value past outBF was overwritten", p)
	}
}

// TestLoRABackwardManyInputBF16Shim runs planLoRABackwardManyInputBF16 on
// the CPU shim (f32_to_bf16 from linear.cu, axpy and scale from
// elementwise.cu, the GEMMs from the definition), with the douts as
// float32 and as their roundings, on loraManyCases and a case of odd
// segments: the DA products within daTol of loraDAOnRounded, the other
// outputs within tf32Tol of kernels/ref's products one projection at a
// time (on the rounded douts, us and Bs where the douts are rounded).
func TestLoRABackwardManyInputBF16Shim(t *testing.T) {
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	for ci, c := range append(loraManyCases, loraManyCase{outs: []int{9, 7}, set: true, n: 129, in: 24, r: 3, scale: 0.7, description: "odd segments"}) {
		for _, roundedDout := range []bool{false, true} {
			what := fmt.Sprintf("%s, douts rounded %v", c.description, roundedDout)
			got := newLoRAManyData(c, uint64(ci), hostF32)
			want := newLoRAManyData(c, uint64(ci), hostF32)
			var pd, pdBF []any
			var ub, bb any
			k := len(c.outs)
			if roundedDout {
				var doutBFs [][]uint16
				doutBFs, want = roundedLoRAInputs(c, got, hostBF16)
				for _, d := range doutBFs {
					pdBF = append(pdBF, d)
				}
				bbN := 0
				for _, out := range c.outs {
					bbN += 2 * ((out*c.r + 1) / 2)
				}
				ub, bb = make([]uint16, k*2*((c.n*c.r+1)/2)), make([]uint16, bbN)
			} else {
				pd = hostAnys(got.douts)
			}
			var xBF []uint16
			want.x, xBF = widenBF16(got.x)
			wantDA := want
			wantDA.das = cloneAll(want.das)
			loraDAOnRounded(c, wantDA)
			loraOneAtATime(ref.New(), c, want, hostF32(c.n*c.r))
			var dx any
			if got.dx != nil {
				dx = got.dx
			}
			h.runX(cuda.PlanLoRAManyInputBF16(hostView, hostViewBF16, dx, pd, pdBF, hostAnys(got.us), xBF, hostAnys(got.as), hostAnys(got.bs), hostAnys(got.das), hostAnys(got.dbs),
				hostF32(c.n*k*c.r), hostF32(k*c.r*c.in), hostF32(k*c.r*c.in), ub, bb, make([]uint16, c.n*k*c.r), c.n, c.in, c.r, c.outs, c.scale, c.set))
			names, gs := got.outputs()
			_, ws := want.outputs()
			for i := range names {
				w, tol := ws[i], tf32Tol
				if j, ok := daIndex(names[i]); ok {
					w, tol = wantDA.das[j], daTol(c, j, roundedDout)
				}
				near(t, what+": "+names[i], gs[i], w, tol)
			}
		}
	}
}

// TestNormInputBF16OnHardware runs the 7B step's backward recompute of the
// normed input and the LoRA backward of q, k, v (float32 douts) and of
// gate, up (their bfloat16 roundings) that reads it (8 × 1024 tokens, C
// 3584, rank 16, the bf16 precision), old and new: RMSNormForward writing
// h as float32 and RMSNormForwardBF16 writing only its rounding (the bits
// of RMSNormForwardRounded's rounding and rstd); LoRABackwardMany and
// LoRABackwardManyRounded on the float32 h, and LoRABackwardManyInputBF16
// on its rounding: within kernels.BF16ComputeTol of each other (logged),
// each timed (log HBF16) with the bytes of h each moves. With
// -test.short (the memcheck step) it runs the small cases of
// TestLoRABackwardManyInputBF16 and a small norm only. Not run on a GPU
// yet.
func TestNormInputBF16OnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	alloc, allocBF := backendAllocs(t, b)
	const N7, C7 = 8 * 1024, 3584
	cases := []loraManyCase{
		{outs: []int{3584, 512, 512}, set: true, description: "q, k, v"},
		{outs: []int{18944, 18944}, set: true, description: "gate, up"},
	}
	for i := range cases {
		cases[i].n, cases[i].in, cases[i].r, cases[i].scale = N7, C7, 16, 2
	}
	N, C := N7, C7
	if testing.Short() {
		cases, N, C = loraManyCases, 5, 67
	}
	r := rand.New(rand.NewPCG(28, 3584))
	fill := func(n int) []float32 {
		x := alloc(n)
		fillNormal(r, x, 1)
		return x
	}
	x2, weight := fill(N*C), fill(C)
	h, rstd, rstdBF, hBF, wantBF := alloc(N*C), alloc(N), alloc(N), allocBF(N*C), allocBF(N*C)
	runF32 := func() { b.RMSNormForward(h, rstd, x2, weight, N, C, 1e-6) }
	runBF := func() { b.RMSNormForwardBF16(hBF, rstdBF, x2, weight, N, C, 1e-6) }
	runF32()
	runBF()
	b.RMSNormForwardRounded(h, rstd, wantBF, x2, weight, N, C, 1e-6)
	b.Synchronize()
	if !sameBits(rstdBF, rstd) || !slices.Equal(hBF, wantBF) {
		t.Errorf("RMSNormForwardBF16: rstd or the rounding differs from RMSNormForwardRounded's")
	}
	if !testing.Short() {
		tf, tb := timePerCall(b, runF32), timePerCall(b, runBF)
		t.Logf("HBF16 the normed input's recompute (N %d C %d): RMSNormForward %.0f µs (h written as float32: %.2f GB), RMSNormForwardBF16 %.0f µs (as bfloat16: %.2f GB): %.2fx",
			N, C, us(tf), 4*float64(N*C)/1e9, us(tb), 2*float64(N*C)/1e9, tf.Seconds()/tb.Seconds())
	}
	for ci, c := range cases {
		rounded := ci%2 == 1 // gate, up: on their douts' roundings, as the model gives them
		old := newLoRAManyData(c, uint64(ci), alloc)
		got := newLoRAManyData(c, uint64(ci), alloc)
		xBF := allocBF(c.n * c.in)
		kernels.ToBF16(xBF, got.x)
		var doutBFs [][]uint16
		douts := got.douts
		if rounded {
			doutBFs, _ = roundedLoRAInputs(c, got, allocBF)
			douts = nil
		}
		runOld := func() {
			if rounded {
				b.LoRABackwardManyRounded(old.dx, doutBFs, old.us, old.x, old.as, old.bs, old.das, old.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
				return
			}
			b.LoRABackwardMany(old.dx, old.douts, old.us, old.x, old.as, old.bs, old.das, old.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
		}
		runNew := func() {
			b.LoRABackwardManyInputBF16(got.dx, douts, doutBFs, got.us, xBF, got.as, got.bs, got.das, got.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
		}
		runOld()
		runNew()
		b.Synchronize()
		names, gs := got.outputs()
		_, os := old.outputs()
		for i := range names {
			t.Logf("%s: %s: %.3g from the float32 h's", c.description, names[i], relErr(gs[i], os[i]))
			near(t, c.description+": "+names[i], gs[i], os[i], kernels.BF16ComputeTol)
		}
		if testing.Short() {
			continue
		}
		to, tn := timePerCall(b, runOld), timePerCall(b, runNew)
		kR := len(c.outs) * c.r
		t.Logf("HBF16 %s DA products (N %d In %d k·R %d): on the float32 h %.0f µs (h read: %.2f GB), on its rounding %.0f µs (%.2f GB, g rounded: %.3f GB): %.2fx",
			c.description, c.n, c.in, kR, us(to), 4*float64(c.n*c.in)/1e9, us(tn), 2*float64(c.n*c.in)/1e9, 6*float64(c.n*kR)/1e9, to.Seconds()/tn.Seconds())
	}
}
