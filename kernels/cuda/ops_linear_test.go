package cuda_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// TestOpsLinearLaunchGeometry: the launches of ops_misc.go, ops_linear.go
// and ops_logprob.go on the fake driver (their GEMMs are cuBLAS calls, not
// launches: TestLinearGemms).
func TestOpsLinearLaunchGeometry(t *testing.T) {
	bf16 := func(o *cuda.Ops) {
		if err := o.SetPrecision(kernels.PrecisionBF16); err != nil {
			t.Fatal(err)
		}
	}
	runOpsCases(t, []opsCase{
		{"GeGLUForward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.GeGLUForward(b(1000), b(1000), b(1000), 1000)
		}, []cudafake.Launch{launch("geglu_forward", dim(4, 1, 1), dim(256, 1, 1), 4)}},
		{"GeGLUBackward", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.GeGLUBackward(b(17), b(17), b(17), b(17), b(17), 17)
		}, []cudafake.Launch{launch("geglu_backward", dim(1, 1, 1), dim(256, 1, 1), 6)}},
		{"AddScalar in place", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			x := b(257)
			return o.AddScalar(x, x, 1, 257)
		}, []cudafake.Launch{launch("add_scalar", dim(2, 1, 1), dim(256, 1, 1), 4)}},
		{"Copy", func(o *cuda.Ops, b func(int) *cuda.Buffer) error { return o.Copy(b(20), b(17), 17) },
			[]cudafake.Launch{launch("copy_f32", dim(1, 1, 1), dim(256, 1, 1), 3)}},
		{"Zero", func(o *cuda.Ops, b func(int) *cuda.Buffer) error { return o.Zero(b(1<<21), 1<<21) },
			[]cudafake.Launch{launch("zero_f32", dim(4096, 1, 1), dim(256, 1, 1), 2)}},
		{"Zero n=0", func(o *cuda.Ops, b func(int) *cuda.Buffer) error { return o.Zero(b(0), 0) }, nil},
		{"LinearForward with bias", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LinearForward(b(5*7), b(5*3), b(7*3), b(7), 5, 3, 7)
		}, []cudafake.Launch{launch("bias_forward", dim(1, 1, 1), dim(256, 1, 1), 4)}},
		{"LinearForward no bias", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LinearForward(b(5*7), b(5*3), b(7*3), nil, 5, 3, 7)
		}, nil},
		{"LinearBackward all", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LinearBackward(b(9*4), b(70*4), b(70), b(9*70), b(9*4), b(70*4), 9, 4, 70)
		}, []cudafake.Launch{launch("bias_backward", dim(3, 1, 1), dim(32, 8, 1), 4)}},
		{"LinearBackward frozen", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LinearBackward(b(9*4), nil, nil, b(9*70), nil, b(70*4), 9, 4, 70)
		}, nil},
		{"LinearForwardBF16 exact", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LinearForwardBF16(b(2*5), b(2*3), b(8), b(5), 2, 3, 5)
		}, []cudafake.Launch{
			launch("bf16_to_f32", dim(1, 1, 1), dim(256, 1, 1), 4),
			launch("bias_forward", dim(1, 1, 1), dim(256, 1, 1), 4),
		}},
		{"LinearForwardBF16 bf16", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			bf16(o)
			return o.LinearForwardBF16(b(2*5), b(2*3), b(8), nil, 2, 3, 5)
		}, []cudafake.Launch{launch("f32_to_bf16", dim(1, 1, 1), dim(256, 1, 1), 3)}},
		{"LinearBackwardBF16 bf16", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			bf16(o)
			return o.LinearBackwardBF16(b(2*3), b(2*5), b(8), 2, 3, 5)
		}, []cudafake.Launch{launch("f32_to_bf16", dim(1, 1, 1), dim(256, 1, 1), 3)}},
		{"LogprobBackward chunks 8, 8, 4", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LogprobBackward(b(3*16), b(20*16), b(3), nil, b(3), b(3), b(3*16), b(20*16), b(3), 3, 16, 20, 8)
		}, []cudafake.Launch{
			launch("logprob_dz", dim(1, 1, 1), dim(256, 1, 1), 9),
			launch("logprob_dz", dim(1, 1, 1), dim(256, 1, 1), 9),
			launch("logprob_dz", dim(1, 1, 1), dim(256, 1, 1), 9),
		}},
		{"LogprobForwardBF16 exact, expect", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LogprobForwardBF16(b(2), b(2), b(2), b(2*4), b(2*4), b(10*2), b(2), 2, 4, 10, 6)
		}, []cudafake.Launch{
			launch("bf16_to_f32", dim(1, 1, 1), dim(256, 1, 1), 4),
			launch("logprob_chunk", dim(2, 1, 1), dim(32, 1, 1), 6),
			launch("bf16_to_f32", dim(1, 1, 1), dim(256, 1, 1), 4),
			launch("logprob_chunk", dim(2, 1, 1), dim(32, 1, 1), 6),
			launch("expect_scale", dim(2, 1, 1), dim(32, 1, 1), 3),
			launch("logprob_finish", dim(1, 1, 1), dim(256, 1, 1), 6),
			launch("logprob_expect", dim(2, 1, 1), dim(32, 1, 1), 3),
		}},
		{"LogprobBackwardBF16 bf16", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			bf16(o)
			return o.LogprobBackwardBF16(b(2*4), b(2), b(2), b(2), b(2), b(2*4), b(10*2), b(2), 2, 4, 10, 0)
		}, []cudafake.Launch{
			launch("f32_to_bf16", dim(1, 1, 1), dim(256, 1, 1), 3),
			launch("logprob_dz", dim(1, 1, 1), dim(256, 1, 1), 9),
			launch("f32_to_bf16", dim(1, 1, 1), dim(256, 1, 1), 3),
		}},
		{"LogprobBackwardExpectBF16", func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			return o.LogprobBackwardExpectBF16(b(5*896), b(5), b(5*896), b(50*896), b(5), 5, 896, 100)
		}, []cudafake.Launch{launch("logprob_bwd_expect_bf16", dim(5, 1, 1), dim(256, 1, 1), 7)}},
	})
}

