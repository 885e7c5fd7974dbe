package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/ref"
)

// widenBF returns the float32 values of x's bfloat16 roundings.
func widenBF(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = kernels.F32(kernels.BF16(v))
	}
	return out
}

// sameBF16 fails unless got and want hold the same bfloat16 bits.
func sameBF16(t *testing.T, what string, got, want []uint16) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s [%d]: %#04x, want %#04x (%g, %g)", what, i, got[i], want[i], kernels.F32(got[i]), kernels.F32(want[i]))
		}
	}
}

// TestDinpRounder: cuda.Backend's kernels.DinpRounder in PrecisionBF16 on
// the emulated device. LinearBackwardBF16To (beta 0 and 1) writes the
// bfloat16 rounding of LinearBackwardBF16's float32 result on a zero dinp
// (beta 0) or on dinp's old values widened (beta 1), bit for bit: one
// f32_to_bf16 launch and one GEMM with bfloat16 A, B and C; MatmulBF16To
// on every matmulBF16Cases case the rounding of MatmulBF16 on c's old
// values widened, bit for bit (the fake cuBLAS rounds its float32 result
// once on store, as cuBLAS's epilogue does); the gated units'
// backward_set_bf16 given dout as bfloat16 (doutBF) write the bits they
// write on the float32 dout of those values. With GEMMCublasLt picked the
// bfloat16-C product stays on cublasGemmEx. In PrecisionF32
// RoundsLinearDinp is false and the methods panic saying why.
func TestDinpRounder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	b, drv, blas := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if !b.RoundsLinearDinp() {
		t.Fatal("PrecisionBF16: RoundsLinearDinp is false")
	}
	mem := emulatedMem{t: t, b: b, r: rand.New(rand.NewPCG(28, 19))}
	f32, bf := mem.randF32, mem.bf16Of
	toBF := func(x []float32) []uint16 {
		y := make([]uint16, len(x))
		kernels.ToBF16(y, x)
		return y
	}

	const N, C, OC = 5, 37, 40
	w := bf(f32(OC * C))
	dout := f32(N * OC)
	for _, beta := range []float32{0, 1} {
		old := f32(N * C)
		got := bf(old)
		want := f32(N * C)
		if beta == 0 {
			clear(want)
		} else {
			copy(want, widenBF(old))
		}
		b.LinearBackwardBF16(want, dout, w, N, C, OC)
		l0, g0 := len(drv.Launches()), len(blas.Gemms())
		b.LinearBackwardBF16To(got, dout, w, N, C, OC, beta)
		b.Synchronize()
		sameBF16(t, fmt.Sprintf("LinearBackwardBF16To beta %g", beta), got, toBF(want))
		if ls := drv.Launches()[l0:]; len(ls) != 1 || ls[0].Kernel != "f32_to_bf16" {
			t.Errorf("LinearBackwardBF16To beta %g: launched %v, want one f32_to_bf16", beta, ls)
		}
		ts := blas.GemmTypes()[g0:]
		if len(ts) != 1 || ts[0].A != cuda.R16BF || ts[0].B != cuda.R16BF || ts[0].C != cuda.R16BF {
			t.Errorf("LinearBackwardBF16To beta %g: GEMM types %v, want one with bfloat16 A, B and C", beta, ts)
		}
		// On dout's rounding given (kernels.NormDoutRounder's copy): the
		// same bits, the GEMM alone.
		got2 := bf(old)
		l0, g0 = len(drv.Launches()), len(blas.Gemms())
		b.LinearBackwardBF16ToRounded(got2, bf(dout), w, N, C, OC, beta)
		b.Synchronize()
		sameBF16(t, fmt.Sprintf("LinearBackwardBF16ToRounded beta %g", beta), got2, toBF(want))
		if ls := drv.Launches()[l0:]; len(ls) != 0 {
			t.Errorf("LinearBackwardBF16ToRounded beta %g: launched %v, want the GEMM alone", beta, ls)
		}
		if ts := blas.GemmTypes()[g0:]; len(ts) != 1 || ts[0].A != cuda.R16BF || ts[0].C != cuda.R16BF {
			t.Errorf("LinearBackwardBF16ToRounded beta %g: GEMM types %v, want one with bfloat16 A, B and C", beta, ts)
		}
	}

	const M, MN, K = 7, 5, 131
	for _, tc := range matmulBF16Cases() {
		a, bm, c := f32(M*K), f32(K*MN), f32(M*MN)
		cBF := bf(c)
		want := f32(M * MN)
		copy(want, widenBF(c))
		b.MatmulBF16(want, a, nil, bm, nil, M, MN, K, tc.transA, tc.transB, tc.beta)
		var aBF, bBF []uint16
		if tc.aBF {
			aBF, a = bf(a), nil
		}
		if tc.bBF {
			bBF, bm = bf(bm), nil
		}
		g0 := len(blas.Gemms())
		b.MatmulBF16To(cBF, a, aBF, bm, bBF, M, MN, K, tc.transA, tc.transB, tc.beta)
		b.Synchronize()
		sameBF16(t, "MatmulBF16To "+tc.String(), cBF, toBF(want))
		if ts := blas.GemmTypes()[g0:]; len(ts) != 1 || ts[0].C != cuda.R16BF {
			t.Errorf("MatmulBF16To %v: GEMM types %v, want one with a bfloat16 C", tc, ts)
		}
	}

	n := 2*N*C + 1
	gate, up := f32(n), f32(n)
	doutF := f32(n)
	doutF[3] = float32(math.NaN())
	doutBF := bf(doutF)
	copy(doutF, widenBF(doutF))
	for _, g := range []struct {
		name    string
		rounded func(dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dout []float32, doutBF []uint16, gate, up []float32, n int)
	}{
		{"SwiGLU", b.SwiGLUBackwardSetRounded},
		{"GeGLU", b.GeGLUBackwardSetRounded},
	} {
		wg, wu := f32(n), f32(n)
		wgb, wub, wab := bf(wg), bf(wg), bf(wg)
		g.rounded(wg, wu, nil, wab, wgb, wub, doutF, nil, gate, up, n)
		gg, gu := f32(n), f32(n)
		ggb, gub, gab := bf(gg), bf(gg), bf(gg)
		g.rounded(gg, gu, nil, gab, ggb, gub, nil, doutBF, gate, up, n)
		b.Synchronize()
		for i := range n {
			if math.Float32bits(gg[i]) != math.Float32bits(wg[i]) || math.Float32bits(gu[i]) != math.Float32bits(wu[i]) {
				t.Fatalf("%s [%d], dout as bfloat16: dgate, dup %g %g; on its float32 values %g %g", g.name, i, gg[i], gu[i], wg[i], wu[i])
			}
		}
		sameBF16(t, g.name+" dgate's copy, dout as bfloat16", ggb, wgb)
		sameBF16(t, g.name+" dup's copy, dout as bfloat16", gub, wub)
		sameBF16(t, g.name+" act's copy, dout as bfloat16", gab, wab)
		if !math.IsNaN(float64(gg[3])) {
			t.Fatalf("%s: no NaN where dout has one", g.name)
		}
	}

	wantPanic(t, "dout and doutBF", "exactly one of dout and doutBF", func() {
		b.SwiGLUBackwardSetRounded(nil, nil, nil, nil, bf(gate), bf(gate), doutF, doutBF, gate, up, n)
	})

	f, _, _ := emulatedBackend(t)
	defer f.Close()
	if f.RoundsLinearDinp() {
		t.Error("PrecisionF32: RoundsLinearDinp is true")
	}
	fd, _ := f.AllocF32(N * OC)
	fi, _ := f.AllocBF16(N * C)
	fw, _ := f.AllocBF16(OC * C)
	wantPanic(t, "LinearBackwardBF16To in PrecisionF32", "writes a bfloat16 dinp only in", func() { f.LinearBackwardBF16To(fi, fd, fw, N, C, OC, 0) })
	wantPanic(t, "MatmulBF16To in PrecisionF32", "multiply bfloat16 operands only in", func() { f.MatmulBF16To(fi, fd, nil, nil, fw, N, C, OC, false, false, 0) })
}

