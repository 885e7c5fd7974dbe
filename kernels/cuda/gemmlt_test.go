package cuda_test

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
)

// openFakeLt is openFake with a fake cuBLASLt bound.
func openFakeLt(t *testing.T) (*cuda.Device, *cudafake.BLASLt) {
	t.Helper()
	dev, drv, _ := openFake(t, 0)
	lt := cudafake.NewBLASLt(drv)
	if err := dev.UseBLASLt(lt); err != nil {
		t.Fatal(err)
	}
	return dev, lt
}

// uploadRoundedBF16 allocates a buffer holding x rounded to bfloat16.
func uploadRoundedBF16(t *testing.T, dev *cuda.Device, x []float32) *cuda.Buffer {
	t.Helper()
	h := make([]uint16, len(x))
	kernels.ToBF16(h, x)
	return uploadBF16(t, dev, h)
}

// TestMatmulBF16LtMatchesGemmEx runs every transpose combination (and
// beta 1) through cublasGemmEx and through cublasLtMatmul on the fakes:
// the same column-major arguments, so the same bits; a second run of a
// shape reuses its plan (no second heuristic call), and Close destroys
// every descriptor.
func TestMatmulBF16LtMatchesGemmEx(t *testing.T) {
	dev, lt := openFakeLt(t)
	r := rand.New(rand.NewPCG(1, 2))
	const M, N, K = 5, 7, 9
	ws, err := dev.Alloc(cuda.LtWorkspaceBytes / 4 / 64)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			for _, beta := range []float32{0, 1} {
				a := uploadRoundedBF16(t, dev, randn(r, M*K))
				b := uploadRoundedBF16(t, dev, randn(r, K*N))
				c0 := randn(r, M*N)
				c1, c2 := upload(t, dev, c0), upload(t, dev, c0)
				if err := dev.MatmulBF16(c1, a, b, M, N, K, ta, tb, beta); err != nil {
					t.Fatal(err)
				}
				for range 2 {
					if err := c2.Upload(c0); err != nil {
						t.Fatal(err)
					}
					if err := dev.MatmulBF16Lt(c2, a, b, ws, M, N, K, ta, tb, beta); err != nil {
						t.Fatalf("transA=%v transB=%v beta=%g: %v", ta, tb, beta, err)
					}
				}
				calls++
				got, want := download(t, c2), download(t, c1)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("transA=%v transB=%v beta=%g: [%d] = %g through cuBLASLt, %g through GemmEx", ta, tb, beta, i, got[i], want[i])
					}
				}
				for _, x := range []*cuda.Buffer{a, b, c1, c2} {
					if err := x.Free(); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	// The plans are keyed by shape and alignment: beta does not change the
	// plan, the four transpose combinations do (the fresh buffers may
	// differ in alignment, which adds plans, never removes them).
	if h := dev.LtHeuristicCalls(); h < 4 || h > calls {
		t.Errorf("%d heuristic calls for %d shapes run twice each", h, calls)
	}
	if lt.Matmuls() != 2*calls {
		t.Errorf("%d cublasLtMatmul calls, want %d", lt.Matmuls(), 2*calls)
	}
	if err := ws.Free(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if n := lt.Live(); n != 0 {
		t.Errorf("%d cuBLASLt handles or descriptors left after Close", n)
	}
}

// TestMatmulBF16LtWorkspace: an algorithm that needs more workspace than
// the call hands cublasLtMatmul fails in the fake as on a GPU, and with no
// workspace the heuristic picks one that needs none.
func TestMatmulBF16LtWorkspace(t *testing.T) {
	dev, lt := openFakeLt(t)
	defer dev.Close()
	r := rand.New(rand.NewPCG(3, 4))
	a, b := uploadRoundedBF16(t, dev, randn(r, 12)), uploadRoundedBF16(t, dev, randn(r, 12))
	c := upload(t, dev, make([]float32, 9))
	if err := dev.MatmulBF16Lt(c, a, b, nil, 3, 3, 4, false, false, 0); err != nil {
		t.Fatalf("no workspace: %v", err)
	}
	// A direct call with an algorithm wanting 1 MiB and 4 KiB handed over.
	h, _ := lt.Create()
	desc, _ := lt.MatmulDescCreate(cuda.Compute32F, cuda.R32F)
	la, _ := lt.MatrixLayoutCreate(cuda.R16BF, 3, 4, 3)
	lb, _ := lt.MatrixLayoutCreate(cuda.R16BF, 4, 3, 4)
	lc, _ := lt.MatrixLayoutCreate(cuda.R32F, 3, 3, 3)
	pref, _ := lt.MatmulPreferenceCreate()
	if err := lt.MatmulPreferenceSetAttribute(pref, cuda.LtPrefMaxWorkspaceBytes, 1<<20); err != nil {
		t.Fatal(err)
	}
	res, err := lt.MatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, pref, 1)
	if err != nil || len(res) != 1 || res[0].WorkspaceSize != 1<<20 {
		t.Fatalf("heuristic: %v, %+v", err, res)
	}
	ws, err := dev.Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	m := cuda.LtMatmul{Desc: desc, Alpha: 1, A: 0, ALayout: la, BLayout: lb, CLayout: lc, DLayout: lc, Algo: res[0].Algo,
		Workspace: 1, WorkspaceBytes: 4096}
	var ce *cuda.Error
	if err := lt.Matmul(h, m); !errors.As(err, &ce) || ce.Code != cuda.BLASStatusInvalidValue || !strings.Contains(err.Error(), "needs 1048576") {
		t.Errorf("a 4 KiB workspace for an algorithm needing 1 MiB: %v", err)
	}
	// Layouts that do not make a product: A 3×4 with a 3×3 B.
	lbad, _ := lt.MatrixLayoutCreate(cuda.R16BF, 3, 3, 3)
	if _, err := lt.MatmulAlgoGetHeuristic(h, desc, la, lbad, lc, lc, pref, 1); err == nil || !strings.Contains(err.Error(), "do not make a product") {
		t.Errorf("inconsistent layouts: %v", err)
	}
	// An algorithm given for other layouts.
	lb2, _ := lt.MatrixLayoutCreate(cuda.R16BF, 4, 3, 8)
	m.BLayout, m.WorkspaceBytes = lb2, 1<<20
	if err := lt.Matmul(h, m); err == nil || !strings.Contains(err.Error(), "not chosen for these descriptors") {
		t.Errorf("algorithm of another shape: %v", err)
	}
	_ = ws.Free()
}