// TestLinearGemms: the row-major GEMMs of the Linear ops reach cuBLAS as
// the column-major calls of the package doc (operands swapped, leading
// dimensions the row strides), bfloat16 products as cublasGemmEx with
// CUDA_R_16BF operands, float32 C and CUBLAS_COMPUTE_32F. The fake driver
// runs no kernels, so only the ops made of GEMMs alone (LinearForward
// without bias, LinearBackward's dinp and dweight) are checked against ref
// here; the shim tests run the rest.
func TestLinearGemms(t *testing.T) {
	dev, o, _, blas := openFakeOps(t)
	r := rand.New(rand.NewPCG(28, 12))
	const N, C, OC = 3, 5, 7
	inp, w, dout, dinp, dw := randn(r, N*C), randn(r, OC*C), randn(r, N*OC), randn(r, N*C), randn(r, OC*C)
	dIn, dW, dOut, dDout, dDinp, dDw := upload(t, dev, inp), upload(t, dev, w), upload(t, dev, make([]float32, N*OC)), upload(t, dev, dout), upload(t, dev, dinp), upload(t, dev, dw)
	if err := o.LinearForward(dOut, dIn, dW, nil, N, C, OC); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, N*OC)
	ref.New().LinearForward(want, inp, w, nil, N, C, OC)
	near(t, "LinearForward", download(t, dOut), want, kerneltest.F32Tol)
	if err := o.LinearBackward(dDinp, dDw, nil, dDout, dIn, dW, N, C, OC); err != nil {
		t.Fatal(err)
	}
	wdi, wdw := append([]float32(nil), dinp...), append([]float32(nil), dw...)
	ref.New().LinearBackward(wdi, wdw, nil, dout, inp, w, N, C, OC)
	near(t, "LinearBackward dinp", download(t, dDinp), wdi, kerneltest.F32Tol)
	near(t, "LinearBackward dweight", download(t, dDw), wdw, kerneltest.F32Tol)

	wh, err := dev.Alloc((OC*C + 1) / 2)
	if err != nil {
		t.Fatal(err)
	}
	live, _ := dev.Live()
	for _, prec := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		if err := o.SetPrecision(prec); err != nil {
			t.Fatal(err)
		}
		if err := o.LinearForwardBF16(dOut, dIn, wh, nil, N, C, OC); err != nil {
			t.Fatal(err)
		}
		if err := o.LinearBackwardBF16(dDinp, dDout, wh, N, C, OC); err != nil {
			t.Fatal(err)
		}
	}
	// The scratch is Ops' one slot, kept for the next call (scratch.go).
	if sn, _ := o.ScratchLive(); sn != 1 {
		t.Errorf("Ops holds %d scratch buffers after the ops, want 1", sn)
	}
	if n, _ := dev.Live(); n != live+1 {
		t.Errorf("%d buffers live after the ops, %d before: want the one scratch buffer more", n, live)
	}

	f32 := cuda.GemmTypes{A: cuda.R32F, B: cuda.R32F, C: cuda.R32F, Compute: cuda.Compute32F}
	b16 := cuda.GemmTypes{A: cuda.R16BF, B: cuda.R16BF, C: cuda.R32F, Compute: cuda.Compute32F}
	// Forward: out [N,OC] = x [N,C]·w [OC,C]ᵀ is the column-major
	// outᵀ [OC,N] = w·xᵀ: m = OC, n = N, k = C, w transposed (ld C), x as is (ld C).
	fwd := cuda.Gemm{TransA: cuda.OpT, TransB: cuda.OpN, M: OC, N: N, K: C, Alpha: 1, LDA: C, LDB: C, LDC: OC}
	// dinp [N,C] += d [N,OC]·w [OC,C]: m = C, n = N, k = OC, w (ld C), d (ld OC).
	bwd := cuda.Gemm{TransA: cuda.OpN, TransB: cuda.OpN, M: C, N: N, K: OC, Alpha: 1, Beta: 1, LDA: C, LDB: OC, LDC: C}
	// dweight [OC,C] += dᵀ [OC,N]·x [N,C]: m = C, n = OC, k = N, x (ld C), d transposed (ld OC).
	dwt := cuda.Gemm{TransA: cuda.OpN, TransB: cuda.OpT, M: C, N: OC, K: N, Alpha: 1, Beta: 1, LDA: C, LDB: OC, LDC: C}
	g, ty := blas.Gemms(), blas.GemmTypes()
	wantG := []cuda.Gemm{fwd, bwd, dwt, fwd, bwd, fwd, bwd}
	wantT := []cuda.GemmTypes{f32, f32, f32, f32, f32, b16, b16}
	if len(g) != len(wantG) || len(ty) != len(wantG) {
		t.Fatalf("%d GEMMs (%d types), want %d", len(g), len(ty), len(wantG))
	}
	for i, want := range wantG {
		got := g[i]
		if got.TransA != want.TransA || got.TransB != want.TransB || got.M != want.M || got.N != want.N || got.K != want.K ||
			got.Alpha != want.Alpha || got.Beta != want.Beta || got.LDA != want.LDA || got.LDB != want.LDB || got.LDC != want.LDC {
			t.Errorf("GEMM %d: %+v, want %+v", i, got, want)
		}
		if ty[i] != wantT[i] {
			t.Errorf("GEMM %d: types %+v, want %+v", i, ty[i], wantT[i])
		}
	}
	// The exact mode reads the widened scratch, the bf16 mode the weight
	// itself: two different addresses for cuBLAS's A.
	if g[3].A == g[5].A {
		t.Errorf("the exact and bf16 modes' forward read the same weight operand %#x", g[3].A)
	}
}

