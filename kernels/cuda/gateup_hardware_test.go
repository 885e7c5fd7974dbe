package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestGateUpRounderOnHardware: the MLP's gate and up held as bfloat16
// (kernels.GateUpRounder) against the float32 path the model takes
// without it, on a LoRA'd gate and up of one input: LoRAForwardManyTo then
// LinearForwardBF16RoundedTo (adding onto the rank-r products) within
// kernels.BF16ComputeTol of LoRAForwardMany then LinearForwardBF16Rounded
// (their float32 outputs: one more rounding each, of the LoRA term and of
// the sum); then GatedLoRAForwardBF16 and GatedLoRABackwardBF16 on those
// bfloat16 gate and up the same bits as GatedLoRAForwardRounded and
// GatedLoRABackwardRounded on their widened values. On a small odd shape
// and, not with -test.short, on the 7B step's (8 × 1024 tokens, C 3584, I
// 18944, rank 16), where the float32 and bfloat16 ways are timed, forward
// (the LoRA and base products and the gated unit) and backward (the gated
// backward) (log GATEUPBF16). Not run on a GPU yet.
func TestGateUpRounderOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	alloc, allocBF := backendAllocs(t, b)
	r := rand.New(rand.NewPCG(28, 18947))
	f32 := randnIn(alloc, r)
	type shape struct{ N, C, I, R int }
	shapes := []shape{{37, 64, 70, 5}}
	if !testing.Short() {
		shapes = append(shapes, shape{8 * 1024, 3584, 18944, 16})
	}
	for _, s := range shapes {
		N, C, I, R := s.N, s.C, s.I, s.R
		t.Run(fmt.Sprintf("N %d C %d I %d R %d", N, C, I, R), func(t *testing.T) {
			NI := N * I
			x := f32(N*C, 1)
			xBF := allocBF(N * C)
			kernels.ToBF16(xBF, x)
			ws := [][]uint16{allocBF(I * C), allocBF(I * C)}
			for _, w := range ws {
				fillNormalBF16(r, w, 0.02)
			}
			as := [][]float32{f32(R*C, 0.02), f32(R*C, 0.02)}
			bs := [][]float32{f32(I*R, 0.02), f32(I*R, 0.02)}
			lus, lusTo := [][]float32{alloc(N * R), alloc(N * R)}, [][]float32{alloc(N * R), alloc(N * R)}
			outs, outBFs := [][]float32{alloc(NI), alloc(NI)}, [][]uint16{allocBF(NI), allocBF(NI)}
			OCs, add := []int{I, I}, []bool{true, true}
			projF32 := func() {
				b.LoRAForwardMany(outs, lus, x, as, bs, N, C, R, OCs, 1)
				b.LinearForwardBF16Rounded(outs, xBF, ws, nil, N, C, OCs, add)
			}
			projBF16 := func() {
				b.LoRAForwardManyTo(outBFs, lusTo, x, as, bs, N, C, R, OCs, 1)
				b.LinearForwardBF16RoundedTo(outBFs, xBF, ws, N, C, OCs, add)
			}
			projF32()
			projBF16()
			b.Synchronize()
			widened := [][]float32{alloc(NI), alloc(NI)}
			for i := range outs {
				if !slices.Equal(lusTo[i], lus[i]) {
					t.Fatalf("projection %d: LoRAForwardManyTo's u differs from LoRAForwardMany's", i)
				}
				kernels.FromBF16(widened[i], outBFs[i])
				near(t, fmt.Sprintf("projection %d held as bfloat16", i), widened[i], outs[i], kernels.BF16ComputeTol)
			}
			gate, up, gateBF, upBF := widened[0], widened[1], outBFs[0], outBFs[1]
			a := f32(R*I, 0.02)
			actBF, u, wantActBF, wantU := allocBF(NI), alloc(N*R), allocBF(NI), alloc(N*R)
			g, dactBF := f32(N*R, 0.1), allocBF(NI)
			fillNormalBF16(r, dactBF, 1)
			dg, du, da, wdg, wdu, wda := allocBF(NI), allocBF(NI), alloc(R*I), allocBF(NI), allocBF(NI), alloc(R*I)
			for _, gelu := range []bool{false, true} {
				name := map[bool]string{false: "swiglu", true: "geglu"}[gelu]
				gatedF32 := func() { b.GatedLoRAForwardRounded(wantActBF, wantU, gate, up, a, N, I, R, 0.5, gelu) }
				gatedBF16 := func() { b.GatedLoRAForwardBF16(actBF, u, gateBF, upBF, a, N, I, R, 0.5, gelu) }
				backF32 := func() { b.GatedLoRABackwardRounded(wdg, wdu, wda, g, nil, dactBF, gate, up, N, I, R, gelu) }
				backBF16 := func() { b.GatedLoRABackwardBF16(dg, du, da, g, nil, dactBF, gateBF, upBF, N, I, R, gelu) }
				clear(da)
				clear(wda)
				gatedF32()
				gatedBF16()
				backF32()
				backBF16()
				b.Synchronize()
				if !slices.Equal(actBF, wantActBF) || !slices.Equal(u, wantU) {
					t.Fatalf("%s: GatedLoRAForwardBF16's act or u differs from GatedLoRAForwardRounded's on the widened values", name)
				}
				if !slices.Equal(dg, wdg) || !slices.Equal(du, wdu) || !slices.Equal(da, wda) {
					t.Fatalf("%s: GatedLoRABackwardBF16's dgate, dup or DA differs from GatedLoRABackwardRounded's on the widened values", name)
				}
				if testing.Short() || N < 1024 {
					continue
				}
				ff := timePerCall(b, func() { projF32(); gatedF32() })
				fb := timePerCall(b, func() { projBF16(); gatedBF16() })
				bf, bb := timePerCall(b, backF32), timePerCall(b, backBF16)
				t.Logf("GATEUPBF16 %s (N %d, C %d, I %d, R %d): forward (gate, up, gated unit) float32 %.0f µs, bfloat16 %.0f µs: %.2fx; gated backward float32 %.0f µs, bfloat16 %.0f µs: %.2fx",
					name, N, C, I, R, us(ff), us(fb), ff.Seconds()/fb.Seconds(), us(bf), us(bb), bf.Seconds()/bb.Seconds())
			}
		})
	}
}
