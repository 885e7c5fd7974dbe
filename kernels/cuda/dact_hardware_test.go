package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestDactBF16OnHardware: the MLP backward's dact [N, I] written as
// bfloat16 (kernels.DinpRounder, as the model's MLP.downDX runs it: the
// LoRA product g·A stored rounded by MatmulBF16To at beta 0, then the base
// product dout·W added by LinearBackwardBF16To at beta 1) and read so by
// the gated backward (SwiGLUBackwardSetRounded with doutBF), against the
// float32 dact (Matmul at beta 0, LinearBackwardBF16 at beta 1, the gated
// backward on the float32 values): dact within kernels.BF16ComputeTol of
// the float32 one, and the gated backward on the bfloat16 dact the bits it
// gives on those values widened. First on a small odd shape (N 7, C 131, I
// 37, R 3); then (not with -test.short) on the 7B step's down projection
// (8 × 1024 tokens, C 3584, I 18944, R 16), the two paths timed (log
// DACTBF16). Not run on a GPU yet.
func TestDactBF16OnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	alloc, allocBF := backendAllocs(t, b)
	r := rand.New(rand.NewPCG(28, 18944))
	f32 := randnIn(alloc, r)
	bf := func(n int, scale float64) []uint16 {
		x := allocBF(n)
		fillNormalBF16(r, x, scale)
		return x
	}
	run := func(N, C, I, R int, timed bool) {
		NI := N * I
		dout, w := f32(N*C, 1), bf(C*I, 0.02)
		g, a := f32(N*R, 0.1), f32(R*I, 0.02)
		gate, up := f32(NI, 1), f32(NI, 1)
		dact, dactBF := alloc(NI), allocBF(NI)
		dg, du, dgb, dub := allocBF(NI), allocBF(NI), allocBF(NI), allocBF(NI)
		wg, wu := allocBF(NI), allocBF(NI)
		dactW := alloc(NI)
		runF32 := func() {
			b.Matmul(dact, g, a, N, I, R, false, false, 0)
			b.LinearBackwardBF16(dact, dout, w, N, I, C)
			b.SwiGLUBackwardSetRounded(nil, nil, nil, nil, dg, du, dact, nil, gate, up, NI)
		}
		runBF := func() {
			b.MatmulBF16To(dactBF, g, nil, a, nil, N, I, R, false, false, 0)
			b.LinearBackwardBF16To(dactBF, dout, w, N, I, C, 1)
			b.SwiGLUBackwardSetRounded(nil, nil, nil, nil, dgb, dub, nil, dactBF, gate, up, NI)
		}
		runF32()
		runBF()
		b.Synchronize()
		kernels.FromBF16(dactW, dactBF)
		b.SwiGLUBackwardSetRounded(nil, nil, nil, nil, wg, wu, dactW, nil, gate, up, NI)
		b.Synchronize()
		t.Logf("N %d C %d I %d R %d: dact as bfloat16 %.3g from the float32 dact", N, C, I, R, relErr(dactW, dact))
		near(t, "dact as bfloat16", dactW, dact, kernels.BF16ComputeTol)
		for i := range NI {
			if dgb[i] != wg[i] || dub[i] != wu[i] {
				t.Fatalf("N %d I %d: gated backward on the bfloat16 dact [%d]: %#04x %#04x; on its values widened %#04x %#04x", N, I, i, dgb[i], dub[i], wg[i], wu[i])
			}
		}
		if !timed {
			return
		}
		tf, tb := timePerCall(b, runF32), timePerCall(b, runBF)
		gb := float64(NI) / 1e9
		t.Logf("DACTBF16 down backward + gated backward (N %d C %d I %d R %d): float32 dact %.0f µs (dact moved %.2f GB), bfloat16 dact %.0f µs (%.2f GB): %.2fx",
			N, C, I, R, us(tf), 4*4*gb, us(tb), 4*2*gb, tf.Seconds()/tb.Seconds())
	}
	run(7, 131, 37, 3, false)
	if testing.Short() {
		return
	}
	run(8*1024, 3584, 18944, 16, true)
}
