package cuda_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/kerneltest"
)

// emulatedBackendLt is emulatedBackendIn(PrecisionBF16) with a fake
// cuBLASLt bound and picked for the linear GEMMs.
func emulatedBackendLt(t *testing.T) (*cuda.Backend, *cudafake.BLAS, *cudafake.BLASLt) {
	t.Helper()
	drv := cudafake.NewEmulatedDriver(1, 0, loadEmulator(t))
	blas := cudafake.NewBLAS(drv)
	dev, err := cuda.OpenWith(drv, blas, 0)
	if err != nil {
		t.Fatal(err)
	}
	lt := cudafake.NewBLASLt(drv)
	if err := dev.UseBLASLt(lt); err != nil {
		t.Fatal(err)
	}
	b, err := cuda.NewBackend(dev, kernels.PrecisionBF16)
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	if err := b.SetGEMMLibrary(cuda.GEMMCublasLt); err != nil {
		b.Close()
		t.Fatal(err)
	}
	return b, blas, lt
}

// TestLinearBF16ThroughLt runs kerneltest's bf16-weight linear group with
// the GEMMs on cuBLASLt (the fake's checks on every descriptor), then one
// forward and backward on operands at odd offsets against a backend on
// cublasGemmEx: the same bits, the products in cublasLtMatmul and none of
// them in GemmEx, and a second pass reusing the heuristic's plans.
func TestLinearBF16ThroughLt(t *testing.T) {
	t.Parallel()
	bl, blasLt, lt := emulatedBackendLt(t)
	defer bl.Close()
	kerneltest.RunOps(t, bl, "LinearBF16")
	if lt.Matmuls() == 0 {
		t.Fatal("no cublasLtMatmul call in the LinearBF16 group")
	}
	for _, g := range blasLt.GemmTypes() {
		if g.A == cuda.R16BF {
			t.Fatalf("a bfloat16 GemmEx ran with cuBLASLt picked: %+v", g)
		}
	}
	be, _, blas := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer be.Close()
	if be.GEMMLibrary() != cuda.GEMMCublas || bl.GEMMLibrary() != cuda.GEMMCublasLt {
		t.Fatalf("GEMM libraries %q and %q", be.GEMMLibrary(), bl.GEMMLibrary())
	}

	r := rand.New(rand.NewPCG(7, 8))
	const N, C, OC = 9, 24, 17
	inp, w, bias, dout := randn(r, N*C), randn(r, OC*C), randn(r, OC), randn(r, N*OC)
	wh := make([]uint16, OC*C)
	kernels.ToBF16(wh, w)
	run := func(b *cuda.Backend) (out, dinp []float32) {
		f32 := func(x []float32) []float32 { // a view at an odd offset
			s, err := b.AllocF32(len(x) + 1)
			if err != nil {
				t.Fatal(err)
			}
			copy(s[1:], x)
			return s[1:]
		}
		wb, err := b.AllocBF16(len(wh) + 1)
		if err != nil {
			t.Fatal(err)
		}
		copy(wb[1:], wh)
		o, di := f32(make([]float32, N*OC)), f32(randn(rand.New(rand.NewPCG(9, 9)), N*C))
		for range 2 {
			b.LinearForwardBF16(o, f32(inp), wb[1:], f32(bias), N, C, OC)
			b.LinearBackwardBF16(di, f32(dout), wb[1:], N, C, OC)
		}
		return append([]float32(nil), o...), append([]float32(nil), di...)
	}
	before, heur := lt.Matmuls(), bl.Device().LtHeuristicCalls()
	gotOut, gotDinp := run(bl)
	if n := lt.Matmuls() - before; n != 4 {
		t.Errorf("%d cublasLtMatmul calls for two forward and backward passes, want 4", n)
	}
	if n := bl.Device().LtHeuristicCalls() - heur; n > 2 {
		t.Errorf("%d heuristic calls for two shapes run twice", n)
	}
	gemmsBefore := len(blas.Gemms())
	wantOut, wantDinp := run(be)
	if len(blas.Gemms()) == gemmsBefore {
		t.Fatal("the cublasGemmEx backend ran no GEMM")
	}
	for i := range wantOut {
		if gotOut[i] != wantOut[i] {
			t.Fatalf("LinearForwardBF16 out[%d] = %g through cuBLASLt, %g through GemmEx", i, gotOut[i], wantOut[i])
		}
	}
	for i := range wantDinp {
		if gotDinp[i] != wantDinp[i] {
			t.Fatalf("LinearBackwardBF16 dinp[%d] = %g through cuBLASLt, %g through GemmEx", i, gotDinp[i], wantDinp[i])
		}
	}
}