// TestLinearChunkMapping: the exact mode's chunked GEMMs write output
// columns o0 … o0+l−1 of out (offset o0, row stride OC) and read dout's
// (offset o0, row stride OC); colMajor maps them with ldc (ldb) = OC.
func TestLinearChunkMapping(t *testing.T) {
	const N, C, OC, rows = 2, 3, 7, 3
	var gs []cuda.Mm
	for _, s := range cuda.PlanLinearForwardBF16("out", "inp", "w", "bias", "wf", "xb", false, 0, kernels.PrecisionF32, N, C, OC, rows) {
		if _, g := cuda.StepParts(s); g != nil {
			gs = append(gs, *g)
		}
	}
	if len(gs) != 3 {
		t.Fatalf("%d GEMMs for %d rows in chunks of %d, want 3", len(gs), OC, rows)
	}
	for i, l := range []int{3, 3, 1} {
		g := gs[i]
		if g.OffC != 3*i || g.LDC != OC || g.N != l || g.K != C || !g.TransB || g.B != "wf" || g.BF16 {
			t.Errorf("forward chunk %d: %+v", i, g)
		}
		c, ty := cuda.MmColMajor(g)
		if c.M != l || c.N != N || c.LDC != OC || c.LDA != C || c.LDB != C || c.TransA != cuda.OpT || ty.A != cuda.R32F {
			t.Errorf("forward chunk %d column-major: %+v %+v", i, c, ty)
		}
	}
	gs = gs[:0]
	for _, s := range cuda.PlanLinearBackwardBF16("dinp", "dout", "w", "wf", "db", kernels.PrecisionF32, N, C, OC, rows) {
		if _, g := cuda.StepParts(s); g != nil {
			gs = append(gs, *g)
		}
	}
	for i, l := range []int{3, 3, 1} {
		g := gs[i]
		if g.OffA != 3*i || g.LDA != OC || g.K != l || g.Beta != 1 {
			t.Errorf("backward chunk %d: %+v", i, g)
		}
		if c, _ := cuda.MmColMajor(g); c.LDB != OC || c.K != l || c.M != C || c.LDA != C || c.Beta != 1 {
			t.Errorf("backward chunk %d column-major: %+v", i, c)
		}
	}
}

