package cuda_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// TestInputRounder: in PrecisionBF16 on the emulated device, the forward
// _bf16 kernels (RMSNorm, SwiGLU, GeGLU) write the float32 outputs of
// their plain kernels bit for bit and their bf16 copies as kernels.ToBF16
// rounds them (a NaN included; odd counts), and LinearForwardBF16Rounded
// on such a copy gives the bits of LinearForwardBF16 (one weight, with a
// bias), LinearForwardBF16Many (add nil) and LinearForwardBF16ManyAdd (an
// output added onto, one set, a bias on one) on the float32 input, with
// no f32_to_bf16 launch: its GEMMs and bias_forward only. In PrecisionF32
// the backend does not round the input, and LinearForwardBF16Rounded
// panics.
func TestInputRounder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kernels on the CPU emulation of the CUDA device")
	}
	b, drv, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if !b.RoundsLinearInput() {
		t.Fatal("PrecisionBF16: RoundsLinearInput is false")
	}
	r := rand.New(rand.NewPCG(28, 7))
	mem := emulatedMem{t: t, b: b, r: r}
	const N, C = 3, 37
	nan := float32(math.NaN())
	f32, nans, bf := mem.randF32, mem.nans, mem.bf16
	sameF32 := func(what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
				t.Fatalf("%s [%d] = %g, the unfused op gives %g", what, i, got[i], want[i])
			}
		}
	}
	sameBF := func(what string, got []uint16, from []float32) {
		t.Helper()
		want := make([]uint16, len(from))
		kernels.ToBF16(want, from)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s [%d] = %#04x, kernels.ToBF16 gives %#04x", what, i, got[i], want[i])
			}
		}
	}

	// The normed input: RMSNormForwardRounded against RMSNormForward.
	inp, weight := f32(N*C), f32(C)
	inp[C+4] = nan // a NaN row
	wantH, wantR := nans(N*C), nans(N)
	b.RMSNormForward(wantH, wantR, inp, weight, N, C, 1e-6)
	h, rstd, hBF := nans(N*C), nans(N), bf(N*C)
	b.RMSNormForwardRounded(h, rstd, hBF, inp, weight, N, C, 1e-6)
	b.Synchronize()
	sameF32("RMSNormForwardRounded out", h, wantH)
	sameF32("RMSNormForwardRounded rstd", rstd, wantR)
	sameBF("RMSNormForwardRounded outBF", hBF, h)
	if !math.IsNaN(float64(h[C])) {
		t.Fatal("RMSNormForwardRounded: no NaN in the row that has one")
	}

	// The gated units' output: an odd count, a NaN.
	const n = N*C - 2
	gate, up := f32(n), f32(n)
	gate[7] = nan
	for _, g := range []struct {
		name    string
		plain   func(out, gate, up []float32, n int)
		rounded func(out []float32, outBF []uint16, gate, up []float32, n int)
	}{
		{"SwiGLU", b.SwiGLUForward, b.SwiGLUForwardRounded},
		{"GeGLU", b.GeGLUForward, b.GeGLUForwardRounded},
	} {
		want, got, gotBF := nans(n), nans(n), bf(n)
		g.plain(want, gate, up, n)
		g.rounded(got, gotBF, gate, up, n)
		b.Synchronize()
		sameF32(g.name+"ForwardRounded out", got, want)
		sameBF(g.name+"ForwardRounded outBF", gotBF, got)
	}

	// The products on the rounded normed input.
	OCs := []int{5, 4}
	ws := [][]uint16{bf(OCs[0] * C), bf(OCs[1] * C)}
	for _, w := range ws {
		for i := range w {
			w[i] = kernels.BF16(float32(r.NormFloat64()))
		}
	}
	bias := f32(OCs[0])
	rounded := func(what string, outs [][]float32, weights [][]uint16, biases [][]float32, ocs []int, add []bool) {
		t.Helper()
		l0 := len(drv.Launches())
		b.LinearForwardBF16Rounded(outs, hBF, weights, biases, N, C, ocs, add)
		b.Synchronize()
		for _, l := range drv.Launches()[l0:] {
			if l.Kernel != "bias_forward" {
				t.Errorf("%s: LinearForwardBF16Rounded launched %s, want only its GEMMs and bias_forward", what, l.Kernel)
			}
		}
	}
	want, got := nans(N*OCs[0]), nans(N*OCs[0])
	b.LinearForwardBF16(want, h, ws[0], bias, N, C, OCs[0])
	rounded("one weight", [][]float32{got}, ws[:1], [][]float32{bias}, OCs[:1], nil)
	sameF32("LinearForwardBF16Rounded as LinearForwardBF16", got, want)

	wantMany := [][]float32{nans(N * OCs[0]), nans(N * OCs[1])}
	gotMany := [][]float32{nans(N * OCs[0]), nans(N * OCs[1])}
	b.LinearForwardBF16Many(wantMany, h, ws, nil, N, C, OCs)
	rounded("add nil", gotMany, ws, nil, OCs, nil)
	for i := range OCs {
		sameF32("LinearForwardBF16Rounded as LinearForwardBF16Many", gotMany[i], wantMany[i])
	}

	start := f32(N * OCs[0])
	wantAdd := [][]float32{f32(N * OCs[0]), nans(N * OCs[1])}
	gotAdd := [][]float32{f32(N * OCs[0]), nans(N * OCs[1])}
	copy(wantAdd[0], start)
	copy(gotAdd[0], start)
	biases := [][]float32{bias, nil}
	add := []bool{true, false}
	b.LinearForwardBF16ManyAdd(wantAdd, h, ws, biases, N, C, OCs, add)
	rounded("add", gotAdd, ws, biases, OCs, add)
	for i := range OCs {
		sameF32("LinearForwardBF16Rounded as LinearForwardBF16ManyAdd", gotAdd[i], wantAdd[i])
	}

	f, _, _ := emulatedBackend(t)
	defer f.Close()
	if f.RoundsLinearInput() {
		t.Error("PrecisionF32: RoundsLinearInput is true")
	}
	out, _ := f.AllocF32(N * OCs[0])
	xb, _ := f.AllocBF16(N * C)
	fw, _ := f.AllocBF16(OCs[0] * C)
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "round their input to bfloat16 only in") {
			t.Errorf("LinearForwardBF16Rounded in PrecisionF32: %v, want a panic saying why", p)
		}
	}()
	f.LinearForwardBF16Rounded([][]float32{out}, xb, [][]uint16{fw}, nil, N, C, OCs[:1], nil)
}