// TestDinpRounderThroughLt: with GEMMCublasLt picked, LinearBackwardBF16To
// and LinearBackwardBF16ToRounded (the base products on the weight) store
// their bfloat16 C through cublasLtMatmul (C and D layouts of
// CUDA_R_16BF), while MatmulBF16To (a LoRA product, not a linear layer's)
// stays on cublasGemmEx; all with the bits they have on cublasGemmEx
// alone (the fake's first algorithm sums as GemmEx does).
func TestDinpRounderThroughLt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	bl, blasLt, lt := emulatedBackendLt(t)
	defer bl.Close()
	be, _, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer be.Close()
	const N, C, OC, R = 3, 33, 24, 4
	var got, want [][]uint16
	for _, x := range []*cuda.Backend{bl, be} {
		mem := emulatedMem{t: t, b: x, r: rand.New(rand.NewPCG(28, 23))} // the same operands on both
		f32, bf := mem.randF32, mem.randBF16
		dinp, w, dout := bf(N*C), bf(OC*C), f32(N*OC)
		g, a := f32(N*R), f32(R*C)
		x.MatmulBF16To(dinp, g, nil, a, nil, N, C, R, false, false, 0)
		x.LinearBackwardBF16To(dinp, dout, w, N, C, OC, 1)
		doutBF := bf(N * OC)
		x.LinearBackwardBF16ToRounded(dinp, doutBF, w, N, C, OC, 1)
		x.Synchronize()
		if x == bl {
			got = append(got, dinp)
		} else {
			want = append(want, dinp)
		}
	}
	sameBF16(t, "through cuBLASLt", got[0], want[0])
	if lt.Matmuls() != 2 {
		t.Errorf("%d cublasLtMatmul calls, want the two base products", lt.Matmuls())
	}
	if ts := blasLt.GemmTypes(); len(ts) != 1 || ts[0].C != cuda.R16BF {
		t.Errorf("GemmEx ran %v with cuBLASLt picked, want the LoRA product with a bfloat16 C", ts)
	}
}

