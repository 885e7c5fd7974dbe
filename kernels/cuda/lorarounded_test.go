package cuda_test

import (
	"fmt"
	"math/rand/v2"
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

// wantPanic fails t unless f panics with a value whose text holds want:
// the rounded-precision methods refuse a call they cannot serve (the wrong
// precision, both or neither of a float32 operand and its rounding) by
// panicking with the reason. what names the call in the failure.
func wantPanic(t *testing.T, what, want string, f func()) {
	t.Helper()
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), want) {
			t.Errorf("%s: %v, want a panic saying %q", what, p, want)
		}
	}()
	f()
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
	mem := emulatedMem{t: t, b: b}
	for ci, c := range loraManyCases {
		got := newLoRAManyData(c, uint64(ci), mem.f32)
		f32 := newLoRAManyData(c, uint64(ci), mem.f32)
		doutBFs, want := roundedLoRAInputs(c, got, mem.bf16)
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
		wantKernels(t, c.description, drv, l0, wantK)
		gems, types := gemmsSince(t, c.description, blas, g0, wantG)
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
	fm := emulatedMem{t: t, b: f}
	d := newLoRAManyData(c, 0, fm.f32)
	var doutBFs [][]uint16
	for _, dout := range d.douts {
		doutBFs = append(doutBFs, fm.bf16(len(dout)))
	}
	wantPanic(t, "LoRABackwardManyRounded in PrecisionF32", "multiply bfloat16 operands only in", func() {
		f.LoRABackwardManyRounded(d.dx, doutBFs, d.us, d.x, d.as, d.bs, d.das, d.dbs, c.n, c.in, c.r, c.outs, c.scale, c.set)
	})
}

// TestLoRABackwardManyBF16Shim runs planLoRABackwardManyBF16 on the CPU
// shim (f32_to_bf16 from linear.cu, axpy and scale from elementwise.cu,
// the GEMMs from the definition) with segments of odd lengths (n·r and
// out·r odd: the scratch's segments start on even offsets): within
// tf32Tol of kernels/ref's products one projection at a time on the
// rounded douts, us and Bs.
func TestLoRABackwardManyBF16Shim(t *testing.T) {
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	for ci, c := range append(loraManyCases, loraManyCase{outs: []int{9, 7}, set: true, n: 129, in: 24, r: 3, scale: 0.7, description: "odd segments"}) {
		got := newLoRAManyData(c, uint64(ci), hostF32)
		doutBFs, want := roundedLoRAInputs(c, got, hostBF16)
		loraOneAtATime(ref.New(), c, want, hostF32(c.n*c.r))
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
		h.runX(cuda.PlanLoRABackwardManyBF16(hostView, hostViewBF16, dx, dbf, hostAnys(got.us), got.x, hostAnys(got.as), hostAnys(got.bs), hostAnys(got.das), hostAnys(got.dbs),
			hostF32(c.n*k*c.r), hostF32(k*c.r*c.in), hostF32(k*c.r*c.in), ub, bb, c.n, c.in, c.r, c.outs, c.scale, c.set))
		names, gs := got.outputs()
		_, ws := want.outputs()
		for i := range names {
			near(t, c.description+": "+names[i], gs[i], ws[i], tf32Tol)
		}
	}
}

// matmulBF16Case is one MatmulBF16 call: which operands come as bfloat16,
// the transposes and beta.
type matmulBF16Case struct {
	aBF, bBF       bool
	transA, transB bool
	beta           float32
}

func (c matmulBF16Case) String() string {
	return fmt.Sprintf("aBF %v bBF %v transA %v transB %v beta %g", c.aBF, c.bBF, c.transA, c.transB, c.beta)
}

// matmulBF16Cases: every way of giving the operands, both transposes of
// each (u = x·Aᵀ and DA += gᵀ·x among them), beta 0 and 1.
func matmulBF16Cases() []matmulBF16Case {
	var cs []matmulBF16Case
	for i := range 16 {
		for _, beta := range []float32{0, 1} {
			cs = append(cs, matmulBF16Case{i&1 != 0, i&2 != 0, i&4 != 0, i&8 != 0, beta})
		}
	}
	return cs
}

// matmulBF16Want is the oracle: kernels/ref's Matmul on the float32
// values of the operands' roundings.
func matmulBF16Want(c, a, b []float32, M, N, K int, tc matmulBF16Case) []float32 {
	widen := func(x []float32) []float32 {
		out := make([]float32, len(x))
		for i, v := range x {
			out[i] = kernels.F32(kernels.BF16(v))
		}
		return out
	}
	want := append([]float32(nil), c...)
	ref.New().Matmul(want, widen(a), widen(b), M, N, K, tc.transA, tc.transB, tc.beta)
	return want
}