// TestMatmulBF16LtMissing: without cuBLASLt bound, the Lt path says so
// and MatmulBF16 (cublasGemmEx) still runs.
func TestMatmulBF16LtMissing(t *testing.T) {
	dev, _, _ := openFake(t, 0)
	defer dev.Close()
	a, b := upload(t, dev, make([]float32, 8)), upload(t, dev, make([]float32, 8))
	c := upload(t, dev, make([]float32, 16))
	if err := dev.MatmulBF16Lt(c, a, b, nil, 4, 4, 4, false, false, 0); err == nil || !strings.Contains(err.Error(), "cuBLASLt was not loaded") {
		t.Errorf("Lt without cuBLASLt: %v", err)
	}
	if ok, err := dev.HasBLASLt(); ok || err == nil {
		t.Errorf("HasBLASLt = %v, %v", ok, err)
	}
	if err := dev.MatmulBF16(c, a, b, 4, 4, 4, false, false, 0); err != nil {
		t.Fatal(err)
	}
}

// TestMatmulBF16LtThroughLoader opens the C stand-ins through the real
// loader with cuBLASLt asked for (Options.BLASLtLib) and runs every
// transpose combination through cublasLtMatmul (purego's 16-argument call,
// the heuristic's 96-byte results) and through cublasGemmEx: the same bits.
// The fake libcuda ends with no allocation once Close destroyed the plans.
func TestMatmulBF16LtThroughLoader(t *testing.T) {
	libs := fakeLibs(t)
	_, live := fakeHooks(t, libs.Driver)
	dev, err := cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS, BLASLtLib: libs.BLASLt})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := dev.HasBLASLt(); !ok {
		t.Fatalf("cuBLASLt not bound: %v", err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	const M, N, K = 6, 5, 11
	ws, err := dev.Alloc(1 << 18) // 1 MiB, what the fake's algorithm asks for
	if err != nil {
		t.Fatal(err)
	}
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			a, b := uploadRoundedBF16(t, dev, randn(r, M*K)), uploadRoundedBF16(t, dev, randn(r, K*N))
			c0 := randn(r, M*N)
			c1, c2 := upload(t, dev, c0), upload(t, dev, c0)
			if err := dev.MatmulBF16(c1, a, b, M, N, K, ta, tb, 1); err != nil {
				t.Fatal(err)
			}
			if err := dev.MatmulBF16Lt(c2, a, b, ws, M, N, K, ta, tb, 1); err != nil {
				t.Fatalf("transA=%v transB=%v: %v", ta, tb, err)
			}
			got, want := download(t, c2), download(t, c1)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("transA=%v transB=%v: [%d] = %g through cuBLASLt, %g through GemmEx", ta, tb, i, got[i], want[i])
				}
			}
			for _, x := range []*cuda.Buffer{a, b, c1, c2} {
				if err := x.Free(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// A 64-byte workspace: the heuristic picks an algorithm within it.
	small, err := dev.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := upload(t, dev, make([]float32, 8)), upload(t, dev, make([]float32, 8)), upload(t, dev, make([]float32, 16))
	if err := dev.MatmulBF16Lt(c, a, b, small, 4, 4, 4, false, false, 0); err != nil {
		t.Fatalf("64-byte workspace: %v", err)
	}
	for _, x := range []*cuda.Buffer{a, b, c, ws, small} {
		if err := x.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if n := live(); n != 0 {
		t.Errorf("%d allocations left in the fake driver", n)
	}
}

// TestOpenBLASLtMissing: asked for cuBLASLt that is not there, Open still
// opens the device (cublasGemmEx runs its GEMMs), and HasBLASLt hands back
// the *MissingError, which says the backend keeps cublasGemmEx.
func TestOpenBLASLtMissing(t *testing.T) {
	libs := fakeLibs(t)
	nowhere := filepath.Join(t.TempDir(), "libcublasLt.so.13")
	dev, err := cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS, BLASLtLib: nowhere})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ok, err := dev.HasBLASLt()
	if ok {
		t.Fatal("cuBLASLt bound from a path that does not exist")
	}
	m := asMissing(t, err, "cuBLASLt library")
	if !slices.Equal(m.Tried, []string{nowhere}) || !m.Optional || !strings.HasPrefix(err.Error(), "optional CUDA library unavailable: no cuBLASLt library") ||
		!strings.Contains(err.Error(), "keeps cublasGemmEx") {
		t.Errorf("tried %q, message %q", m.Tried, err)
	}
	// The fake cuBLAS offered as cuBLASLt lacks its entry points.
	if _, err := cuda.LoadBLASLt(libs.BLAS); err == nil || !strings.Contains(err.Error(), "missing symbol cublasLtCreate") {
		t.Errorf("cuBLAS as cuBLASLt: %v", err)
	}
}