// TestLinearErrors: a failing GemmEx comes back naming the op and the
// cuBLAS status, and the op's scratch is Ops' one kept slot; bad arguments are refused
// before anything runs.
func TestLinearErrors(t *testing.T) {
	dev, o, drv, blas := openFakeOps(t)
	b := deviceAlloc(t, dev)
	out, inp, w, bias := b(2*5), b(2*3), b(8), b(5)
	if err := o.SetPrecision(kernels.PrecisionBF16); err != nil {
		t.Fatal(err)
	}
	live, _ := dev.Live()
	blas.FailNext("cublasGemmEx", 13)
	err := o.LinearForwardBF16(out, inp, w, bias, 2, 3, 5)
	if err == nil || !strings.Contains(err.Error(), "CUDA LinearForwardBF16: GEMM M=2 N=5 K=3: cublasGemmEx: CUBLAS_STATUS_EXECUTION_FAILED") {
		t.Errorf("failing GemmEx: %v", err)
	}
	if sn, _ := o.ScratchLive(); sn != 1 {
		t.Errorf("Ops holds %d scratch buffers after the failure, want 1", sn)
	}
	if n, _ := dev.Live(); n != live+1 {
		t.Errorf("%d buffers live after the failure, %d before: want the one scratch buffer more", n, live)
	}
	if err := o.SetPrecision(kernels.Precision(7)); err == nil || o.Precision() != kernels.PrecisionBF16 {
		t.Errorf("SetPrecision(7): %v, precision now %v", err, o.Precision())
	}
	n := len(drv.Launches())
	for _, c := range []struct {
		name string
		call func() error
		says string
	}{
		{"short bias", func() error { return o.LinearForward(b(6), b(4), b(6), b(2), 2, 2, 3) }, "CUDA LinearForward: bias has 2 elements, shape needs 3"},
		{"short bf16 weight", func() error { return o.LinearForwardBF16(b(10), b(6), b(7), nil, 2, 3, 5) },
			"CUDA LinearForwardBF16: weight has 7 elements, shape needs 8"},
		{"dweight without inp", func() error { return o.LinearBackward(nil, b(6), nil, b(6), nil, nil, 2, 2, 3) },
			"CUDA LinearBackward: inp is nil"},
		{"negative OC", func() error { return o.LinearBackwardBF16(b(6), b(6), b(6), 2, 3, -1) }, "negative size in N, OC = [2 -1]"},
		{"short dweight", func() error {
			return o.LogprobBackward(b(2*4), b(10*4-1), nil, nil, b(2), b(2), b(2*4), b(10*4), b(2), 2, 4, 10, 0)
		}, "CUDA LogprobBackward: dweight has 39 elements, shape needs 40"},
		{"LogprobForwardBF16 C=0", func() error {
			return o.LogprobForwardBF16(b(1), b(1), b(1), nil, b(1), b(1), b(1), 1, 0, 3, 0)
		}, "CUDA LogprobForwardBF16: V = 3, C = 0: want at least 1"},
		{"short expect", func() error { return o.LogprobBackwardExpectBF16(b(2), b(1), b(1), b(3), b(1), 1, 2, 3) },
			"CUDA LogprobBackwardExpectBF16: expect has 1 elements, shape needs 2"},
	} {
		if err := c.call(); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.says)
		}
	}
	if l := drv.Launches(); len(l) != n {
		t.Errorf("refused calls launched %+v", l[n:])
	}
}