// TestMatmulBF16: cuda.Backend's MatmulBF16 (kernels.LoRAInputRounder) in
// PrecisionBF16 on the emulated device, on every matmulBF16Cases case (M,
// N, K odd, K ≥ cuda.TF32MinK so that a float32 Matmul would take TF32):
// within 1e-6 of kernels/ref's Matmul on the rounded operands (the fake
// cuBLAS sums in float64), one f32_to_bf16 launch a float32 operand and
// one GEMM on bfloat16 operands. In PrecisionF32 RoundsLoRAInput is false
// and the method panics saying why; both operands of a pair given, or
// neither, panics.
func TestMatmulBF16(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	b, drv, blas := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if !b.RoundsLoRAInput() {
		t.Fatal("PrecisionBF16: RoundsLoRAInput is false")
	}
	const M, N, K = 7, 5, 131
	mem := emulatedMem{t: t, b: b, r: rand.New(rand.NewPCG(28, 131))}
	f32, bf := mem.randF32, mem.bf16Of
	for _, tc := range matmulBF16Cases() {
		a, bm, c := f32(M*K), f32(K*N), f32(M*N)
		want := matmulBF16Want(c, a, bm, M, N, K, tc)
		var aBF, bBF []uint16
		wantK := 2
		if tc.aBF {
			aBF, a = bf(a), nil
			wantK--
		}
		if tc.bBF {
			bBF, bm = bf(bm), nil
			wantK--
		}
		l0, g0 := len(drv.Launches()), len(blas.Gemms())
		b.MatmulBF16(c, a, aBF, bm, bBF, M, N, K, tc.transA, tc.transB, tc.beta)
		b.Synchronize()
		near(t, tc.String(), c, want, 1e-6)
		ls := drv.Launches()[l0:]
		if len(ls) != wantK || (wantK > 0 && ls[0].Kernel != "f32_to_bf16") {
			t.Errorf("%v: launched %v, want %d f32_to_bf16", tc, ls, wantK)
		}
		gs, ts := blas.Gemms()[g0:], blas.GemmTypes()[g0:]
		if len(gs) != 1 || ts[0].A != cuda.R16BF || ts[0].B != cuda.R16BF {
			t.Errorf("%v: GEMMs %v of types %v, want one on bfloat16 operands", tc, gs, ts)
		}
	}
	x, y, z := f32(M*K), f32(K*N), f32(M*N)
	wantPanic(t, "a and aBF", "exactly one of a and aBF", func() { b.MatmulBF16(z, x, bf(x), y, nil, M, N, K, false, false, 0) })
	wantPanic(t, "neither b nor bBF", "exactly one of a and aBF", func() { b.MatmulBF16(z, x, nil, nil, nil, M, N, K, false, false, 0) })

	f, _, _ := emulatedBackend(t)
	defer f.Close()
	if f.RoundsLoRAInput() {
		t.Error("PrecisionF32: RoundsLoRAInput is true")
	}
	fa, _ := f.AllocF32(M * K)
	fb, _ := f.AllocF32(K * N)
	fc, _ := f.AllocF32(M * N)
	wantPanic(t, "PrecisionF32", "multiply bfloat16 operands only in", func() { f.MatmulBF16(fc, fa, nil, fb, nil, M, N, K, false, false, 0) })
}

// TestMatmulBF16Shim runs planMatmulBF16 on the CPU shim (f32_to_bf16 from
// linear.cu, the GEMM from the definition) on every matmulBF16Cases case:
// within 1e-6 of kernels/ref's Matmul on the rounded operands.
func TestMatmulBF16Shim(t *testing.T) {
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	const M, N, K = 7, 5, 33
	r := rand.New(rand.NewPCG(28, 33))
	for _, tc := range matmulBF16Cases() {
		a, b, c := randn(r, M*K), randn(r, K*N), randn(r, M*N)
		want := matmulBF16Want(c, a, b, M, N, K, tc)
		var pa, paBF, pb, pbBF any = a, nil, b, nil
		if tc.aBF {
			x := make([]uint16, M*K)
			kernels.ToBF16(x, a)
			pa, paBF = nil, x
		}
		if tc.bBF {
			x := make([]uint16, K*N)
			kernels.ToBF16(x, b)
			pb, pbBF = nil, x
		}
		h.runX(cuda.PlanMatmulBF16(c, pa, paBF, pb, pbBF, make([]uint16, M*K), make([]uint16, K*N), M, N, K, tc.transA, tc.transB, tc.beta, false))
		near(t, tc.String(), c, want, 1e-6)
	}
}