// TestBLASLtThroughLoaderChecks calls the C stand-in's entry points
// directly: an algorithm needing 1 MiB of workspace with 4 KiB handed over,
// and an algorithm chosen for other layouts, are refused with
// CUBLAS_STATUS_INVALID_VALUE (status names through
// cublasLtGetStatusName); layouts that make no product fail the heuristic.
func TestBLASLtThroughLoaderChecks(t *testing.T) {
	libs := fakeLibs(t)
	lt, err := cuda.LoadBLASLt(libs.BLASLt)
	if err != nil {
		t.Fatal(err)
	}
	h, err := lt.Create()
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Destroy(h)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	desc, err := lt.MatmulDescCreate(cuda.Compute32F, cuda.R32F)
	must(err)
	defer lt.MatmulDescDestroy(desc)
	must(lt.MatmulDescSetAttribute(desc, cuda.LtDescTransA, int32(cuda.OpT)))
	la, err := lt.MatrixLayoutCreate(cuda.R16BF, 4, 3, 4) // op(A) = Aᵀ: 3×4
	must(err)
	lb, err := lt.MatrixLayoutCreate(cuda.R16BF, 4, 2, 4)
	must(err)
	lc, err := lt.MatrixLayoutCreate(cuda.R32F, 3, 2, 3)
	must(err)
	pref, err := lt.MatmulPreferenceCreate()
	must(err)
	must(lt.MatmulPreferenceSetAttribute(pref, cuda.LtPrefMaxWorkspaceBytes, 1<<20))
	must(lt.MatmulPreferenceSetAttribute(pref, cuda.LtPrefMinAlignA, 16))
	res, err := lt.MatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, pref, 4)
	if err != nil || len(res) != 1 || res[0].State != 0 || res[0].WorkspaceSize != 1<<20 {
		t.Fatalf("heuristic: %v, %+v", err, res)
	}
	var ce *cuda.Error
	m := cuda.LtMatmul{Desc: desc, Alpha: 1, ALayout: la, BLayout: lb, CLayout: lc, DLayout: lc, Algo: res[0].Algo, Workspace: 1, WorkspaceBytes: 4096}
	if err := lt.Matmul(h, m); !errors.As(err, &ce) || ce.Code != cuda.BLASStatusInvalidValue || ce.Name != "CUBLAS_STATUS_INVALID_VALUE" {
		t.Errorf("4 KiB workspace for a 1 MiB algorithm: %v", err)
	}
	lb2, err := lt.MatrixLayoutCreate(cuda.R16BF, 4, 2, 8)
	must(err)
	m.BLayout, m.WorkspaceBytes = lb2, 1<<20
	if err := lt.Matmul(h, m); !errors.As(err, &ce) || ce.Code != cuda.BLASStatusInvalidValue {
		t.Errorf("an algorithm of other layouts: %v", err)
	}
	if _, err := lt.MatmulAlgoGetHeuristic(h, desc, lb, lb, lc, lc, pref, 1); !errors.As(err, &ce) || ce.Code != cuda.BLASStatusInvalidValue {
		t.Errorf("layouts that make no product: %v", err)
	}
	for _, l := range []cuda.LtLayout{la, lb, lc, lb2} {
		must(lt.MatrixLayoutDestroy(l))
	}
	must(lt.MatmulPreferenceDestroy(pref))
}