// TestSetGEMMLibrary: cuBLASLt cannot be picked on a device without it,
// nor an unknown library; the default is cublasGemmEx.
func TestSetGEMMLibrary(t *testing.T) {
	t.Parallel()
	b, _, _ := emulatedBackendIn(t, kernels.PrecisionBF16)
	defer b.Close()
	if got := b.GEMMLibrary(); got != cuda.GEMMCublas {
		t.Errorf("default GEMM library %q", got)
	}
	if err := b.SetGEMMLibrary(cuda.GEMMCublasLt); err == nil || !strings.Contains(err.Error(), "cuBLASLt was not loaded") {
		t.Errorf("cublaslt without cuBLASLt: %v", err)
	}
	if err := b.SetGEMMLibrary("cutlass"); err == nil || !strings.Contains(err.Error(), `unknown GEMM library "cutlass"`) {
		t.Errorf("unknown library: %v", err)
	}
	if got := b.GEMMLibrary(); got != cuda.GEMMCublas {
		t.Errorf("GEMM library %q after failed picks", got)
	}
}

// TestLinearBF16LtAutotuneStreamOrdered: the bf16 linear ops through
// cuBLASLt with the autotune on (three algorithms with their own bits,
// algorithm 1 the cheapest), stream-ordered on a deferred driver (the
// products, the timing runs and the events' records only queue). The
// first forward and backward — the backward's beta 1 product timed out of
// place — give the bits of the second (the plans), and not those of the
// heuristic's first algorithm (a backend with the autotune off); each
// shape is timed once.
func TestLinearBF16LtAutotuneStreamOrdered(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 22))
	const N, C, OC = 7, 64, 48
	inp, w, dout, di0 := randn(r, N*C), randn(r, OC*C), randn(r, N*OC), randn(r, N*C)
	wh := make([]uint16, OC*C)
	kernels.ToBF16(wh, w)
	passes := func(tune int) (outs, dinps [2][]float32, dev *cuda.Device, lt *cudafake.BLASLt) {
		drv := cudafake.NewEmulatedDriver(1, 0, loadEmulator(t))
		d, err := cuda.OpenWith(drv, cudafake.NewBLAS(drv), 0)
		if err != nil {
			t.Fatal(err)
		}
		lt = cudafake.NewBLASLt(drv)
		lt.SetAlgos(3, []float64{3, 1, 2})
		if err := d.UseBLASLt(lt); err != nil {
			t.Fatal(err)
		}
		b, err := cuda.NewBackend(d, kernels.PrecisionBF16)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		if err := b.SetGEMMLibrary(cuda.GEMMCublasLt); err != nil {
			t.Fatal(err)
		}
		b.SetGEMMAutotune(tune)
		if err := drv.SetDeferred(true); err != nil {
			t.Fatal(err)
		}
		b.SetSyncEachOp(false)
		alloc := func(x []float32) []float32 { return managedCopy(t, b, x) }
		wb, err := b.AllocBF16(len(wh))
		if err != nil {
			t.Fatal(err)
		}
		copy(wb, wh)
		x, dy := alloc(inp), alloc(dout)
		for pass := range 2 {
			o, di := alloc(make([]float32, N*OC)), alloc(di0)
			b.LinearForwardBF16(o, x, wb, nil, N, C, OC)
			b.LinearBackwardBF16(di, dy, wb, N, C, OC)
			b.Synchronize()
			outs[pass], dinps[pass] = slices.Clone(o), slices.Clone(di)
		}
		return outs, dinps, d, lt
	}
	outs, dinps, dev, lt := passes(cuda.LtAutotuneCandidates)
	if !sameBits(outs[0], outs[1]) || !sameBits(dinps[0], dinps[1]) {
		t.Error("the autotuned first pass and the second differ in bits")
	}
	if n := dev.LtTuned(); n != 2 {
		t.Errorf("%d shapes timed, want 2 (the forward and the backward product)", n)
	}
	// The forward's candidates in place (beta 0), its own run of algorithm
	// 1; the backward's candidates out of place (beta 1), its own run; the
	// second pass's two runs.
	var want []cudafake.LtRun
	for _, inPlace := range []bool{true, false} {
		for algo := range 3 {
			for range 4 {
				want = append(want, cudafake.LtRun{Algo: algo, InPlace: inPlace})
			}
		}
		want = append(want, cudafake.LtRun{Algo: 1, InPlace: true})
	}
	want = append(want, cudafake.LtRun{Algo: 1, InPlace: true}, cudafake.LtRun{Algo: 1, InPlace: true})
	if got := lt.Runs(); !slices.Equal(got, want) {
		t.Errorf("cublasLtMatmul runs %+v, want %+v", got, want)
	}
	offOuts, offDinps, _, _ := passes(1)
	if sameBits(outs[0], offOuts[0]) || sameBits(dinps[0], offDinps[0]) {
		t.Fatal("the autotuned and the heuristic's first algorithm gave the same bits: the test cannot tell them apart")
	}
	near(t, "autotuned forward vs the heuristic's first", outs[0], offOuts[0], 1e-5)
	near(t, "autotuned backward vs the heuristic's first", dinps[0], offDinps[0], 1e-5)
}
