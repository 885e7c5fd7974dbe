package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
)

// TestGateUpRounder: cuda.Backend's kernels.GateUpRounder in
// PrecisionBF16 on the emulated device, each op against the ops the model
// runs where gate and up are float32, bit for bit:
//
//   - LinearForwardBF16RoundedTo (add nil, and add on one output of two):
//     the bfloat16 rounding of LinearForwardBF16Rounded's float32 outputs
//     (on the old values widened where it adds), GEMMs alone (no launch),
//     each with bfloat16 A, B and C;
//   - LoRAForwardManyTo on every loraFwdCases case: us LoRAForwardMany's
//     bits, and each output MatmulBF16To's of us and B (beta 0); k copy_f32,
//     k scale_cols and 2k f32_to_bf16 launches, k + 1 GEMMs, the last k
//     with a bfloat16 C;
//   - GatedLoRAForwardBF16 and GatedLoRABackwardBF16 (SwiGLU and GeGLU,
//     dact float32 and bfloat16): the bits of GatedLoRAForwardRounded and
//     GatedLoRABackwardRounded for gate and up widened, one _bf16in launch
//     each.
//
// HoldsGateUpBF16 holds for ranks 1 to GatedLoRABackwardMaxRank only; in
// PrecisionF32 it is false and the ops panic saying why.
func TestGateUpRounder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	b, drv, blas := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	for R, want := range map[int]bool{0: false, 1: true, cuda.GatedLoRABackwardMaxRank: true, cuda.GatedLoRABackwardMaxRank + 1: false} {
		if got := b.HoldsGateUpBF16(R); got != want {
			t.Errorf("HoldsGateUpBF16(%d) = %v, want %v", R, got, want)
		}
	}
	mem := emulatedMem{t: t, b: b, r: rand.New(rand.NewPCG(28, 20))}
	f32, bf := mem.randF32, mem.bf16Of
	toBF := func(x []float32) []uint16 {
		y := make([]uint16, len(x))
		kernels.ToBF16(y, x)
		return y
	}

	const N, C = 5, 37
	OCs := []int{40, 9}
	inp := bf(f32(N * C))
	ws := [][]uint16{bf(f32(OCs[0] * C)), bf(f32(OCs[1] * C))}
	for _, add := range [][]bool{nil, {false, true}} {
		var wants [][]float32
		var gots [][]uint16
		for _, oc := range OCs {
			old := f32(N * oc)
			gots = append(gots, bf(old))
			w := mem.f32(N * oc)
			copy(w, widenBF(old))
			wants = append(wants, w)
		}
		b.LinearForwardBF16Rounded(wants, inp, ws, nil, N, C, OCs, add)
		l0, g0 := len(drv.Launches()), len(blas.Gemms())
		b.LinearForwardBF16RoundedTo(gots, inp, ws, N, C, OCs, add)
		b.Synchronize()
		for i := range OCs {
			sameBF16(t, fmt.Sprintf("LinearForwardBF16RoundedTo add %v, output %d", add, i), gots[i], toBF(wants[i]))
		}
		if ls := drv.Launches()[l0:]; len(ls) != 0 {
			t.Errorf("LinearForwardBF16RoundedTo add %v: launched %v, want the GEMMs alone", add, ls)
		}
		_, types := gemmsSince(t, "LinearForwardBF16RoundedTo", blas, g0, len(OCs))
		for i, ty := range types {
			if ty.A != cuda.R16BF || ty.B != cuda.R16BF || ty.C != cuda.R16BF {
				t.Errorf("LinearForwardBF16RoundedTo add %v: GEMM %d types %v, want bfloat16 A, B and C", add, i, ty)
			}
		}
	}

	alloc, freeAll := freeingF32(t, b)
	defer freeAll()
	for ci, c := range loraFwdCases {
		what := "LoRAForwardManyTo, " + c.description
		want := newLoRAFwdData(c, uint64(ci), alloc)
		got := newLoRAFwdData(c, uint64(ci), alloc)
		b.LoRAForwardMany(want.outs, want.us, want.x, want.as, want.bs, c.n, c.in, c.r, c.outs, c.scale)
		outBFs := make([][]uint16, len(c.outs))
		wantBFs := make([][]uint16, len(c.outs))
		for i, out := range c.outs {
			outBFs[i] = mem.bf16(c.n * out)
			wantBFs[i] = mem.bf16(c.n * out)
			b.MatmulBF16To(wantBFs[i], want.us[i], nil, want.bs[i], nil, c.n, out, c.r, false, true, 0)
		}
		l0, g0 := len(drv.Launches()), len(blas.Gemms())
		b.LoRAForwardManyTo(outBFs, got.us, got.x, got.as, got.bs, c.n, c.in, c.r, c.outs, c.scale)
		b.Synchronize()
		k := len(c.outs)
		for i := range c.outs {
			if !sameBits(got.us[i], want.us[i]) {
				t.Errorf("%s: u %d differs from LoRAForwardMany's", what, i)
			}
			sameBF16(t, fmt.Sprintf("%s: output %d", what, i), outBFs[i], wantBFs[i])
		}
		wantKernels(t, what, drv, l0, map[string]int{"copy_f32": k, "scale_cols": k, "f32_to_bf16": 2 * k})
		_, types := gemmsSince(t, what, blas, g0, k+1)
		for i, ty := range types {
			if cbf := ty.C == cuda.R16BF; cbf != (i > 0) {
				t.Errorf("%s: GEMM %d bfloat16 C %v, want %v", what, i, cbf, i > 0)
			}
		}
	}

	const GN, I, R = 33, 70, 5
	gateBF, upBF := mem.randBF16(GN*I), mem.randBF16(GN*I)
	gate, up := mem.f32(GN*I), mem.f32(GN*I)
	kernels.FromBF16(gate, gateBF)
	kernels.FromBF16(up, upBF)
	a, g := f32(R*I), f32(GN*R)
	for _, gelu := range []bool{false, true} {
		what := map[bool]string{false: "SwiGLU", true: "GeGLU"}[gelu]
		actBF, u, wantActBF, wantU := mem.bf16(GN*I), mem.f32(GN*R), mem.bf16(GN*I), mem.f32(GN*R)
		b.GatedLoRAForwardRounded(wantActBF, wantU, gate, up, a, GN, I, R, 0.5, gelu)
		l0 := len(drv.Launches())
		b.GatedLoRAForwardBF16(actBF, u, gateBF, upBF, a, GN, I, R, 0.5, gelu)
		b.Synchronize()
		sameBF16(t, what+" GatedLoRAForwardBF16's act", actBF, wantActBF)
		if !sameBits(u, wantU) {
			t.Errorf("%s: GatedLoRAForwardBF16's u differs from GatedLoRAForwardRounded's", what)
		}
		wantKernels(t, what+" GatedLoRAForwardBF16", drv, l0, map[string]int{"gated_lora_forward_" + map[bool]string{false: "swiglu", true: "geglu"}[gelu] + "_bf16in": 1})
		for _, bfDact := range []bool{false, true} {
			var dact []float32
			var dactBF []uint16
			if bfDact {
				dactBF = mem.randBF16(GN * I)
			} else {
				dact = f32(GN * I)
			}
			da0 := f32(R * I)
			da, wantDA := mem.f32(R*I), mem.f32(R*I)
			copy(da, da0)
			copy(wantDA, da0)
			dg, du, wdg, wdu := mem.bf16(GN*I), mem.bf16(GN*I), mem.bf16(GN*I), mem.bf16(GN*I)
			b.GatedLoRABackwardRounded(wdg, wdu, wantDA, g, dact, dactBF, gate, up, GN, I, R, gelu)
			l0 := len(drv.Launches())
			b.GatedLoRABackwardBF16(dg, du, da, g, dact, dactBF, gateBF, upBF, GN, I, R, gelu)
			b.Synchronize()
			w := fmt.Sprintf("%s GatedLoRABackwardBF16, dact bf16 %v", what, bfDact)
			sameBF16(t, w+": dgate", dg, wdg)
			sameBF16(t, w+": dup", du, wdu)
			if !sameBits(da, wantDA) {
				t.Errorf("%s: DA differs from GatedLoRABackwardRounded's", w)
			}
			wantKernels(t, w, drv, l0, map[string]int{"gated_lora_backward_" + map[bool]string{false: "swiglu", true: "geglu"}[gelu] + "_bf16in": 1})
		}
	}
	wantPanic(t, "GatedLoRAForwardBF16 at rank 17", "HoldsGateUpBF16 is false", func() {
		const R = cuda.GatedLoRABackwardMaxRank + 1
		b.GatedLoRAForwardBF16(mem.bf16(GN*I), mem.f32(GN*R), gateBF, upBF, mem.f32(R*I), GN, I, R, 1, false)
	})

	f, _, _ := emulatedBackend(t)
	defer f.Close()
	if f.HoldsGateUpBF16(16) {
		t.Error("PrecisionF32: HoldsGateUpBF16 is true")
	}
	fi, _ := f.AllocBF16(N * C)
	fo, _ := f.AllocBF16(N * OCs[0])
	fw, _ := f.AllocBF16(OCs[0] * C)
	wantPanic(t, "LinearForwardBF16RoundedTo in PrecisionF32", "round their input to bfloat16 only in", func() {
		f.LinearForwardBF16RoundedTo([][]uint16{fo}, fi, [][]uint16{fw}, N, C, OCs[:1], nil)
	})
	fx, _ := f.AllocF32(N * C)
	fu, _ := f.AllocF32(N * 2)
	fa, _ := f.AllocF32(2 * C)
	fb, _ := f.AllocF32(OCs[0] * 2)
	wantPanic(t, "LoRAForwardManyTo in PrecisionF32", "multiply bfloat16 operands only in", func() {
		f.LoRAForwardManyTo([][]uint16{fo}, [][]float32{fu}, fx, [][]float32{fa}, [][]float32{fb}, N, C, 2, OCs[:1], 1)
	})
	wantPanic(t, "GatedLoRAForwardBF16 in PrecisionF32", "HoldsGateUpBF16 is false", func() {
		f.GatedLoRAForwardBF16(fi, fu, fi, fi, fa, 1, 10, 2, 1, false)
	})
}
