package cuda_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels"
)

// lora7BSegments are the (offset, length) segments of the 7B shape's flat
// LoRA adapter at rank 16 on all seven projections, in Params order (A
// then B of q, k, v, o, gate, up, down, layer by layer): 392 tensors, 40.4
// M values; layers fewer with -test.short.
func lora7BSegments(layers int) (offs, ns []int, total int) {
	const r, C, I, KV = 16, 3584, 18944, 512
	for range layers {
		for _, p := range [][2]int{{C, C}, {C, KV}, {C, KV}, {C, C}, {C, I}, {C, I}, {I, C}} {
			for _, n := range []int{r * p[0], p[1] * r} {
				offs, ns = append(offs, total), append(ns, n)
				total += n
			}
		}
	}
	return offs, ns, total
}

// TestSumSquaresSegmentsOnHardware: on device 0, SumSquaresSegments over
// the 7B shape's flat adapter (392 segments, one block each) gives
// SumSquaresMany's bits (two kernels a tensor, SumSquares' own), and both
// are timed (median of 7, after a warm-up): the log line SUMSQSEG says
// what one launch saves or costs against 784. It fails when the segmented
// one is slower (one block a segment reads a whole segment: 303104 values
// for the largest). With -test.short (compute-sanitizer) two layers, once.
func TestSumSquaresSegmentsOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionF32)
	layers, rounds := 28, 7
	if testing.Short() {
		layers, rounds = 2, 1
	}
	offs, ns, total := lora7BSegments(layers)
	x, err := b.AllocF32(total)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(x)
	r := rand.New(rand.NewPCG(28, 7))
	fillRand(r, x, func(r *rand.Rand, chunk []float32) {
		for i := range chunk {
			chunk[i] = float32(r.NormFloat64() * math.Exp2(float64(r.IntN(21)-10)))
		}
	})
	xs := make([][]float32, len(offs))
	for i, off := range offs {
		xs[i] = x[off : off+ns[i]]
	}
	many, seg := make([]float64, len(xs)), make([]float64, len(xs))
	kernels.SumSquaresMany(b, many, xs) // warm-up: scratch, modules
	kernels.SumSquaresSegments(b, seg, x, offs, ns)
	for i := range many {
		if math.Float64bits(seg[i]) != math.Float64bits(many[i]) {
			t.Fatalf("segment %d (%d values): SumSquaresSegments %.17g, SumSquaresMany %.17g", i, ns[i], seg[i], many[i])
		}
	}
	var tm, ts []time.Duration
	for range rounds {
		t0 := time.Now()
		kernels.SumSquaresMany(b, many, xs)
		tm = append(tm, time.Since(t0))
		t0 = time.Now()
		kernels.SumSquaresSegments(b, seg, x, offs, ns)
		ts = append(ts, time.Since(t0))
	}
	if testing.Short() {
		return
	}
	t.Logf("SUMSQSEG %d tensors, %.1f M values: SumSquaresMany (%d launches) median %v, SumSquaresSegments (1 launch) median %v",
		len(xs), float64(total)/1e6, 2*len(xs), median(tm), median(ts))
	if median(ts) > median(tm) {
		t.Errorf("SumSquaresSegments (median %v) is slower than SumSquaresMany (median %v)", median(ts), median(tm))
	}
}

// TestDoutRounderOnHardware: on device 0 in PrecisionBF16, the gated
// units' _set_bf16 backward gives backward_set's float32 outputs bit for
// bit and kernels.ToBF16's roundings of dgate and dup, and
// LinearBackwardBF16Rounded on them LinearBackwardBF16's bits (the gate
// projection's shape of the 7B model, 64 tokens; fewer with -test.short).
func TestDoutRounderOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	N, C, OC := 64, 3584, 18944
	if testing.Short() {
		N, C, OC = 3, 40, 37
	}
	n := N * OC
	r := rand.New(rand.NewPCG(28, 8))
	f32 := func(m int) []float32 {
		x, err := b.AllocF32(m)
		if err != nil {
			t.Fatal(err)
		}
		fillNormal(r, x, 1)
		return x
	}
	bf := func(m int) []uint16 {
		x, err := b.AllocBF16(m)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	dout, gate, up, w := f32(n), f32(n), f32(n), bf(OC*C)
	defer func() {
		for _, x := range [][]float32{dout, gate, up} {
			b.FreeF32(x)
		}
		b.FreeBF16(w)
	}()
	fillNormalBF16(r, w, 0.02)
	for _, g := range []struct {
		name    string
		set     func(dgate, dup, act, dout, gate, up []float32, n int)
		rounded func(dgate, dup, act []float32, actBF, dgateBF, dupBF []uint16, dout []float32, doutBF []uint16, gate, up []float32, n int)
	}{
		{"SwiGLU", b.SwiGLUBackwardSet, b.SwiGLUBackwardSetRounded},
		{"GeGLU", b.GeGLUBackwardSet, b.GeGLUBackwardSetRounded},
	} {
		wg, wu, wa := f32(n), f32(n), f32(n)
		g.set(wg, wu, wa, dout, gate, up, n)
		gg, gu, ga, bg, bu := f32(n), f32(n), f32(n), bf(n), bf(n)
		g.rounded(gg, gu, ga, nil, bg, bu, dout, nil, gate, up, n)
		want, got := f32(N*C), f32(N*C)
		b.Synchronize()
		copy(got, want)
		b.LinearBackwardBF16(want, wg, w, N, C, OC)
		b.LinearBackwardBF16Rounded(got, bg, w, N, C, OC)
		b.Synchronize()
		rg := make([]uint16, n)
		kernels.ToBF16(rg, wg)
		for i := range n {
			if math.Float32bits(gg[i]) != math.Float32bits(wg[i]) || math.Float32bits(gu[i]) != math.Float32bits(wu[i]) || math.Float32bits(ga[i]) != math.Float32bits(wa[i]) {
				t.Fatalf("%s [%d]: dgate, dup, act %g %g %g; backward_set %g %g %g", g.name, i, gg[i], gu[i], ga[i], wg[i], wu[i], wa[i])
			}
			if bg[i] != rg[i] || bu[i] != kernels.BF16(wu[i]) {
				t.Fatalf("%s [%d]: bf16 copies %#04x %#04x, kernels.BF16 %#04x %#04x", g.name, i, bg[i], bu[i], rg[i], kernels.BF16(wu[i]))
			}
		}
		for i := range N * C {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: dinp[%d] = %g, LinearBackwardBF16 gives %g", g.name, i, got[i], want[i])
			}
		}
		for _, x := range [][]float32{wg, wu, wa, gg, gu, ga, want, got} {
			b.FreeF32(x)
		}
		b.FreeBF16(bg)
		b.FreeBF16(bu)
	}
}