// TestDinpRounderShim runs planLinearBackwardBF16To and planMatmulBF16
// with a bfloat16 C on the CPU shim (f32_to_bf16 from linear.cu, the GEMMs
// from the definition, C rounded on store), and the gated units'
// backward_set_bf16 kernels with dout_bf: LinearBackwardBF16To's result
// is the rounding of kernels/ref's LinearBackward on the rounded dout and
// dinp's old values widened (beta 1), and MatmulBF16To's the rounding of
// ref's Matmul on the rounded operands, each within one bfloat16 ulp (ref
// sums in float32, the definition in float64, so the two may round to
// either side); the kernels with dout_bf give the bits they give on the
// widened float32 dout.
func TestDinpRounderShim(t *testing.T) {
	h := newShimHarness(t, buildShim(t, "kernels_main"))
	r := rand.New(rand.NewPCG(28, 29))
	const N, C, OC = 5, 9, 33
	w := make([]uint16, OC*C)
	kernels.ToBF16(w, randn(r, OC*C))
	wf := make([]float32, OC*C)
	kernels.FromBF16(wf, w)
	dout := randn(r, N*OC)
	for _, beta := range []float32{0, 1} {
		old := randn(r, N*C)
		got := make([]uint16, N*C)
		kernels.ToBF16(got, old)
		want := make([]float32, N*C)
		if beta != 0 {
			copy(want, widenBF(old))
		}
		refLinearBackward(want, widenBF(dout), wf, N, C, OC)
		h.runX(cuda.PlanLinearBackwardBF16To(got, dout, w, make([]uint16, N*OC), N, C, OC, beta))
		within1ULP(t, fmt.Sprintf("LinearBackwardBF16To beta %g", beta), got, want)
	}
	const M, MN, K = 7, 5, 33
	for _, tc := range matmulBF16Cases() {
		a, bm, c := randn(r, M*K), randn(r, K*MN), randn(r, M*MN)
		want := matmulBF16Want(widenBF(c), a, bm, M, MN, K, tc)
		cBF := make([]uint16, M*MN)
		kernels.ToBF16(cBF, c)
		h.runX(cuda.PlanMatmulBF16(cBF, a, nil, bm, nil, make([]uint16, M*K), make([]uint16, K*MN), M, MN, K, tc.transA, tc.transB, tc.beta, true))
		within1ULP(t, "MatmulBF16To "+tc.String(), cBF, want)
	}
	n := 2*N*C + 1
	var nilF32 []float32 // null pointers
	var nilU16 []uint16
	gate, up, d := randn(r, n), randn(r, n), randn(r, n)
	dBF := make([]uint16, n)
	kernels.ToBF16(dBF, d)
	dw := widenBF(d)
	for _, k := range []string{"swiglu_backward_set_bf16", "geglu_backward_set_bf16"} {
		wg, wu, wgb, wub := make([]float32, n), make([]float32, n), make([]uint16, n), make([]uint16, n)
		h.runPlan(cuda.PlanFlat(k, n, wg, wu, nilF32, nilU16, wgb, wub, dw, nilU16, gate, up, n))
		gg, gu, ggb, gub := make([]float32, n), make([]float32, n), make([]uint16, n), make([]uint16, n)
		h.runPlan(cuda.PlanFlat(k, n, gg, gu, nilF32, nilU16, ggb, gub, nilF32, dBF, gate, up, n))
		for i := range n {
			if math.Float32bits(gg[i]) != math.Float32bits(wg[i]) || math.Float32bits(gu[i]) != math.Float32bits(wu[i]) {
				t.Fatalf("%s [%d], dout_bf: %g %g; on the widened dout %g %g", k, i, gg[i], gu[i], wg[i], wu[i])
			}
		}
		sameBF16(t, k+" dgate_bf, dout_bf", ggb, wgb)
		sameBF16(t, k+" dup_bf, dout_bf", gub, wub)
	}
}

// refLinearBackward accumulates dinp [N,C] += dout [N,OC]·w [OC,C] as
// kernels/ref's LinearBackward does.
func refLinearBackward(dinp, dout, w []float32, N, C, OC int) {
	ref.New().LinearBackward(dinp, nil, nil, dout, nil, w, N, C, OC)
}

// within1ULP fails unless every got[i] is want[i]'s bfloat16 rounding or
// a neighbour of it of the same sign (one bfloat16 ulp: the float32 sums
// of the oracle and the float64 ones of the definition may round to
// either side).
func within1ULP(t *testing.T, what string, got []uint16, want []float32) {
	t.Helper()
	for i := range want {
		wb := kernels.BF16(want[i])
		if d := int(got[i]) - int(wb); d < -1 || d > 1 {
			t.Fatalf("%s [%d]: %#04x (%g), want the rounding %#04x of %g", what, i, got[i], kernels.F32(got[i]), wb, want[i])
		}
	}
}
