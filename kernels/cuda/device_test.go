package cuda_test

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// TestOpenNamesWhatIsMissing: Open through the real loader says which of
// driver library, cuBLAS library and device is missing, and opens the fake
// device when nothing is.
func TestOpenNamesWhatIsMissing(t *testing.T) {
	libs := fakeLibs(t)
	nowhere := filepath.Join(t.TempDir(), "absent.so")
	setDevices, _ := fakeHooks(t, libs.Driver)
	defer setDevices(-1)

	_, err := cuda.Open(cuda.Options{DriverLib: nowhere, BLASLib: libs.BLAS})
	asMissing(t, err, "CUDA driver library")
	_, err = cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: nowhere})
	asMissing(t, err, "cuBLAS library")

	setDevices(0)
	_, err = cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS})
	m := asMissing(t, err, "CUDA device")
	if want := "CUDA backend unavailable: no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start %q", err, want)
	}
	if m.Err == nil {
		t.Error("the driver's error is not kept")
	}
	setDevices(1)
	_, err = cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS, Ordinal: 1})
	asMissing(t, err, "CUDA device")
	if !strings.Contains(err.Error(), "device 1 asked for, the driver sees 1") {
		t.Errorf("message %q does not say which device", err)
	}

	dev, err := cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dev.String(), "cuda:0 (Fake CUDA Device 0, driver 13.0, cuBLAS "+libs.BLAS+", compute 9.0)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestMatmulThroughLoader runs Device.Matmul and MatmulBatched end to end
// through the real loader and purego on the C stand-ins, against ref; the
// fake libcuda ends with no allocation.
func TestMatmulThroughLoader(t *testing.T) {
	libs := fakeLibs(t)
	_, live := fakeHooks(t, libs.Driver)
	dev, err := cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(28, 3))
	const batch, M, N, K = 2, 5, 3, 7
	a, b := randn(r, batch*K*M), randn(r, batch*N*K) // stored transposed
	c := randn(r, batch*M*N)
	want := append([]float32(nil), c...)
	ref.New().MatmulBatched(want, a, b, batch, M, N, K, true, true, 0.25)
	da, db, dc := upload(t, dev, a), upload(t, dev, b), upload(t, dev, c)
	if err := dev.MatmulBatched(dc, da, db, batch, M, N, K, true, true, 0.25); err != nil {
		t.Fatal(err)
	}
	near(t, "MatmulBatched", download(t, dc), want, kerneltest.F32Tol)
	ref.New().Matmul(want[:M*N], a[:K*M], b[:N*K], M, N, K, true, true, 0)
	if err := dev.Matmul(dc, da, db, M, N, K, true, true, 0); err != nil {
		t.Fatal(err)
	}
	near(t, "Matmul", download(t, dc)[:M*N], want[:M*N], kerneltest.F32Tol)
	if got := live(); got != 3 {
		t.Errorf("fake libcuda has %d allocations, want 3", got)
	}
	if err := dev.Close(); err == nil || !strings.Contains(err.Error(), "3 buffers") {
		t.Errorf("Close with 3 buffers left: %v", err)
	}
	if got := live(); got != 0 {
		t.Errorf("after Close fake libcuda has %d allocations", got)
	}
}

// TestOpenStubDriver: the CUDA toolkit's link-time stub of libcuda (what
// the soname libcuda.so finds on a machine with the toolkit and no
// driver) answers cuInit with CUDA_ERROR_STUB_LIBRARY and names no error
// code; Open says the driver library is missing, names the library it
// loaded and the variable to set, and names the code itself (it said
// "CUDA backend: cuInit: error 34").
func TestOpenStubDriver(t *testing.T) {
	libs := fakeLibs(t)
	h, err := purego.Dlopen(libs.Driver, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	var setStub func(int32)
	purego.RegisterLibFunc(&setStub, h, "hone_fake_cuda_set_stub")
	setStub(1)
	defer setStub(0)
	_, err = cuda.Open(cuda.Options{DriverLib: libs.Driver, BLASLib: libs.BLAS})
	m := asMissing(t, err, "CUDA driver library")
	if !slices.Equal(m.Tried, []string{libs.Driver}) {
		t.Errorf("tried %q, want the stub's path", m.Tried)
	}
	for _, want := range []string{"CUDA backend unavailable: no CUDA driver library", "cuInit: CUDA_ERROR_STUB_LIBRARY", "stub", "HONE_LIBCUDA"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
}
