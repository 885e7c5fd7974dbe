package cuda_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestDoutRounder: in PrecisionBF16 on the emulated device, the gated
// units' backward_set_bf16 kernels write the float32 outputs of
// backward_set bit for bit and their bf16 copies as kernels.ToBF16 rounds
// them (a NaN included; an odd count), and LinearBackwardBF16Rounded on
// those copies gives LinearBackwardBF16's bits on the float32 gradient with
// one GEMM and no f32_to_bf16 launch; with nil float32 gradients the
// kernels write the same copies and act, and with actBF act's copy as
// kernels.ToBF16 rounds it. In PrecisionF32 the backend does not
// round dout, and LinearBackwardBF16Rounded panics.
func TestDoutRounder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	b, drv, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if !b.RoundsLinearDout() {
		t.Fatal("PrecisionBF16: RoundsLinearDout is false")
	}
	r := rand.New(rand.NewPCG(28, 6))
	mem := emulatedMem{t: t, b: b, r: r}
	const N, C, OC = 3, 40, 37
	n := N * OC
	f32, nans, bf := mem.randF32, mem.nans, mem.bf16
	dout, gate, up := f32(n), f32(n), f32(n)
	dout[5] = float32(math.NaN())
	w := bf(OC * C)
	for i := range w {
		w[i] = kernels.BF16(float32(r.NormFloat64()))
	}
	for _, g := range []struct {
		name    string
		set     func(dgate, dup, act, dout, gate, up []float32, n int)
		rounded func(dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dout []float32, doutBF []uint16, gate, up []float32, n int)
	}{
		{"SwiGLU", b.SwiGLUBackwardSet, b.SwiGLUBackwardSetRounded},
		{"GeGLU", b.GeGLUBackwardSet, b.GeGLUBackwardSetRounded},
	} {
		wg, wu, wa := nans(n), nans(n), nans(n)
		g.set(wg, wu, wa, dout, gate, up, n)
		gg, gu, ga := nans(n), nans(n), nans(n)
		bg, bu := bf(n), bf(n)
		g.rounded(gg, gu, ga, nil, bg, bu, dout, nil, gate, up, n)
		b.Synchronize()
		rg, ru := make([]uint16, n), make([]uint16, n)
		kernels.ToBF16(rg, wg)
		kernels.ToBF16(ru, wu)
		for i := range n {
			if math.Float32bits(gg[i]) != math.Float32bits(wg[i]) || math.Float32bits(gu[i]) != math.Float32bits(wu[i]) || math.Float32bits(ga[i]) != math.Float32bits(wa[i]) {
				t.Fatalf("%s [%d]: dgate, dup, act %g %g %g; backward_set %g %g %g", g.name, i, gg[i], gu[i], ga[i], wg[i], wu[i], wa[i])
			}
			if bg[i] != rg[i] || bu[i] != ru[i] {
				t.Fatalf("%s [%d]: bf16 copies %#04x %#04x, kernels.ToBF16 %#04x %#04x", g.name, i, bg[i], bu[i], rg[i], ru[i])
			}
		}
		if !math.IsNaN(float64(gg[5])) {
			t.Fatalf("%s: no NaN where dout has one", g.name)
		}
		// Without the float32 gradients: the same copies and act; and
		// act's copy alone, without act.
		oa, og, ou := nans(n), bf(n), bf(n)
		g.rounded(nil, nil, oa, nil, og, ou, dout, nil, gate, up, n)
		ab, ag, au := bf(n), bf(n), bf(n)
		g.rounded(nil, nil, nil, ab, ag, au, dout, nil, gate, up, n)
		b.Synchronize()
		ra := make([]uint16, n)
		kernels.ToBF16(ra, wa)
		for i := range n {
			if og[i] != bg[i] || ou[i] != bu[i] || math.Float32bits(oa[i]) != math.Float32bits(wa[i]) {
				t.Fatalf("%s [%d], no float32 dgate and dup: copies %#04x %#04x, act %g; with them %#04x %#04x, %g", g.name, i, og[i], ou[i], oa[i], bg[i], bu[i], wa[i])
			}
			if ab[i] != ra[i] || ag[i] != bg[i] || au[i] != bu[i] {
				t.Fatalf("%s [%d], act's copy alone: %#04x (copies %#04x %#04x); kernels.ToBF16 of act %#04x (copies %#04x %#04x)", g.name, i, ab[i], ag[i], au[i], ra[i], bg[i], bu[i])
			}
		}
		for _, dg := range []struct {
			f  []float32
			bf []uint16
		}{{wg, bg}, {wu, bu}} {
			want := f32(N * C)
			got := f32(N * C)
			copy(got, want)
			b.LinearBackwardBF16(want, dg.f, w, N, C, OC)
			l0 := len(drv.Launches())
			b.LinearBackwardBF16Rounded(got, dg.bf, w, N, C, OC)
			b.Synchronize()
			if ls := drv.Launches()[l0:]; len(ls) != 0 {
				t.Errorf("%s: LinearBackwardBF16Rounded launched %v, want only its GEMM", g.name, ls)
			}
			for i := range N * C {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
					t.Fatalf("%s: dinp[%d] = %g, LinearBackwardBF16 gives %g", g.name, i, got[i], want[i])
				}
			}
		}
	}

	f, _, _ := emulatedBackend(t)
	defer f.Close()
	if f.RoundsLinearDout() {
		t.Error("PrecisionF32: RoundsLinearDout is true")
	}
	dinp, _ := f.AllocF32(N * C)
	db, _ := f.AllocBF16(N * OC)
	fw, _ := f.AllocBF16(OC * C)
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "rounds dout to bfloat16 only in") {
			t.Errorf("LinearBackwardBF16Rounded in PrecisionF32: %v, want a panic saying why", p)
		}
	}()
	f.LinearBackwardBF16Rounded(dinp, db, fw, N, C, OC)
}