// TestMatmulBF16LtPlanBound: past the plan bound every plan is dropped
// (their descriptors destroyed) and the next shapes plan afresh, with the
// same results; the fake's live descriptors stay bounded.
func TestMatmulBF16LtPlanBound(t *testing.T) {
	dev, lt := openFakeLt(t)
	dev.SetLtMaxPlans(2)
	r := rand.New(rand.NewPCG(11, 12))
	const C, OC = 16, 8
	w := uploadRoundedBF16(t, dev, randn(r, OC*C))
	peak := 0
	for round := range 2 {
		for N := 1; N <= 5; N++ { // five shapes: the packed token count changing
			x := uploadRoundedBF16(t, dev, randn(r, N*C))
			c1, c2 := upload(t, dev, make([]float32, N*OC)), upload(t, dev, make([]float32, N*OC))
			if err := dev.MatmulBF16(c1, x, w, N, OC, C, false, true, 0); err != nil {
				t.Fatal(err)
			}
			if err := dev.MatmulBF16Lt(c2, x, w, nil, N, OC, C, false, true, 0); err != nil {
				t.Fatalf("round %d N=%d: %v", round, N, err)
			}
			got, want := download(t, c2), download(t, c1)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("round %d N=%d: [%d] = %g through cuBLASLt, %g through GemmEx", round, N, i, got[i], want[i])
				}
			}
			if n := dev.LtPlans(); n > 2 {
				t.Fatalf("%d plans held, bound 2", n)
			}
			peak = max(peak, lt.Live())
			for _, b := range []*cuda.Buffer{x, c1, c2} {
				if err := b.Free(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// A handle, and per plan a descriptor and three layouts.
	if peak > 1+2*4 {
		t.Errorf("%d cuBLASLt objects live at the peak, want at most 9", peak)
	}
	if h := dev.LtHeuristicCalls(); h != 10 {
		t.Errorf("%d heuristic calls for 10 products of 5 shapes cycling past a bound of 2, want 10", h)
	}
	if err := w.Free(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if n := lt.Live(); n != 0 {
		t.Errorf("%d cuBLASLt objects left after Close", n)
	}
}