// TestFakeGemmExTypes: the fake cuBLAS (Go and C) refuses the type
// combinations it does not compute, as CUBLAS_STATUS_NOT_SUPPORTED; and
// the C fake's GemmEx, through the loader, multiplies bfloat16 operands.
func TestFakeGemmExTypes(t *testing.T) {
	dev, _, blas := openFake(t, 0)
	defer dev.Close()
	h, err := blas.Create()
	if err != nil {
		t.Fatal(err)
	}
	g := cuda.Gemm{TransA: cuda.OpN, TransB: cuda.OpN, M: 1, N: 1, K: 1, Alpha: 1, LDA: 1, LDB: 1, LDC: 1}
	var ce *cuda.Error
	if err := blas.GemmEx(h, g, cuda.GemmTypes{A: cuda.R32F, B: cuda.R16BF, C: cuda.R32F, Compute: cuda.Compute32F}); !errors.As(err, &ce) || ce.Name != "CUBLAS_STATUS_NOT_SUPPORTED" {
		t.Errorf("mixed types: %v", err)
	}

	drv, lb, lh := loadFakeBLAS(t, fakeLibs(t))
	// Column-major A [2,3] = [[1 2 3] [4 5 6]], B [3,2] = [[1 0] [0 1] [1 1]]
	// in bfloat16 (exact): A·B = [[4 5] [10 11]]; alpha 2, beta 1 onto C = 1s.
	pa, pb, pc := devicePtr(t, drv, bf16bytes(1, 4, 2, 5, 3, 6)), devicePtr(t, drv, bf16bytes(1, 0, 1, 0, 1, 1)), devicePtr(t, drv, f32bytes([]float32{1, 1, 1, 1}))
	lg := cuda.Gemm{TransA: cuda.OpN, TransB: cuda.OpN, M: 2, N: 2, K: 3, Alpha: 2, Beta: 1, A: pa, LDA: 2, B: pb, LDB: 3, C: pc, LDC: 2}
	types := cuda.GemmTypes{A: cuda.R16BF, B: cuda.R16BF, C: cuda.R32F, Compute: cuda.Compute32F}
	if err := lb.GemmEx(lh, lg, types); err != nil {
		t.Fatal(err)
	}
	c := readF32(t, drv, pc, 4)
	if want := []float32{9, 21, 11, 23}; !slices.Equal(c, want) {
		t.Errorf("GemmEx through the loader: C = %v, want %v", c, want)
	}
	types.Compute = cuda.Compute32FFastTF32 // on bfloat16 operands, which the backend does not use
	if err := lb.GemmEx(lh, lg, types); !errors.As(err, &ce) || !strings.Contains(err.Error(), "cublasGemmEx: CUBLAS_STATUS_NOT_SUPPORTED") {
		t.Errorf("TF32 compute on the C fake: %v", err)
	}
}