// TestInputRounderOnHardware: on device 0 in PrecisionBF16, the forward
// _bf16 kernels give their plain kernels' float32 outputs bit for bit and
// kernels.ToBF16's roundings of them, and LinearForwardBF16Rounded on
// those copies the bits of LinearForwardBF16Many (the normed input into
// the gate and up projections) and LinearForwardBF16 (act into the down
// projection), the 7B model's shapes, 64 tokens (fewer with -test.short).
func TestInputRounderOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionBF16)
	N, C, I := 64, 3584, 18944
	if testing.Short() {
		N, C, I = 3, 40, 37
	}
	r := rand.New(rand.NewPCG(28, 9))
	var f32s [][]float32
	var bf16s [][]uint16
	defer func() {
		for _, x := range f32s {
			b.FreeF32(x)
		}
		for _, x := range bf16s {
			b.FreeBF16(x)
		}
	}()
	f32 := func(m int) []float32 {
		x, err := b.AllocF32(m)
		if err != nil {
			t.Fatal(err)
		}
		fillNormal(r, x, 1)
		f32s = append(f32s, x)
		return x
	}
	bf := func(m int, std float64) []uint16 {
		x, err := b.AllocBF16(m)
		if err != nil {
			t.Fatal(err)
		}
		fillNormalBF16(r, x, std)
		bf16s = append(bf16s, x)
		return x
	}
	same := func(what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s [%d] = %g, the unfused op gives %g", what, i, got[i], want[i])
			}
		}
	}
	rounded := func(what string, got []uint16, from []float32) {
		t.Helper()
		for i := range from {
			if got[i] != kernels.BF16(from[i]) {
				t.Fatalf("%s [%d] = %#04x, kernels.BF16 %#04x", what, i, got[i], kernels.BF16(from[i]))
			}
		}
	}
	x, nw := f32(N*C), f32(C)
	wantH, wantR, h, rstd, hBF := f32(N*C), f32(N), f32(N*C), f32(N), bf(N*C, 0)
	b.RMSNormForward(wantH, wantR, x, nw, N, C, 1e-6)
	b.RMSNormForwardRounded(h, rstd, hBF, x, nw, N, C, 1e-6)
	wg, wu := bf(I*C, 0.02), bf(I*C, 0.02)
	gate, up, wantGate, wantUp := f32(N*I), f32(N*I), f32(N*I), f32(N*I)
	b.LinearForwardBF16Many([][]float32{wantGate, wantUp}, wantH, [][]uint16{wg, wu}, nil, N, C, []int{I, I})
	b.LinearForwardBF16Rounded([][]float32{gate, up}, hBF, [][]uint16{wg, wu}, nil, N, C, []int{I, I}, nil)
	b.Synchronize()
	same("RMSNormForwardRounded out", h, wantH)
	same("RMSNormForwardRounded rstd", rstd, wantR)
	rounded("RMSNormForwardRounded outBF", hBF, h)
	same("gate on the rounded h", gate, wantGate)
	same("up on the rounded h", up, wantUp)

	wd := bf(C*I, 0.02)
	for _, g := range []struct {
		name    string
		plain   func(out, gate, up []float32, n int)
		rounded func(out []float32, outBF []uint16, gate, up []float32, n int)
	}{
		{"SwiGLU", b.SwiGLUForward, b.SwiGLUForwardRounded},
		{"GeGLU", b.GeGLUForward, b.GeGLUForwardRounded},
	} {
		wantAct, act, actBF := f32(N*I), f32(N*I), bf(N*I, 0)
		g.plain(wantAct, gate, up, N*I)
		g.rounded(act, actBF, gate, up, N*I)
		want, got := f32(N*C), f32(N*C)
		b.LinearForwardBF16(want, wantAct, wd, nil, N, I, C)
		b.LinearForwardBF16Rounded([][]float32{got}, actBF, [][]uint16{wd}, nil, N, I, []int{C}, nil)
		b.Synchronize()
		same(g.name+"ForwardRounded out", act, wantAct)
		rounded(g.name+"ForwardRounded outBF", actBF, act)
		same(g.name+": down on the rounded act", got, want)
	}
}