// TestLogprobBackwardGemms: LogprobBackward's GEMMs per chunk of len rows
// are the logits z [N,len] = hidden·w[j0:]ᵀ, dhidden += dz·w[j0:] and
// dweight[j0:] += dzᵀ·hidden, with the weight and dweight pointers
// stepping by len·C floats; LogprobBackwardBF16 in the bf16 precision
// makes the first two as GemmEx on the bfloat16 weight, stepping by
// len·C bfloat16 values (2 bytes each).
func TestLogprobBackwardGemms(t *testing.T) {
	dev, o, _, blas := openFakeOps(t)
	const N, C, V, chunk = 3, 16, 20, 8
	b := deviceAlloc(t, dev)
	dh, dw, lse, ent, hidden, w, tg, wh := b(N*C), b(V*C), b(N), b(N), b(N*C), b(V*C), b(N), b(V*C/2)
	if err := o.LogprobBackward(dh, dw, nil, nil, lse, ent, hidden, w, tg, N, C, V, chunk); err != nil {
		t.Fatal(err)
	}
	if err := o.SetPrecision(kernels.PrecisionBF16); err != nil {
		t.Fatal(err)
	}
	if err := o.LogprobBackwardBF16(dh, nil, nil, lse, ent, hidden, wh, tg, N, C, V, chunk); err != nil {
		t.Fatal(err)
	}
	g, ty := blas.Gemms(), blas.GemmTypes()
	if len(g) != 9+6 {
		t.Fatalf("%d GEMMs, want 9 (f32, 3 chunks) + 6 (bf16)", len(g))
	}
	lens := []int{8, 8, 4}
	for i, l := range lens {
		z, dhid, dwt := g[3*i], g[3*i+1], g[3*i+2]
		// z [N,l] = hidden·w[j0:]ᵀ: m = l, n = N, k = C, w transposed.
		if z.M != l || z.N != N || z.K != C || z.TransA != cuda.OpT || z.Beta != 0 {
			t.Errorf("chunk %d logits: %+v", i, z)
		}
		// dhidden [N,C] += dz [N,l]·w[j0:] [l,C]: m = C, n = N, k = l.
		if dhid.M != C || dhid.N != N || dhid.K != l || dhid.TransA != cuda.OpN || dhid.Beta != 1 || dhid.LDB != l {
			t.Errorf("chunk %d dhidden: %+v", i, dhid)
		}
		// dweight[j0:] [l,C] += dzᵀ [l,N]·hidden [N,C]: m = C, n = l, k = N, dz transposed.
		if dwt.M != C || dwt.N != l || dwt.K != N || dwt.TransB != cuda.OpT || dwt.Beta != 1 || dwt.LDB != l {
			t.Errorf("chunk %d dweight: %+v", i, dwt)
		}
		if i > 0 {
			prev := g[3*(i-1):]
			if z.A-prev[0].A != cuda.DevPtr(4*chunk*C) || dhid.A-prev[1].A != cuda.DevPtr(4*chunk*C) || dwt.C-prev[2].C != cuda.DevPtr(4*chunk*C) {
				t.Errorf("chunk %d: weight at +%d, +%d, dweight at +%d bytes, want +%d", i, z.A-prev[0].A, dhid.A-prev[1].A, dwt.C-prev[2].C, 4*chunk*C)
			}
		}
	}
	for i, l := range lens {
		z, dhid := g[9+2*i], g[9+2*i+1]
		b16 := cuda.GemmTypes{A: cuda.R16BF, B: cuda.R16BF, C: cuda.R32F, Compute: cuda.Compute32F}
		if ty[9+2*i] != b16 || ty[9+2*i+1] != b16 {
			t.Errorf("bf16 chunk %d: types %+v, %+v", i, ty[9+2*i], ty[9+2*i+1])
		}
		if z.M != l || z.N != N || z.K != C || dhid.M != C || dhid.K != l {
			t.Errorf("bf16 chunk %d: %+v, %+v", i, z, dhid)
		}
		if i > 0 {
			if step := z.A - g[9+2*(i-1)].A; step != cuda.DevPtr(2*chunk*C) {
				t.Errorf("bf16 chunk %d: the weight %d bytes on, want %d", i, step, 2*chunk*C)
			}
		}
	}
}
